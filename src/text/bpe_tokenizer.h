// A byte-level BPE tokenizer read from a tokenizers `tokenizer.json` (Llama-3's: HunyuanVideo's
// LLaVA-Llama-3-8B text encoder), encoding as tokenizers 0.23 / transformers 5 do for
// tokenizer(texts, truncation=True, max_length=M, padding="max_length"):
//
//   1. added tokens (tokenizer.json "added_tokens": <|begin_of_text|>, <|start_header_id|>, ...)
//      are split out first, leftmost and longest, and map to their ids;
//   2. the text between them is pre-tokenized by Llama-3's Split regex
//        (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//        \s*[\r\n]+|\s+(?!\S)|\s+
//      (behavior Isolated), each piece's UTF-8 bytes mapped to GPT-2's byte alphabet (ByteLevel);
//   3. each piece is looked up whole when the model says ignore_merges, else merged by the BPE
//      ranks (the lowest-ranked adjacent pair first, the leftmost on ties) and looked up;
//   4. the post-processor's TemplateProcessing adds its special tokens (Llama-3: <|begin_of_text|>
//      in front); truncation keeps the first M minus those tokens; padding (right) fills to M
//      with the pad token, mask 0.
//
// What this reads is checked, and anything else refused naming the field: a normalizer,
// another pre-tokenizer or regex, BPE dropout, byte fallback, subword prefixes or suffixes, added
// tokens with lstrip / rstrip / single_word, a post-processor other than ByteLevel /
// TemplateProcessing (or a Sequence of them).
#pragma once
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "text/t5_tokenizer.h"

namespace vidax::text {

// Llama-3's pre-tokenizer regex (as tokenizer.json spells it) and its split of `text` (Isolated:
// every match, and every run of text between matches, is a piece).
extern const char* const kLlama3SplitPattern;
std::vector<std::u32string> llama3_pretokenize(std::u32string_view text);

// GPT-2's bytes_to_unicode: the UTF-8 of the character standing for each byte (printable bytes
// stand for themselves, the others for U+0100 onwards).
const std::vector<std::string>& gpt2_byte_alphabet();

class ByteLevelBpeTokenizer {
 public:
  // tokenizer.json; pad_token: the token padding uses (tokenizer_config.json's pad_token), empty
  // = none (encode_batch then refuses to pad).
  static ByteLevelBpeTokenizer from_file(const std::string& tokenizer_json, const std::string& pad_token = "");
  // A tokenizer folder: tokenizer.json, and tokenizer_config.json's pad_token when there is one.
  static ByteLevelBpeTokenizer from_dir(const std::string& dir);

  // The ids of `text` (added tokens split out); add_special_tokens: the post-processor's template.
  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // tokenizer(texts, truncation=True, max_length, padding="max_length"): ids and mask [B, max_length].
  TokenizedBatch encode_batch(const std::vector<std::string>& texts, int64_t max_length) const;

  std::optional<int64_t> token_id(const std::string& token) const;  // vocabulary or added token
  std::optional<int64_t> pad_id() const { return pad_id_; }
  int64_t vocab_size() const { return vocab_size_; }

 private:
  void bpe(const std::string& piece, std::vector<int64_t>& out) const;  // piece in the byte alphabet

  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<std::string, int64_t> merge_rank_;  // "a b" -> rank
  std::vector<std::pair<std::u32string, int64_t>> added_;  // longest first
  bool ignore_merges_ = false;
  std::vector<int64_t> prefix_, suffix_;  // the template's special tokens around $A
  std::optional<int64_t> pad_id_;
  int64_t vocab_size_ = 0;
};

}  // namespace vidax::text
