// The Unicode classes of the byte-level BPE pre-tokenizer's regexes (tokenizers' Oniguruma):
// \p{L} (letters), \p{N} (numbers) from src/text/unicode_tables.inc (generated from Python's
// unicodedata by tools/golden/unicode_tables.py), \s (the White_Space property); NFC and
// per-code-point lowercasing (tokenizers' NFC and Lowercase normalizers) from the same tables.
#pragma once
#include <string>
#include <string_view>

namespace vidax::text {

bool is_unicode_letter(char32_t c);
bool is_unicode_number(char32_t c);
bool is_unicode_white_space(char32_t c);

// Unicode normalization form C (canonical decomposition, canonical ordering, canonical
// composition; Hangul algorithmically) as tokenizers' NFC normalizer computes it: its Unicode
// data is older than Python's, and code points it does not know stay as they are (not decomposed,
// class 0); unicode_tables.inc is generated from it (tools/golden/unicode_tables.py).
std::u32string nfc(std::u32string_view text);
// Each code point replaced by its lowercase mapping (chr(c).lower(): full mappings such as
// U+0130 -> i + U+0307; no final-sigma context, as tokenizers' Lowercase).
std::u32string lowercase(std::u32string_view text);

}  // namespace vidax::text
