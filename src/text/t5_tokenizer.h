// The T5 / UMT5 tokenizer as the Wan reference calls it
// (HuggingfaceTokenizer(name, seq_len=512, clean='whitespace') over
// transformers' T5 tokenizer): clean the prompt, split out the special
// ("added") tokens, SentencePiece-encode the text between them, append </s>,
// truncate to max_length (keeping the </s>), pad with <pad> and build the mask.
//
// Files: a SentencePiece model `spiece.model` (the original Wan layout ships it
// in google/umt5-xxl/, diffusers in tokenizer/). The special tokens come from
// tokenizer.json's "added_tokens" and tokenizer_config.json's
// "added_tokens_decoder" when such files sit next to it (both, as HF registers
// both; tokenizer.json's vocabulary is skipped while parsing), else transformers'
// T5Tokenizer defaults (<pad>, </s>, <unk> + 100 <extra_id_N> appended after
// the SentencePiece vocabulary). A tokenizer.json without spiece.model is not
// supported (it is a different, HF-tokenizers, file format).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace sentencepiece {
class SentencePieceProcessor;
}

namespace vidax::text {

struct TokenizedPrompt {
  std::vector<int64_t> ids;   // max_length ids, padded with pad_id
  std::vector<int64_t> mask;  // 1 = token (incl. </s>), 0 = padding
  int64_t length = 0;         // number of mask==1 positions (the reference's seq_len)
  bool truncated = false;     // the prompt did not fit: it was cut like the reference does
  std::string cleaned;        // the prompt after cleaning (what was tokenized)
};

struct TokenizedBatch {
  Tensor ids;   // [B, max_length] I64
  Tensor mask;  // [B, max_length] I64
  std::vector<TokenizedPrompt> prompts;
};

enum class PromptClean { None, Whitespace };  // Wan uses Whitespace (clean='whitespace')

class T5Tokenizer {
 public:
  // path: spiece.model itself or a directory holding it (google/umt5-xxl/, tokenizer/).
  static T5Tokenizer load(const std::string& path);

  // Clean (optional), tokenize, append </s>, truncate, pad to max_length.
  TokenizedPrompt encode(std::string_view prompt, int64_t max_length = 512,
                         PromptClean clean = PromptClean::Whitespace) const;
  TokenizedBatch encode_batch(const std::vector<std::string>& prompts, int64_t max_length = 512,
                              PromptClean clean = PromptClean::Whitespace) const;
  // The ids of already-cleaned text, without </s> or padding.
  std::vector<int64_t> tokenize(std::string_view text) const;

  int64_t pad_id() const { return pad_id_; }
  int64_t eos_id() const { return eos_id_; }
  int64_t vocab_size() const;   // SentencePiece pieces + added tokens beyond them
  int64_t piece_count() const;  // SentencePiece pieces only
  const std::vector<std::pair<std::string, int64_t>>& special_tokens() const { return special_; }
  const std::string& model_path() const { return model_path_; }

 private:
  std::shared_ptr<sentencepiece::SentencePieceProcessor> sp_;
  std::vector<std::pair<std::string, int64_t>> special_;  // (content, id), split out before SentencePiece
  int64_t pad_id_ = 0, eos_id_ = 1;
  std::string model_path_;
};

}  // namespace vidax::text
