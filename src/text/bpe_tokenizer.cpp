#include "text/bpe_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/text_file.h"
#include "text/bpe_merge.h"
#include "text/text_clean.h"
#include "text/tokenized_batch.h"
#include "text/tokenizer_json.h"
#include "text/unicode_classes.h"

namespace vidax::text {

using nlohmann::json;

const char* const kLlama3SplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";
const char* const kQwen2SplitPattern =
    "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|"
    "\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

// The Split regexes this tokenizer reads, by the one place they differ: the digit run
// (Llama-3: \p{N}{1,3}; Qwen2: \p{N}, one digit a piece).
const std::vector<SplitPretokenizer>& split_pretokenizers() {
  static const std::vector<SplitPretokenizer> table = {
      {"llama3", kLlama3SplitPattern, 3},
      {"qwen2", kQwen2SplitPattern, 1},
  };
  return table;
}

namespace {

bool is_nl(char32_t c) { return c == U'\r' || c == U'\n'; }
bool is_other(char32_t c) { return !is_unicode_white_space(c) && !is_unicode_letter(c) && !is_unicode_number(c); }
// (?i:) on the contraction letters: ASCII case, and U+017F (long s) folds to s.
char32_t fold(char32_t c) {
  if (c >= U'A' && c <= U'Z') return c + 32;
  return c == 0x17F ? U's' : c;
}

// The length of the pattern's match at i (leftmost-first alternation, each alternative greedy
// with backtracking); max_digits: the \p{N} alternative's bound. Every character starts a match of
// some alternative, so > 0.
size_t split_match(std::u32string_view t, size_t i, size_t max_digits) {
  const size_t n = t.size();
  if (t[i] == U'\'' && i + 1 < n) {  // (?i:'s|'t|'re|'ve|'m|'ll|'d)
    const char32_t a = fold(t[i + 1]);
    if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
    if (i + 2 < n) {
      const char32_t b = fold(t[i + 2]);
      if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return 3;
    }
  }
  size_t j = i;  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (!is_nl(t[j]) && !is_unicode_letter(t[j]) && !is_unicode_number(t[j]) && j + 1 < n &&
      is_unicode_letter(t[j + 1]))
    ++j;
  if (is_unicode_letter(t[j])) {
    while (j < n && is_unicode_letter(t[j])) ++j;
    return j - i;
  }
  if (is_unicode_number(t[i])) {  // \p{N}{1,max_digits}
    j = i;
    while (j < n && j - i < max_digits && is_unicode_number(t[j])) ++j;
    return j - i;
  }
  j = i;  // ' ?[^\s\p{L}\p{N}]+[\r\n]*'
  if (t[j] == U' ' && j + 1 < n && is_other(t[j + 1])) ++j;
  if (is_other(t[j])) {
    while (j < n && is_other(t[j])) ++j;
    while (j < n && is_nl(t[j])) ++j;
    return j - i;
  }
  // t[i] is white space: its run is [i, k).
  size_t k = i;
  while (k < n && is_unicode_white_space(t[k])) ++k;
  for (size_t p = k; p > i; --p)  // \s*[\r\n]+ : up to the run's last line break
    if (is_nl(t[p - 1])) return p - i;
  if (k == n) return k - i;          // \s+(?!\S) at the end of the text
  if (k - 1 > i) return k - 1 - i;   // \s+(?!\S): all but the last, which precedes a non-space
  return k - i;                      // \s+
}

std::string read_file(const std::string& path) { return io::read_text_file(path, "BPE tokenizer"); }

}  // namespace

// GPT-2's bytes_to_unicode: printable bytes stand for themselves, the others for U+0100 onwards.
const std::vector<std::string>& gpt2_byte_alphabet() {
  static const std::vector<std::string> table = [] {
    std::vector<std::string> t(256);
    char32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      t[b] = u32_to_utf8(std::u32string(1, printable ? static_cast<char32_t>(b) : next++));
    }
    return t;
  }();
  return table;
}

std::vector<std::u32string> split_pretokenize(const SplitPretokenizer& pre, std::u32string_view text) {
  std::vector<std::u32string> out;
  for (size_t i = 0; i < text.size();) {
    const size_t len = split_match(text, i, static_cast<size_t>(pre.max_digits));
    out.emplace_back(text.substr(i, len));
    i += len;
  }
  return out;
}

std::vector<std::u32string> llama3_pretokenize(std::u32string_view text) {
  return split_pretokenize(split_pretokenizers()[0], text);
}
std::vector<std::u32string> qwen2_pretokenize(std::u32string_view text) {
  return split_pretokenize(split_pretokenizers()[1], text);
}

ByteLevelBpeTokenizer ByteLevelBpeTokenizer::from_file(const std::string& path, const std::string& pad_token) {
  json j;
  try {
    j = json::parse(read_file(path));
  } catch (const json::exception& e) {
    throw Error(msg() << "BPE tokenizer: " << path << " is not JSON: " << e.what());
  }
  VIDAX_CHECK(j.is_object() && j.contains("model"), path << ": not a tokenizers tokenizer.json (no \"model\")");
  ByteLevelBpeTokenizer t;
  try {
    // No normalizer (Llama-3) or NFC (Qwen2).
    if (j.contains("normalizer") && !j["normalizer"].is_null()) {
      VIDAX_CHECK(json_field_str(j["normalizer"], "type") == "NFC",
                  path << ": normalizer " << j["normalizer"].dump() << " is not supported (none, or NFC as Qwen2's)");
      t.nfc_ = true;
    }
    // Split(one of the table's regexes, Isolated) then ByteLevel without its own regex.
    const json& pre = j.at("pre_tokenizer");
    const auto split_kind = [&]() -> const SplitPretokenizer* {
      if (json_field_str(pre, "type") != "Sequence" || pre.at("pretokenizers").size() != 2) return nullptr;
      const json& split = pre["pretokenizers"][0];
      const json& bytes = pre["pretokenizers"][1];
      if (!(json_field_str(split, "type") == "Split" && split.contains("pattern") &&
            json_field_str(split, "behavior") == "Isolated" && !split.value("invert", false) &&
            json_field_str(bytes, "type") == "ByteLevel" && !bytes.value("add_prefix_space", false) &&
            !bytes.value("use_regex", true)))
        return nullptr;
      for (const SplitPretokenizer& k : split_pretokenizers())
        if (json_field_str(split["pattern"], "Regex") == k.pattern) return &k;
      return nullptr;
    }();
    VIDAX_CHECK(split_kind, path << ": pre_tokenizer " << pre.dump()
                                 << " is not supported (Llama-3's or Qwen2's: Split on its regex, Isolated, then "
                                    "ByteLevel with add_prefix_space and use_regex false)");
    t.pre_ = split_kind;
    const json& model = j.at("model");
    VIDAX_CHECK(json_field_str(model, "type") == "BPE", path << ": model type '" << json_field_str(model, "type")
                                                        << "' (a BPE tokenizer.json expected)");
    VIDAX_CHECK(!model.contains("dropout") || model["dropout"].is_null(), path << ": BPE dropout is not supported");
    VIDAX_CHECK(!model.value("byte_fallback", false), path << ": byte_fallback is not supported (byte-level BPE)");
    VIDAX_CHECK(json_field_str(model, "continuing_subword_prefix").empty() && json_field_str(model, "end_of_word_suffix").empty(),
                path << ": continuing_subword_prefix / end_of_word_suffix are not supported");
    t.ignore_merges_ = model.value("ignore_merges", false);
    for (const auto& [tok, id] : model.at("vocab").items()) t.vocab_.emplace(tok, id.get<int64_t>());
    int64_t rank = 0;
    for (const json& m : model.at("merges")) {
      std::string key;
      if (m.is_string()) {
        key = m.get<std::string>();  // "a b"
      } else {
        VIDAX_CHECK(m.is_array() && m.size() == 2, path << ": merge " << m.dump() << " is not a pair");
        key = m[0].get<std::string>() + " " + m[1].get<std::string>();
      }
      t.merge_rank_.insert_or_assign(key, rank++);  // a repeated pair: its last rank, as tokenizers
    }
    int64_t max_id = -1;
    for (const auto& [tok, id] : t.vocab_) max_id = std::max(max_id, id);
    if (auto it = j.find("added_tokens"); it != j.end() && !it->is_null())
      for (const json& a : *it) {
        const std::string content = a.at("content").get<std::string>();
        VIDAX_CHECK(!a.value("lstrip", false) && !a.value("rstrip", false) && !a.value("single_word", false),
                    path << ": added token " << content << " uses lstrip / rstrip / single_word (not supported)");
        const int64_t id = a.at("id").get<int64_t>();
        // tokenizers matches a `normalized` token in the normalized text, the others in the raw
        // text first (AddedVocabulary::extract_and_normalize); its default: normalized = !special.
        const bool normalized = a.value("normalized", !a.value("special", false));
        (normalized ? t.added_normalized_ : t.added_).emplace_back(utf8_to_u32(content), id);
        max_id = std::max(max_id, id);
      }
    for (auto* list : {&t.added_, &t.added_normalized_})
      std::stable_sort(list->begin(), list->end(),
                       [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
    t.vocab_size_ = max_id + 1;
    read_template_post_processor(j.contains("post_processor") ? j["post_processor"] : json(), path, t.prefix_, t.suffix_);
  } catch (const json::exception& e) {
    throw Error(msg() << path << ": unexpected tokenizer.json structure: " << e.what());
  }
  if (!pad_token.empty()) {
    t.pad_id_ = t.token_id(pad_token);
    VIDAX_CHECK(t.pad_id_, path << ": pad token '" << pad_token << "' is not in the vocabulary or the added tokens");
  }
  return t;
}

ByteLevelBpeTokenizer ByteLevelBpeTokenizer::from_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path json_path = fs::path(dir) / "tokenizer.json";
  VIDAX_CHECK(fs::exists(json_path), "BPE tokenizer: " << dir << " has no tokenizer.json");
  std::string pad;
  const fs::path cfg_path = fs::path(dir) / "tokenizer_config.json";
  if (fs::exists(cfg_path)) {
    try {
      const json cfg = json::parse(read_file(cfg_path.string()));
      if (auto it = cfg.find("pad_token"); it != cfg.end() && !it->is_null())
        pad = it->is_string() ? it->get<std::string>() : it->at("content").get<std::string>();
    } catch (const json::exception& e) {
      throw Error(msg() << cfg_path.string() << ": " << e.what());
    }
  }
  return from_file(json_path.string(), pad);
}

std::optional<int64_t> ByteLevelBpeTokenizer::token_id(const std::string& token) const {
  const std::u32string u = utf8_to_u32(token);
  for (const auto* list : {&added_, &added_normalized_})
    for (const auto& [content, id] : *list)
      if (content == u) return id;
  if (auto it = vocab_.find(token); it != vocab_.end()) return it->second;
  return std::nullopt;
}

void ByteLevelBpeTokenizer::bpe(const std::string& piece, std::vector<int64_t>& out) const {
  if (ignore_merges_)
    if (auto it = vocab_.find(piece); it != vocab_.end()) {
      out.push_back(it->second);
      return;
    }
  // The piece's characters (each a UTF-8 sequence of the byte alphabet), merged pair by pair.
  std::vector<std::string> parts = utf8_symbols(piece);
  merge_by_rank(parts, merge_rank_);
  for (const std::string& p : parts) {
    auto it = vocab_.find(p);
    VIDAX_CHECK(it != vocab_.end(), "BPE tokenizer: '" << p << "' is not in the vocabulary (and there is no unk token)");
    out.push_back(it->second);
  }
}

std::vector<int64_t> ByteLevelBpeTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const std::u32string u = utf8_to_u32(text);
  const std::vector<std::string>& alphabet = gpt2_byte_alphabet();
  std::vector<int64_t> ids;
  if (add_special_tokens) ids = prefix_;
  const auto encode_pieces = [&](std::u32string_view span) {
    for (const std::u32string& piece : split_pretokenize(*pre_, span)) {
      std::string mapped;
      for (unsigned char b : u32_to_utf8(piece)) mapped += alphabet[b];
      bpe(mapped, ids);
    }
  };
  // The raw text split at the non-normalized added tokens; each span between them normalized,
  // then split at the normalized ones (longest first, leftmost: tokenizers' LeftmostLongest).
  const auto encode_span = [&](std::u32string_view span) {
    if (!nfc_) return split_at_special_tokens(span, added_normalized_, encode_pieces, ids);
    const std::u32string n = vidax::text::nfc(span);
    split_at_special_tokens(n, added_normalized_, encode_pieces, ids);
  };
  split_at_special_tokens(u, added_, encode_span, ids);
  if (add_special_tokens) ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  return ids;
}

TokenizedBatch ByteLevelBpeTokenizer::encode_batch(const std::vector<std::string>& texts, int64_t max_length) const {
  VIDAX_CHECK(pad_id_, "BPE tokenizer: padding to max_length needs a pad token (tokenizer_config.json's pad_token)");
  const int64_t specials = static_cast<int64_t>(prefix_.size() + suffix_.size());
  VIDAX_CHECK(max_length > specials, "BPE tokenizer: max_length " << max_length << " leaves no room beside the "
                                                                  << specials << " special tokens");
  std::vector<TokenizedPrompt> prompts;
  for (const std::string& text : texts) {
    TokenizedPrompt p;
    p.cleaned = text;
    std::vector<int64_t> body = encode(text, /*add_special_tokens=*/false);
    // truncation=True: the text keeps its first max_length - specials tokens (truncation_side right).
    if (static_cast<int64_t>(body.size()) > max_length - specials) {
      body.resize(static_cast<size_t>(max_length - specials));
      p.truncated = true;
    }
    p.ids = prefix_;
    p.ids.insert(p.ids.end(), body.begin(), body.end());
    p.ids.insert(p.ids.end(), suffix_.begin(), suffix_.end());
    pad_right(p, max_length, *pad_id_);
    prompts.push_back(std::move(p));
  }
  return stack_prompts(std::move(prompts), max_length);
}

}  // namespace vidax::text
