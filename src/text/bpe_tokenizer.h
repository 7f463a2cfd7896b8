// A byte-level BPE tokenizer read from a tokenizers `tokenizer.json` (Llama-3's: HunyuanVideo's
// LLaVA-Llama-3-8B text encoder; Qwen2's: HunyuanVideo 1.5's Qwen2.5-VL), encoding as tokenizers
// 0.23 / transformers 5 do for tokenizer(texts, truncation=True, max_length=M, padding="max_length"):
//
//   1. added tokens (tokenizer.json "added_tokens": <|begin_of_text|>, <|im_start|>, ...) are split
//      out first, leftmost and longest, and map to their ids: those with normalized false in the
//      raw text, then (after the normalizer, NFC for Qwen2, none for Llama-3) those with normalized
//      true in the normalized spans between them;
//   2. the text between them is pre-tokenized by the file's Split regex, one of the table's
//        Llama-3: (?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|
//                 \s*[\r\n]+|\s+(?!\S)|\s+
//        Qwen2:   the same with \p{N} for \p{N}{1,3} (every digit its own piece)
//      (behavior Isolated), each piece's UTF-8 bytes mapped to GPT-2's byte alphabet (ByteLevel);
//   3. each piece is looked up whole when the model says ignore_merges, else merged by the BPE
//      ranks (the lowest-ranked adjacent pair first, the leftmost on ties) and looked up;
//   4. the post-processor's TemplateProcessing adds its special tokens (Llama-3: <|begin_of_text|>
//      in front); truncation keeps the first M minus those tokens; padding (right) fills to M
//      with the pad token, mask 0.
//
// What this reads is checked, and anything else refused naming the field: a normalizer other
// than NFC, another pre-tokenizer or regex, BPE dropout, byte fallback, subword prefixes or suffixes, added
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

// Llama-3's and Qwen2's pre-tokenizer regexes (as tokenizer.json spells them) and their split of
// `text` (Isolated: every match, and every run of text between matches, is a piece).
extern const char* const kLlama3SplitPattern;
extern const char* const kQwen2SplitPattern;
struct SplitPretokenizer {
  const char* name;     // "llama3", "qwen2"
  const char* pattern;  // the regex as tokenizer.json spells it
  int max_digits;       // its \p{N} alternative: up to 3 digits (Llama-3) or 1 (Qwen2)
};
const std::vector<SplitPretokenizer>& split_pretokenizers();  // the table
std::vector<std::u32string> split_pretokenize(const SplitPretokenizer& pre, std::u32string_view text);
std::vector<std::u32string> llama3_pretokenize(std::u32string_view text);
std::vector<std::u32string> qwen2_pretokenize(std::u32string_view text);

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
  // The Split pre-tokenizer the file names ("llama3", "qwen2") and whether it normalizes with NFC.
  const char* pretokenizer() const { return pre_->name; }
  bool nfc() const { return nfc_; }

 private:
  void bpe(const std::string& piece, std::vector<int64_t>& out) const;  // piece in the byte alphabet

  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<std::string, int64_t> merge_rank_;  // "a b" -> rank
  std::vector<std::pair<std::u32string, int64_t>> added_;             // normalized false; longest first
  std::vector<std::pair<std::u32string, int64_t>> added_normalized_;  // normalized true; longest first
  const SplitPretokenizer* pre_ = nullptr;
  bool nfc_ = false;
  bool ignore_merges_ = false;
  std::vector<int64_t> prefix_, suffix_;  // the template's special tokens around $A
  std::optional<int64_t> pad_id_;
  int64_t vocab_size_ = 0;
};

}  // namespace vidax::text
