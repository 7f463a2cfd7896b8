// transformers' ByT5Tokenizer (models/byt5/tokenization_byt5.py, the Python backend; google/byt5-small:
// HunyuanVideo 1.5's glyph encoder), encoding as transformers 5.23 does for
// tokenizer(text, padding="max_length", max_length=M, truncation=True, add_special_tokens=True):
//
//   1. the added tokens are split out first (leftmost, longest): <pad> 0, </s> 1, <unk> 2 (each
//      with lstrip and rstrip: the white space on both sides goes with it, Python's str.strip
//      set, which holds U+001C..U+001F too), <extra_id_0> .. <extra_id_{E-1}> at 259 .. 258 + E
//      (ByT5's sentinels, E = extra_ids = 125), then the caller's (tokenizer.add_tokens(...,
//      special_tokens=True): HunyuanVideo 1.5's Glyph color and font tokens) from 259 + E on;
//   2. every other UTF-8 byte b is the id b + 3;
//   3. truncation keeps the first M - 1 ids, then </s> is appended unless the ids already end
//      with it (_add_eos_if_not_present); padding (right) fills to M with <pad> 0, mask 0.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "text/t5_tokenizer.h"

namespace vidax::text {

class ByT5Tokenizer {
 public:
  static constexpr int64_t kPad = 0, kEos = 1, kUnk = 2, kOffset = 3;
  // added: tokens added after the sentinels, in id order (no stripping, as add_tokens adds them).
  explicit ByT5Tokenizer(const std::vector<std::string>& added = {}, int64_t extra_ids = 125);

  // The ids of `text`; add_eos: </s> at the end (unless already there).
  std::vector<int64_t> encode(std::string_view text, bool add_eos = true) const;
  // [B, max_length] ids and mask, truncated and right-padded.
  TokenizedBatch encode_batch(const std::vector<std::string>& texts, int64_t max_length) const;

  int64_t size() const { return size_; }  // len(tokenizer): 259 + extra_ids + added
  int64_t token_id(const std::string& token) const;  // an added token's id; throws if none

 private:
  struct Added {
    std::u32string content;
    int64_t id;
    bool strip;  // lstrip + rstrip
  };
  std::vector<Added> added_;  // longest first
  int64_t size_ = 0;
};

}  // namespace vidax::text
