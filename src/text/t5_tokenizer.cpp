#include "text/t5_tokenizer.h"

#ifdef VIDAX_HAVE_SENTENCEPIECE
#include <sentencepiece_processor.h>
#endif

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "io/text_file.h"
#include "text/text_clean.h"
#include "text/tokenized_batch.h"

namespace vidax::text {
#ifdef VIDAX_HAVE_SENTENCEPIECE
namespace {

namespace fs = std::filesystem;

// transformers' T5Tokenizer default: 100 sentinels <extra_id_0..99> appended
// after the SentencePiece vocabulary in reverse order (<extra_id_99> first);
// tokenizer_config.json's "extra_ids" overrides the count.
constexpr int64_t kDefaultExtraIds = 100;

nlohmann::json read_json(const fs::path& p) { return io::read_json_file(p.string()); }

// tokenizer.json's "added_tokens", without building its (large) vocabulary:
// the top-level "model" entry is discarded while parsing.
std::vector<std::pair<std::string, int64_t>> read_tokenizer_json_added_tokens(const fs::path& p) {
  std::ifstream f(p);
  VIDAX_CHECK(f, "cannot open " << p.string());
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(f, [](int depth, nlohmann::json::parse_event_t event, nlohmann::json& parsed) {
      return !(depth == 1 && event == nlohmann::json::parse_event_t::key && parsed == "model");
    });
  } catch (const nlohmann::json::exception& e) {
    throw Error(msg() << "malformed JSON in " << p.string() << ": " << e.what());
  }
  VIDAX_CHECK(j.contains("added_tokens") && j["added_tokens"].is_array(), p.string() << ": no \"added_tokens\" array");
  std::vector<std::pair<std::string, int64_t>> out;
  try {
    for (const auto& t : j["added_tokens"]) out.emplace_back(t.at("content").get<std::string>(), t.at("id").get<int64_t>());
  } catch (const nlohmann::json::exception& e) {
    throw Error(msg() << p.string() << ": bad added_tokens entry: " << e.what());
  }
  return out;
}

// The tokens HF splits out of the raw text before running the model:
// tokenizer.json's added_tokens and tokenizer_config.json's
// added_tokens_decoder (both, as HF registers both), else T5Tokenizer's defaults
// (<pad> </s> <unk> + extra_ids sentinels).
std::vector<std::pair<std::string, int64_t>> load_special_tokens(const fs::path& dir,
                                                                 const sentencepiece::SentencePieceProcessor& sp) {
  std::vector<std::pair<std::string, int64_t>> special;
  bool found = false;
  int64_t extra_ids = kDefaultExtraIds;
  if (fs::path tj = dir / "tokenizer.json"; fs::exists(tj)) {
    special = read_tokenizer_json_added_tokens(tj);
    found = true;
  }
  if (fs::path tc = dir / "tokenizer_config.json"; fs::exists(tc)) {
    nlohmann::json j = read_json(tc);
    if (j.contains("added_tokens_decoder")) {
      try {
        for (const auto& [id, t] : j["added_tokens_decoder"].items())
          special.emplace_back(t.at("content").get<std::string>(), std::stoll(id));
      } catch (const std::exception& e) {
        throw Error(msg() << tc.string() << ": bad added_tokens_decoder entry: " << e.what());
      }
      found = true;
    }
    // umt5's SentencePiece model has no sentinels; its config says how many T5Tokenizer appends.
    if (j.contains("extra_ids") && j["extra_ids"].is_number_integer()) extra_ids = j["extra_ids"].get<int64_t>();
  }
  if (found) {
    // The same token from both files: keep one; the same text with two ids is an error.
    std::sort(special.begin(), special.end());
    special.erase(std::unique(special.begin(), special.end()), special.end());
    for (size_t i = 1; i < special.size(); ++i)
      VIDAX_CHECK(special[i].first != special[i - 1].first,
                  dir.string() << ": added token \"" << special[i].first << "\" has two ids (" << special[i - 1].second
                               << ", " << special[i].second << ")");
    return special;
  }
  special.emplace_back("<pad>", sp.pad_id());
  special.emplace_back("</s>", sp.eos_id());
  special.emplace_back("<unk>", sp.unk_id());
  const int64_t n = sp.GetPieceSize();
  for (int64_t i = 0; i < extra_ids; ++i)
    special.emplace_back("<extra_id_" + std::to_string(i) + ">", n + extra_ids - 1 - i);
  return special;
}

}  // namespace

T5Tokenizer T5Tokenizer::load(const std::string& path) {
  fs::path model = path;
  if (fs::is_directory(model)) {
    model /= "spiece.model";
    VIDAX_CHECK(fs::exists(model), "tokenizer directory " << path
                                       << " has no spiece.model (a tokenizer.json-only tokenizer is not supported)");
  }
  VIDAX_CHECK(fs::exists(model), "tokenizer model not found: " << model.string());
  T5Tokenizer tok;
  tok.sp_ = std::make_shared<sentencepiece::SentencePieceProcessor>();
  auto status = tok.sp_->Load(model.string());
  VIDAX_CHECK(status.ok(), "cannot load SentencePiece model " << model.string() << ": " << status.ToString());
  VIDAX_CHECK(tok.sp_->pad_id() >= 0 && tok.sp_->eos_id() >= 0,
              model.string() << ": a T5 tokenizer needs <pad> and </s> pieces (pad_id=" << tok.sp_->pad_id()
                             << ", eos_id=" << tok.sp_->eos_id() << ")");
  tok.pad_id_ = tok.sp_->pad_id();
  tok.eos_id_ = tok.sp_->eos_id();
  tok.special_ = load_special_tokens(model.parent_path(), *tok.sp_);
  // Longest first, so that matching at a position picks the longest special token.
  std::stable_sort(tok.special_.begin(), tok.special_.end(),
                   [](const auto& a, const auto& b) { return a.first.size() > b.first.size(); });
  tok.model_path_ = model.string();
  return tok;
}

int64_t T5Tokenizer::vocab_size() const {
  int64_t n = sp_->GetPieceSize();
  for (const auto& [content, id] : special_) n = std::max(n, id + 1);
  return n;
}

int64_t T5Tokenizer::piece_count() const { return sp_->GetPieceSize(); }

std::vector<int64_t> T5Tokenizer::tokenize(std::string_view text) const {
  std::vector<int64_t> out;
  auto encode_plain = [&](std::string_view segment) {
    if (segment.empty()) return;
    std::vector<int> ids;
    auto status = sp_->Encode(std::string(segment), &ids);
    VIDAX_CHECK(status.ok(), "SentencePiece encode failed: " << status.ToString());
    out.insert(out.end(), ids.begin(), ids.end());
  };
  // Split on special tokens, leftmost-longest, as HF's added-token matcher does;
  // the text between them is tokenized on its own (its whitespace is dropped).
  size_t start = 0, i = 0;
  while (i < text.size()) {
    const std::pair<std::string, int64_t>* hit = nullptr;
    for (const auto& s : special_) {
      if (!s.first.empty() && text.compare(i, s.first.size(), s.first) == 0) {
        hit = &s;
        break;
      }
    }
    if (!hit) {
      ++i;
      continue;
    }
    encode_plain(text.substr(start, i - start));
    out.push_back(hit->second);
    i += hit->first.size();
    start = i;
  }
  encode_plain(text.substr(start));
  return out;
}

TokenizedPrompt T5Tokenizer::encode(std::string_view prompt, int64_t max_length, PromptClean clean) const {
  VIDAX_CHECK(max_length >= 1, "tokenizer max_length must be >= 1, got " << max_length);
  TokenizedPrompt r;
  r.cleaned = clean == PromptClean::Whitespace ? clean_prompt_whitespace(prompt) : std::string(prompt);
  std::vector<int64_t> ids = tokenize(r.cleaned);
  // truncation=True keeps room for the </s> the post-processor appends.
  if (static_cast<int64_t>(ids.size()) > max_length - 1) {
    r.truncated = true;
    ids.resize(max_length - 1);
  }
  ids.push_back(eos_id_);
  r.ids = std::move(ids);
  pad_right(r, max_length, pad_id_);
  return r;
}

TokenizedBatch T5Tokenizer::encode_batch(const std::vector<std::string>& prompts, int64_t max_length,
                                         PromptClean clean) const {
  VIDAX_CHECK(!prompts.empty(), "encode_batch: no prompts");
  std::vector<TokenizedPrompt> encoded;
  for (const auto& p : prompts) encoded.push_back(encode(p, max_length, clean));
  return stack_prompts(std::move(encoded), max_length);
}

#else  // VIDAX_HAVE_SENTENCEPIECE: built without sentencepiece (VIDAX_SENTENCEPIECE off, VIDAX_MINIMAL)

namespace {
[[noreturn]] void no_sentencepiece(const std::string& what) {
  throw Error(msg() << what << ": this vidax was built without sentencepiece (VIDAX_SENTENCEPIECE=OFF or VIDAX_MINIMAL), "
                    << "so it has no UMT5 tokenizer; rebuild with it, or pass the context directly (parity files)");
}
}  // namespace

T5Tokenizer T5Tokenizer::load(const std::string& path) { no_sentencepiece("tokenizer " + path); }
int64_t T5Tokenizer::vocab_size() const { no_sentencepiece(model_path_); }
int64_t T5Tokenizer::piece_count() const { no_sentencepiece(model_path_); }
std::vector<int64_t> T5Tokenizer::tokenize(std::string_view) const { no_sentencepiece(model_path_); }
TokenizedPrompt T5Tokenizer::encode(std::string_view, int64_t, PromptClean) const { no_sentencepiece(model_path_); }
TokenizedBatch T5Tokenizer::encode_batch(const std::vector<std::string>&, int64_t, PromptClean) const {
  no_sentencepiece(model_path_);
}

#endif  // VIDAX_HAVE_SENTENCEPIECE
}  // namespace vidax::text
