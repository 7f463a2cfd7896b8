// The Unicode classes of the byte-level BPE pre-tokenizer's regexes (tokenizers' Oniguruma):
// \p{L} (letters), \p{N} (numbers) from src/text/unicode_tables.inc (generated from Python's
// unicodedata by tools/golden/unicode_tables.py), and \s (the White_Space property).
#pragma once

namespace vidax::text {

bool is_unicode_letter(char32_t c);
bool is_unicode_number(char32_t c);
bool is_unicode_white_space(char32_t c);

}  // namespace vidax::text
