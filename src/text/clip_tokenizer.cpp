#include "text/clip_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <sstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/text_file.h"
#include "text/bpe_merge.h"
#include "text/bpe_tokenizer.h"
#include "text/text_clean.h"
#include "text/tokenized_batch.h"
#include "text/unicode_classes.h"

namespace vidax::text {

using nlohmann::json;

namespace {

std::string read_text(const std::filesystem::path& p) { return io::read_text_file(p.string(), "CLIP tokenizer"); }

bool is_other(char32_t c) { return !is_unicode_white_space(c) && !is_unicode_letter(c) && !is_unicode_number(c); }

bool starts_with(std::u32string_view t, size_t i, std::u32string_view s) { return t.substr(i, s.size()) == s; }

// The length of the CLIP pattern's match at i, or 0 when none starts there (white space).
size_t clip_match(std::u32string_view t, size_t i) {
  for (std::u32string_view s : {std::u32string_view(U"<|startoftext|>"), std::u32string_view(U"<|endoftext|>")})
    if (starts_with(t, i, s)) return s.size();
  if (t[i] == U'\'' && i + 1 < t.size()) {  // 's|'t|'re|'ve|'m|'ll|'d (case-sensitive)
    const char32_t a = t[i + 1];
    if (a == U's' || a == U't' || a == U'm' || a == U'd') return 2;
    if (i + 2 < t.size()) {
      const char32_t b = t[i + 2];
      if ((a == U'r' && b == U'e') || (a == U'v' && b == U'e') || (a == U'l' && b == U'l')) return 3;
    }
  }
  size_t j = i;
  if (is_unicode_letter(t[i])) {
    while (j < t.size() && is_unicode_letter(t[j])) ++j;
    return j - i;
  }
  if (is_unicode_number(t[i])) return 1;
  while (j < t.size() && is_other(t[j])) ++j;
  return j - i;
}

// ByteLevel's own regex (GPT-2's: 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)
// on a piece without white space: it splits only the pieces of the special-token alternatives
// ("<|startoftext|>" -> "<|", "startoftext", "|>").
void gpt2_split(std::u32string_view t, std::vector<std::u32string>& out) {
  for (size_t i = 0; i < t.size();) {
    size_t len = 0;
    if (t[i] == U'\'' && i + 1 < t.size()) {
      const char32_t a = t[i + 1];
      if (a == U's' || a == U't' || a == U'm' || a == U'd') len = 2;
      else if (i + 2 < t.size() && ((a == U'r' && t[i + 2] == U'e') || (a == U'v' && t[i + 2] == U'e') ||
                                    (a == U'l' && t[i + 2] == U'l')))
        len = 3;
    }
    if (len == 0) {
      bool (*same)(char32_t) = is_unicode_letter(t[i]) ? is_unicode_letter : is_unicode_number(t[i]) ? is_unicode_number : is_other;
      size_t j = i;
      while (j < t.size() && same(t[j])) ++j;
      len = std::max<size_t>(1, j - i);
    }
    out.emplace_back(t.substr(i, len));
    i += len;
  }
}

std::string token_name(const json& cfg, const char* key, const char* fallback) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return fallback;
  return it->is_string() ? it->get<std::string>() : it->at("content").get<std::string>();
}

}  // namespace

std::u32string clip_normalize(std::u32string_view text) {
  const std::u32string n = nfc(text);
  std::u32string spaced;
  for (size_t i = 0; i < n.size();) {
    if (is_unicode_white_space(n[i])) {
      while (i < n.size() && is_unicode_white_space(n[i])) ++i;
      spaced += U' ';
    } else {
      spaced += n[i++];
    }
  }
  return lowercase(spaced);
}

std::vector<std::u32string> clip_pretokenize(std::u32string_view text) {
  std::vector<std::u32string> out;
  for (size_t i = 0; i < text.size();) {
    const size_t len = clip_match(text, i);
    if (len == 0) {
      ++i;  // white space: removed
      continue;
    }
    gpt2_split(text.substr(i, len), out);
    i += len;
  }
  return out;
}

ClipBpeTokenizer ClipBpeTokenizer::from_dir(const std::string& dir) {
  namespace fs = std::filesystem;
  const fs::path vocab_path = fs::path(dir) / "vocab.json", merges_path = fs::path(dir) / "merges.txt";
  VIDAX_CHECK(fs::exists(vocab_path) && fs::exists(merges_path),
              "CLIP tokenizer: " << dir << " needs vocab.json and merges.txt");
  ClipBpeTokenizer t;
  json cfg = json::object();
  try {
    const json vocab = json::parse(read_text(vocab_path));
    VIDAX_CHECK(vocab.is_object(), vocab_path.string() << ": not an object of token -> id");
    for (const auto& [tok, id] : vocab.items()) t.vocab_.emplace(tok, id.get<int64_t>());
    if (fs::exists(fs::path(dir) / "tokenizer_config.json")) cfg = json::parse(read_text(fs::path(dir) / "tokenizer_config.json"));
  } catch (const json::exception& e) {
    throw Error(msg() << "CLIP tokenizer: " << dir << ": " << e.what());
  }
  std::istringstream merges(read_text(merges_path));
  int64_t rank = 0;
  for (std::string line; std::getline(merges, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty() || line.rfind("#version", 0) == 0) continue;
    VIDAX_CHECK(std::count(line.begin(), line.end(), ' ') == 1,
                merges_path.string() << ": merge line '" << line << "' is not two symbols");
    t.merge_rank_.insert_or_assign(line, rank++);  // a repeated pair: its last rank, as tokenizers
  }
  const auto id_of = [&](const std::string& name, const char* role) {
    auto it = t.vocab_.find(name);
    VIDAX_CHECK(it != t.vocab_.end(), "CLIP tokenizer: " << dir << ": the " << role << " token '" << name
                                                         << "' is not in vocab.json");
    return it->second;
  };
  // CLIPTokenizer's defaults unless tokenizer_config.json names others.
  const std::string bos = token_name(cfg, "bos_token", "<|startoftext|>"), eos = token_name(cfg, "eos_token", "<|endoftext|>");
  t.bos_ = id_of(bos, "bos");
  t.eos_ = id_of(eos, "eos");
  t.pad_ = id_of(token_name(cfg, "pad_token", "<|endoftext|>"), "pad");
  t.unk_ = id_of(token_name(cfg, "unk_token", "<|endoftext|>"), "unk");
  t.specials_ = {{utf8_to_u32(bos), t.bos_}, {utf8_to_u32(eos), t.eos_}};
  std::stable_sort(t.specials_.begin(), t.specials_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  return t;
}

void ClipBpeTokenizer::bpe(const std::string& piece, std::vector<int64_t>& out) const {
  std::vector<std::string> parts = utf8_symbols(piece);
  if (parts.empty()) return;
  parts.back() += "</w>";  // end_of_word_suffix on the word's last symbol
  merge_by_rank(parts, merge_rank_);
  for (const std::string& p : parts) {
    auto it = vocab_.find(p);
    out.push_back(it == vocab_.end() ? unk_ : it->second);
  }
}

std::vector<int64_t> ClipBpeTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const std::u32string u = utf8_to_u32(text);
  const std::vector<std::string>& alphabet = gpt2_byte_alphabet();
  std::vector<int64_t> ids;
  if (add_special_tokens) ids.push_back(bos_);
  const auto encode_span = [&](std::u32string_view span) {
    for (const std::u32string& piece : clip_pretokenize(clip_normalize(span))) {
      std::string mapped;
      for (unsigned char b : u32_to_utf8(piece)) mapped += alphabet[b];
      bpe(mapped, ids);
    }
  };
  split_at_special_tokens(u, specials_, encode_span, ids);  // longest first
  if (add_special_tokens) ids.push_back(eos_);
  return ids;
}

TokenizedBatch ClipBpeTokenizer::encode_batch(const std::vector<std::string>& texts, int64_t max_length) const {
  VIDAX_CHECK(max_length > 2, "CLIP tokenizer: max_length " << max_length << " leaves no room beside the 2 special tokens");
  std::vector<TokenizedPrompt> prompts;
  for (const std::string& text : texts) {
    TokenizedPrompt p;
    p.cleaned = u32_to_utf8(clip_normalize(utf8_to_u32(text)));
    std::vector<int64_t> body = encode(text, /*add_special_tokens=*/false);
    if (static_cast<int64_t>(body.size()) > max_length - 2) {  // truncation=True keeps the start
      body.resize(static_cast<size_t>(max_length - 2));
      p.truncated = true;
    }
    p.ids.push_back(bos_);
    p.ids.insert(p.ids.end(), body.begin(), body.end());
    p.ids.push_back(eos_);
    pad_right(p, max_length, pad_);
    prompts.push_back(std::move(p));
  }
  return stack_prompts(std::move(prompts), max_length);
}

}  // namespace vidax::text
