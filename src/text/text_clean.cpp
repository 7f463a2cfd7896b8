#include "text/text_clean.h"

#include <algorithm>
#include <cstdint>
#include <string>

#include "core/error.h"

namespace vidax::text {
namespace {

struct TextTableEntry {
  const char* key;
  const char* value;  // UTF-8
};
struct CodepointMapEntry {
  char32_t cp;
  const char* value;  // UTF-8
};
#include "text/text_tables.inc"

// Windows-1252 for the C1 range 0x80..0x9F, as Python's html module
// (_invalid_charrefs) and ftfy's sloppy-windows-1252 decode it: the five
// undefined bytes stay the same code point.
constexpr char32_t kCp1252C1[32] = {
    0x20AC, 0x81,   0x201A, 0x0192, 0x201E, 0x2026, 0x2020, 0x2021, 0x02C6, 0x2030, 0x0160,
    0x2039, 0x0152, 0x8D,   0x017D, 0x8F,   0x90,   0x2018, 0x2019, 0x201C, 0x201D, 0x2022,
    0x2013, 0x2014, 0x02DC, 0x2122, 0x0161, 0x203A, 0x0153, 0x9D,   0x017E, 0x0178};

// ftfy.chardata.LIGATURES (Latin ligatures and legacy digraphs only).
constexpr CodepointMapEntry kFtfyLigatures[] = {
    {0x0132, "IJ"}, {0x0133, "ij"}, {0x0149, "\xCA\xBCn"}, {0x01C4, "D\xC5\xBD"},
    {0x01C5, "D\xC5\xBE"}, {0x01C6, "d\xC5\xBE"}, {0x01C7, "LJ"}, {0x01C8, "Lj"},
    {0x01C9, "lj"}, {0x01CA, "NJ"}, {0x01CB, "Nj"}, {0x01CC, "nj"}, {0x01F1, "DZ"},
    {0x01F2, "Dz"}, {0x01F3, "dz"}, {0xFB00, "ff"}, {0xFB01, "fi"}, {0xFB02, "fl"},
    {0xFB03, "ffi"}, {0xFB04, "ffl"}, {0xFB05, "\xC5\xBFt"}, {0xFB06, "st"}};

template <size_t N>
const char* find_text(const TextTableEntry (&table)[N], std::string_view key) {
  auto it = std::lower_bound(std::begin(table), std::end(table), key,
                             [](const TextTableEntry& e, std::string_view k) { return std::string_view(e.key) < k; });
  return (it != std::end(table) && std::string_view(it->key) == key) ? it->value : nullptr;
}

template <size_t N>
const char* find_cp(const CodepointMapEntry (&table)[N], char32_t cp) {
  for (const auto& e : table)  // small tables, or sorted: a scan is fine for prompts
    if (e.cp == cp) return e.value;
  return nullptr;
}

void append_utf8(std::u32string& out, const char* utf8) { out += utf8_to_u32(utf8); }

bool is_ascii_digit(char32_t c) { return c >= '0' && c <= '9'; }
bool is_ascii_hex(char32_t c) { return is_ascii_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_ascii_alnum(char32_t c) { return is_ascii_digit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_ascii_alpha(char32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }

// html._invalid_codepoints: references to these decode to nothing.
bool is_invalid_codepoint(uint64_t n) {
  return (n >= 0x1 && n <= 0x8) || n == 0xB || (n >= 0xE && n <= 0x1F) || (n >= 0x7F && n <= 0x9F) ||
         (n >= 0xFDD0 && n <= 0xFDEF) || ((n & 0xFFFE) == 0xFFFE && n <= 0x10FFFF);
}

// html._replace_charref for a numeric reference (digits already parsed;
// saturates huge values, which Python maps to U+FFFD like any > 0x10FFFF).
std::u32string numeric_charref(uint64_t num) {
  if (num == 0) return U"\uFFFD";
  if (num == 13) return U"\r";
  if (num >= 0x80 && num <= 0x9F) return std::u32string(1, kCp1252C1[num - 0x80]);
  if ((num >= 0xD800 && num <= 0xDFFF) || num > 0x10FFFF) return U"\uFFFD";
  if (is_invalid_codepoint(num)) return U"";
  return std::u32string(1, static_cast<char32_t>(num));
}

uint64_t parse_saturating(std::u32string_view digits, int base) {
  uint64_t v = 0;
  for (char32_t c : digits) {
    uint64_t d = is_ascii_digit(c) ? c - '0' : (c | 0x20) - 'a' + 10;
    v = v * base + d;
    if (v > 0x10FFFF) return 0x110000;  // anything above the Unicode range behaves the same
  }
  return v;
}

// ---- ftfy fixes (one pass each) ---------------------------------------------------

std::u32string ftfy_unescape_html(std::u32string_view t) {
  // HTML_ENTITY_RE = &#?[0-9A-Za-z]{1,24};
  std::u32string out;
  size_t i = 0;
  while (i < t.size()) {
    if (t[i] != U'&') {
      out += t[i++];
      continue;
    }
    size_t j = i + 1;
    if (j < t.size() && t[j] == U'#') ++j;
    size_t k = j;
    while (k < t.size() && is_ascii_alnum(t[k])) ++k;
    size_t run = k - j;
    if (run < 1 || run > 24 || k >= t.size() || t[k] != U';') {
      out += t[i++];
      continue;
    }
    std::u32string_view match = t.substr(i, k + 1 - i);
    std::string name = u32_to_utf8(match.substr(1));  // without '&', with ';'
    if (const char* v = find_text(kHtml5Entities, name)) {
      append_utf8(out, v);
    } else if (const char* u = find_text(kFtfyUpperEntities, name)) {
      append_utf8(out, u);
    } else if (match.size() > 1 && match[1] == U'#') {
      std::u32string unescaped = html_unescape(match);
      // "If html.unescape only decoded part of the string ... the semicolon should be consumed."
      if (unescaped.find(U';') != std::u32string::npos) out += match;
      else out += unescaped;
    } else {
      out += match;
    }
    i = k + 1;
  }
  return out;
}

std::u32string fix_c1_controls(std::u32string_view t) {
  std::u32string out(t);
  for (char32_t& c : out)
    if (c >= 0x80 && c <= 0x9F) c = kCp1252C1[c - 0x80];
  return out;
}

std::u32string translate(std::u32string_view t, const char* (*lookup)(char32_t)) {
  std::u32string out;
  out.reserve(t.size());
  for (char32_t c : t) {
    if (const char* v = lookup(c)) append_utf8(out, v);
    else out += c;
  }
  return out;
}

std::u32string fix_latin_ligatures(std::u32string_view t) {
  return translate(t, [](char32_t c) { return find_cp(kFtfyLigatures, c); });
}

std::u32string fix_character_width(std::u32string_view t) {
  return translate(t, [](char32_t c) -> const char* {
    if (c != 0x3000 && (c < 0xFF01 || c > 0xFFEF)) return nullptr;
    return find_cp(kFtfyWidthMap, c);
  });
}

std::u32string uncurl_quotes(std::u32string_view t) {
  std::u32string out(t);
  for (char32_t& c : out) {
    if (c == 0x02BC || (c >= 0x2018 && c <= 0x201B)) c = U'\'';
    else if (c >= 0x201C && c <= 0x201F) c = U'"';
  }
  return out;
}

std::u32string fix_line_breaks(std::u32string_view t) {
  std::u32string out;
  for (size_t i = 0; i < t.size(); ++i) {
    char32_t c = t[i];
    if (c == U'\r' && i + 1 < t.size() && t[i + 1] == U'\n') continue;  // \r\n -> \n
    if (c == U'\r' || c == 0x2028 || c == 0x2029 || c == 0x85) c = U'\n';
    out += c;
  }
  return out;
}

std::u32string remove_terminal_escapes(std::u32string_view t) {
  // ANSI_RE = \033\[((?:\d|;)*)([a-zA-Z])
  std::u32string out;
  size_t i = 0;
  while (i < t.size()) {
    if (t[i] == 0x1B && i + 1 < t.size() && t[i + 1] == U'[') {
      size_t k = i + 2;
      while (k < t.size() && (is_ascii_digit(t[k]) || t[k] == U';')) ++k;
      if (k < t.size() && is_ascii_alpha(t[k])) {
        i = k + 1;
        continue;
      }
    }
    out += t[i++];
  }
  return out;
}

bool is_ftfy_control_char(char32_t c) {
  return c <= 0x08 || c == 0x0B || (c >= 0x0E && c <= 0x1F) || c == 0x7F || (c >= 0x206A && c <= 0x206F) ||
         c == 0xFEFF || (c >= 0xFFF9 && c <= 0xFFFC);
}

std::u32string remove_control_chars(std::u32string_view t) {
  std::u32string out;
  for (char32_t c : t)
    if (!is_ftfy_control_char(c)) out += c;
  return out;
}

// ftfy.fix_and_explain for one segment, restricted to the reproduced fixes.
std::u32string fix_segment(std::u32string text, bool unescape) {
  while (true) {
    std::u32string orig = text;
    if (unescape) text = ftfy_unescape_html(text);
    // (fix_encoding: mojibake repair, not reproduced)
    text = fix_c1_controls(text);
    text = fix_latin_ligatures(text);
    text = fix_character_width(text);
    text = uncurl_quotes(text);
    text = fix_line_breaks(text);
    // (fix_surrogates: UTF-8 input cannot hold surrogates; utf8_to_u32 rejects them)
    text = remove_terminal_escapes(text);
    text = remove_control_chars(text);
    // (NFC normalization: not reproduced, see docs/models/text.md)
    if (text == orig) return text;
  }
}

}  // namespace

std::u32string utf8_to_u32(std::string_view s) {
  std::u32string out;
  out.reserve(s.size());
  size_t i = 0;
  auto bad = [&](const char* why) {
    throw Error(msg() << "invalid UTF-8 in prompt at byte " << i << ": " << why);
  };
  while (i < s.size()) {
    auto b0 = static_cast<unsigned char>(s[i]);
    int len;
    char32_t cp;
    if (b0 < 0x80) { len = 1; cp = b0; }
    else if ((b0 & 0xE0) == 0xC0) { len = 2; cp = b0 & 0x1F; }
    else if ((b0 & 0xF0) == 0xE0) { len = 3; cp = b0 & 0x0F; }
    else if ((b0 & 0xF8) == 0xF0) { len = 4; cp = b0 & 0x07; }
    else bad("unexpected byte");
    if (i + len > s.size()) bad("truncated sequence");
    for (int k = 1; k < len; ++k) {
      auto b = static_cast<unsigned char>(s[i + k]);
      if ((b & 0xC0) != 0x80) bad("bad continuation byte");
      cp = (cp << 6) | (b & 0x3F);
    }
    static constexpr char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < kMin[len]) bad("overlong encoding");
    if (cp > 0x10FFFF) bad("code point above U+10FFFF");
    if (cp >= 0xD800 && cp <= 0xDFFF) bad("encoded surrogate");
    out += cp;
    i += len;
  }
  return out;
}

std::string u32_to_utf8(std::u32string_view t) {
  std::string out;
  out.reserve(t.size());
  for (char32_t c : t) {
    if (c < 0x80) {
      out += static_cast<char>(c);
    } else if (c < 0x800) {
      out += static_cast<char>(0xC0 | (c >> 6));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else if (c < 0x10000) {
      out += static_cast<char>(0xE0 | (c >> 12));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    } else {
      out += static_cast<char>(0xF0 | (c >> 18));
      out += static_cast<char>(0x80 | ((c >> 12) & 0x3F));
      out += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
      out += static_cast<char>(0x80 | (c & 0x3F));
    }
  }
  return out;
}

std::u32string html_unescape(std::u32string_view t) {
  // _charref = &(#[0-9]+;?|#[xX][0-9a-fA-F]+;?|[^\t\n\f <&#;]{1,32};?)
  std::u32string out;
  size_t i = 0;
  while (i < t.size()) {
    if (t[i] != U'&') {
      out += t[i++];
      continue;
    }
    size_t j = i + 1;
    if (j < t.size() && t[j] == U'#') {
      size_t k = j + 1;
      int base = 10;
      if (k < t.size() && is_ascii_digit(t[k])) {
        while (k < t.size() && is_ascii_digit(t[k])) ++k;
      } else if (k + 1 < t.size() && (t[k] == U'x' || t[k] == U'X') && is_ascii_hex(t[k + 1])) {
        base = 16;
        ++k;
        while (k < t.size() && is_ascii_hex(t[k])) ++k;
      } else {
        out += t[i++];  // "&#" not followed by a number: left as is
        continue;
      }
      size_t digits_begin = base == 16 ? j + 2 : j + 1;
      out += numeric_charref(parse_saturating(t.substr(digits_begin, k - digits_begin), base));
      if (k < t.size() && t[k] == U';') ++k;
      i = k;
      continue;
    }
    auto is_name_char = [](char32_t c) {
      return c != U'\t' && c != U'\n' && c != U'\f' && c != U' ' && c != U'<' && c != U'&' && c != U'#' &&
             c != U';';
    };
    size_t k = j;
    while (k < t.size() && k - j < 32 && is_name_char(t[k])) ++k;
    if (k == j) {
      out += t[i++];
      continue;
    }
    if (k < t.size() && t[k] == U';') ++k;
    std::u32string_view s = t.substr(j, k - j);  // the reference's group(1)
    if (const char* v = find_text(kHtml5Entities, u32_to_utf8(s))) {
      append_utf8(out, v);
    } else {
      bool found = false;
      for (size_t x = s.size() - 1; x > 1; --x) {  // longest legacy prefix, as the standard says
        if (const char* v = find_text(kHtml5Entities, u32_to_utf8(s.substr(0, x)))) {
          append_utf8(out, v);
          out += s.substr(x);
          found = true;
          break;
        }
      }
      if (!found) {
        out += U'&';
        out += s;
      }
    }
    i = k;
  }
  return out;
}

std::u32string ftfy_fix_text_subset(std::u32string_view text) {
  std::u32string out;
  bool unescape = true;  // unescape_html="auto": switched off for good by the first line holding '<'
  size_t pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find(U'\n', pos);
    size_t end = nl == std::u32string_view::npos ? text.size() : nl + 1;
    std::u32string_view segment = text.substr(pos, end - pos);
    if (unescape && segment.find(U'<') != std::u32string_view::npos) unescape = false;
    out += fix_segment(std::u32string(segment), unescape);
    pos = end;
  }
  return out;
}

bool is_python_space(char32_t c) {
  return (c >= 0x09 && c <= 0x0D) || (c >= 0x1C && c <= 0x20) || c == 0x85 || c == 0xA0 || c == 0x1680 ||
         (c >= 0x2000 && c <= 0x200A) || c == 0x2028 || c == 0x2029 || c == 0x202F || c == 0x205F ||
         c == 0x3000;
}

bool is_regex_space(char32_t c) { return is_python_space(c) && !(c >= 0x1C && c <= 0x1F); }

std::u32string python_strip(std::u32string_view t) {
  size_t b = 0, e = t.size();
  while (b < e && is_python_space(t[b])) ++b;
  while (e > b && is_python_space(t[e - 1])) --e;
  return std::u32string(t.substr(b, e - b));
}

std::u32string whitespace_clean(std::u32string_view t) {
  std::u32string out;
  out.reserve(t.size());
  for (size_t i = 0; i < t.size();) {
    if (is_regex_space(t[i])) {
      while (i < t.size() && is_regex_space(t[i])) ++i;
      out += U' ';
    } else {
      out += t[i++];
    }
  }
  return python_strip(out);
}

std::string clean_prompt_whitespace(std::string_view utf8) {
  std::u32string t = ftfy_fix_text_subset(utf8_to_u32(utf8));
  t = html_unescape(html_unescape(t));
  return u32_to_utf8(whitespace_clean(python_strip(t)));
}

}  // namespace vidax::text
