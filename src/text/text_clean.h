// Prompt cleaning as the Wan reference does it before tokenizing
// (wan/modules/tokenizers.py, HuggingfaceTokenizer with clean='whitespace'):
//
//   whitespace_clean(basic_clean(text))
//   basic_clean      = ftfy.fix_text -> html.unescape twice -> str.strip
//   whitespace_clean = regex.sub(r'\s+', ' ') -> str.strip
//
// html.unescape, strip and the whitespace collapse are reproduced exactly
// (Python's semantics, Unicode code points). Of ftfy.fix_text only the
// deterministic table-driven fixes are reproduced; mojibake repair and NFC
// normalization are not (docs/models/text.md lists what and why).
#pragma once
#include <string>
#include <string_view>

namespace vidax::text {

// UTF-8 <-> code points. decode throws vidax::Error on malformed UTF-8
// (Python would never see such input: it receives str).
std::u32string utf8_to_u32(std::string_view utf8);
std::string u32_to_utf8(std::u32string_view text);

// Python's html.unescape (html5 named references incl. the ';'-less legacy
// ones with longest-prefix matching, numeric references with the
// invalid-charref table).
std::u32string html_unescape(std::u32string_view text);

// The subset of ftfy.fix_text (ftfy 6.3 defaults) reproduced here: per line,
// until nothing changes: ftfy's own unescape_html (';'-terminated entities and
// all-caps variants; disabled from the first line that contains '<' on), then
// fix_c1_controls, fix_latin_ligatures, fix_character_width, uncurl_quotes,
// fix_line_breaks, remove_terminal_escapes, remove_control_chars.
std::u32string ftfy_fix_text_subset(std::u32string_view text);

// Python str.isspace() / str.strip() and the `regex` module's \s.
bool is_python_space(char32_t c);
bool is_regex_space(char32_t c);
std::u32string python_strip(std::u32string_view text);
// regex.sub(r'\s+', ' ', text).strip()
std::u32string whitespace_clean(std::u32string_view text);

// whitespace_clean(basic_clean(text)): the reference's clean='whitespace'.
std::string clean_prompt_whitespace(std::string_view utf8);

}  // namespace vidax::text
