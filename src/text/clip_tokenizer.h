// CLIP's BPE tokenizer from vocab.json + merges.txt (HunyuanVideo's text_encoder_2, CLIP-L/14),
// encoding as transformers 5's CLIPTokenizer (tokenizers-backed) does for
// tokenizer(texts, truncation=True, max_length=77, padding="max_length"):
//
//   1. the special tokens (<|startoftext|>, <|endoftext|>) in the text are split out first;
//   2. normalizer: NFC, every run of white space -> one " ", lowercase (per code point);
//   3. pre-tokenizer: the matches of
//        <\|startoftext\|>|<\|endoftext\|>|'s|'t|'re|'ve|'m|'ll|'d|[\p{L}]+|[\p{N}]|[^\s\p{L}\p{N}]+
//      (Split, behavior Removed, inverted: what lies between matches, white space, is dropped),
//      each split again by ByteLevel's own (GPT-2) regex (which changes only the special-token
//      alternatives' pieces: "<|startoftext|>" -> "<|", "startoftext", "|>") and mapped to GPT-2's
//      byte alphabet;
//   4. BPE with end_of_word_suffix "</w>" on each piece's last symbol, unknown symbols -> unk;
//   5. RobertaProcessing: <|startoftext|> ids <|endoftext|>; truncation keeps max_length - 2 ids
//      of the text; padding (right) with the pad token (CLIP's default: <|endoftext|>).
// The special tokens' names come from tokenizer_config.json when it has them, else
// CLIPTokenizer's defaults.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/t5_tokenizer.h"

namespace vidax::text {

// The pieces step 3 keeps of already normalized text (after ByteLevel's split, before its byte
// mapping).
std::vector<std::u32string> clip_pretokenize(std::u32string_view text);
// Step 2: NFC, white space runs -> " ", lowercase.
std::u32string clip_normalize(std::u32string_view text);

class ClipBpeTokenizer {
 public:
  // A folder with vocab.json and merges.txt (and optionally tokenizer_config.json).
  static ClipBpeTokenizer from_dir(const std::string& dir);

  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // tokenizer(texts, truncation=True, max_length, padding="max_length").
  TokenizedBatch encode_batch(const std::vector<std::string>& texts, int64_t max_length = 77) const;

  int64_t bos_id() const { return bos_; }
  int64_t eos_id() const { return eos_; }
  int64_t pad_id() const { return pad_; }
  int64_t vocab_size() const { return static_cast<int64_t>(vocab_.size()); }

 private:
  void bpe(const std::string& piece, std::vector<int64_t>& out) const;

  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<std::string, int64_t> merge_rank_;
  std::vector<std::pair<std::u32string, int64_t>> specials_;  // longest first
  int64_t bos_ = 0, eos_ = 0, pad_ = 0, unk_ = 0;
};

}  // namespace vidax::text
