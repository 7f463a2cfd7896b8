#include "text/unicode_classes.h"

#include <algorithm>
#include <iterator>

namespace vidax::text {
namespace {

struct CodepointRange {
  char32_t first, last;
};

#include "text/unicode_tables.inc"

template <size_t N>
bool in_ranges(const CodepointRange (&table)[N], char32_t c) {
  const auto* it = std::upper_bound(std::begin(table), std::end(table), c,
                                    [](char32_t v, const CodepointRange& r) { return v < r.first; });
  return it != std::begin(table) && c <= std::prev(it)->last;
}

}  // namespace

bool is_unicode_letter(char32_t c) { return c >= 0x80 ? in_ranges(kUnicodeLetters, c) : ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }
bool is_unicode_number(char32_t c) { return c >= 0x80 ? in_ranges(kUnicodeNumbers, c) : (c >= '0' && c <= '9'); }

// PropList.txt's White_Space (stable since Unicode 6.3).
bool is_unicode_white_space(char32_t c) {
  return (c >= 0x9 && c <= 0xD) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace vidax::text
