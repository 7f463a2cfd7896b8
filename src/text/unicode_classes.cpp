#include "text/unicode_classes.h"

#include <algorithm>
#include <iterator>
#include <utility>

namespace vidax::text {
namespace {

struct CodepointRange {
  char32_t first, last;
};
struct CodepointSequence {
  char32_t cp;
  unsigned offset, length;  // into the table's data array
};
struct CodepointValue {
  char32_t cp;
  unsigned value;
};
struct CompositionPair {
  char32_t first, second, composite;
};

#include "text/unicode_tables.inc"

template <size_t N>
bool in_ranges(const CodepointRange (&table)[N], char32_t c) {
  const auto* it = std::upper_bound(std::begin(table), std::end(table), c,
                                    [](char32_t v, const CodepointRange& r) { return v < r.first; });
  return it != std::begin(table) && c <= std::prev(it)->last;
}

template <class T, size_t N>
const T* find_cp(const T (&table)[N], char32_t c) {
  const T* it = std::lower_bound(std::begin(table), std::end(table), c, [](const T& e, char32_t v) { return e.cp < v; });
  return it != std::end(table) && it->cp == c ? it : nullptr;
}

unsigned combining_class(char32_t c) {
  const CodepointValue* e = find_cp(kCombiningClass, c);
  return e ? e->value : 0;
}

// Hangul syllables (Unicode 3.12): S = SBase + (L * VCount + V) * TCount + T.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

void decompose(char32_t c, std::u32string& out) {
  if (c >= kSBase && c < kSBase + kSCount) {
    const char32_t s = c - kSBase;
    out += kLBase + s / kNCount;
    out += kVBase + (s % kNCount) / kTCount;
    if (s % kTCount != 0) out += kTBase + s % kTCount;
    return;
  }
  if (const CodepointSequence* e = find_cp(kCanonicalDecomposition, c))
    out.append(kDecompositionData + e->offset, e->length);
  else
    out += c;
}

// The primary composite of (a, b), or 0.
char32_t compose(char32_t a, char32_t b) {
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const CompositionPair* it = std::lower_bound(
      std::begin(kCompositionPairs), std::end(kCompositionPairs), std::make_pair(a, b),
      [](const CompositionPair& p, const std::pair<char32_t, char32_t>& v) {
        return p.first != v.first ? p.first < v.first : p.second < v.second;
      });
  return it != std::end(kCompositionPairs) && it->first == a && it->second == b ? it->composite : 0;
}

}  // namespace

std::u32string nfc(std::u32string_view text) {
  std::u32string d;
  d.reserve(text.size());
  for (char32_t c : text) decompose(c, d);
  // Canonical ordering: marks (class > 0) sorted stably by class between starters.
  for (size_t i = 1; i < d.size(); ++i) {
    const unsigned ci = combining_class(d[i]);
    if (ci == 0) continue;
    for (size_t j = i; j > 0 && combining_class(d[j - 1]) > ci; --j) std::swap(d[j - 1], d[j]);
  }
  // Canonical composition: each mark or starter joins the last starter unless blocked.
  std::u32string out;
  out.reserve(d.size());
  size_t starter = std::u32string::npos;
  unsigned last_class = 0;
  for (char32_t c : d) {
    const unsigned cc = combining_class(c);
    if (starter != std::u32string::npos && (last_class < cc || (last_class == 0 && out.size() == starter + 1))) {
      if (const char32_t comp = compose(out[starter], c)) {
        out[starter] = comp;
        continue;
      }
    }
    if (cc == 0) starter = out.size();
    last_class = cc;
    out += c;
  }
  return out;
}

std::u32string lowercase(std::u32string_view text) {
  std::u32string out;
  out.reserve(text.size());
  for (char32_t c : text) {
    if (c < 0x80) {
      out += (c >= U'A' && c <= U'Z') ? c + 32 : c;
    } else if (const CodepointSequence* e = find_cp(kLowercase, c)) {
      out.append(kLowercaseData + e->offset, e->length);
    } else {
      out += c;
    }
  }
  return out;
}

bool is_unicode_letter(char32_t c) { return c >= 0x80 ? in_ranges(kUnicodeLetters, c) : ((c | 0x20) >= 'a' && (c | 0x20) <= 'z'); }
bool is_unicode_number(char32_t c) { return c >= 0x80 ? in_ranges(kUnicodeNumbers, c) : (c >= '0' && c <= '9'); }

// PropList.txt's White_Space (stable since Unicode 6.3).
bool is_unicode_white_space(char32_t c) {
  return (c >= 0x9 && c <= 0xD) || c == 0x20 || c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) ||
         c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

}  // namespace vidax::text
