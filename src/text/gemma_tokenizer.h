// Gemma-3's tokenizer (the LTX-2 text encoder's), read from its tokenizers `tokenizer.json` and
// `tokenizer_config.json`, encoding as the LTX-2 pipeline's tokenizer does: transformers 5's
// PreTrainedTokenizerFast over tokenizers 0.23's Tokenizer.from_buffer(tokenizer.json), built by
// ltx_core's gemma_assets.build_gemma_hf_tokenizer with tokenizer_config.json's keys:
//
//   1. added tokens not marked "normalized" are split out of the raw text first (leftmost, then
//      longest) and map to their ids;
//   2. each remaining span is normalized (Gemma: Replace " " -> U+2581; Prepend and Sequences of
//      both are read too), then the "normalized" added tokens are split out of it the same way;
//   3. no pre-tokenizer (Gemma-3's tokenizer.json has none; transformers 5's GemmaTokenizer writes
//      Split(" ", MergedWithPrevious), which cannot match after the space is replaced: accepted);
//      each span is one BPE word: its characters looked up in the vocabulary, an unknown one as its
//      UTF-8 bytes' <0xNN> tokens (byte_fallback), else <unk> (adjacent ones fused with fuse_unk),
//      then the adjacent pair of lowest merge rank joined until none applies (the leftmost among
//      equal ranks; a pair listed twice keeps its last rank, as tokenizers' merge map does);
//   4. added tokens' ids as tokenizers assigns them on load (not the listed "id"): the vocabulary's
//      id for the same content, else the next after the vocabulary's entry count (the listed ids
//      in a gap-free file such as Gemma's);
//   5. the post-processor's tokens around the text: tokenizer_config.json's add_bos_token /
//      add_eos_token when it names either (transformers then rebuilds the template from them), else
//      tokenizer.json's TemplateProcessing.
//
// Refused, naming the field: another model, normalizer or pre-tokenizer, BPE dropout, subword
// prefixes / suffixes, added tokens with lstrip / rstrip / single_word, a named special token
// (bos / eos / pad / unk) of tokenizer_config.json that the files do not hold.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace vidax::text {

class GemmaTokenizer {
 public:
  // tokenizer_json_text / tokenizer_config_text: the files' contents (config "" = none, as {});
  // `source` names them in errors.
  static GemmaTokenizer from_json(const std::string& tokenizer_json_text, const std::string& tokenizer_config_text,
                                  const std::string& source);
  static GemmaTokenizer from_files(const std::string& tokenizer_json, const std::string& tokenizer_config);
  // A Gemma folder, found as ltx_core's GemmaAssets.from_root finds the files: tokenizer.json in
  // the folder itself, else the one below it (more than one is an error: which one Python takes
  // depends on directory order); tokenizer_config.json, required, the first of all those below it
  // in sorted path order.
  static GemmaTokenizer from_dir(const std::string& dir);
  // A packed single-file text encoder (.safetensors) as GemmaAssets.from_single_file reads it: the
  // tokenizer.json bytes in tensor "tokenizer_json" (U8; other integer dtypes taken modulo 256, as
  // ComfyUI packs may store them), tokenizer_config.json in tensor "hf_asset__tokenizer_config.json"
  // or else in the metadata key "tokenizer_config.json" (required).
  static GemmaTokenizer from_packed(const std::string& safetensors_path);
  // GemmaAssets.load: a directory (from_dir) or a .safetensors file (from_packed).
  static GemmaTokenizer load(const std::string& path);

  // The ids of `text`; add_special_tokens: the post-processor's tokens (Gemma: <bos> in front).
  std::vector<int64_t> encode(std::string_view text, bool add_special_tokens = true) const;
  // tokenizer(text, truncation=True, max_length=max_length)["input_ids"]: the text's ids cut to
  // max_length minus the special tokens (truncation side right), then the special tokens.
  std::vector<int64_t> encode_truncated(std::string_view text, int64_t max_length, bool* truncated = nullptr) const;

  std::optional<int64_t> token_id(const std::string& token) const;  // added token or vocabulary
  std::optional<int64_t> bos_id() const { return bos_id_; }
  std::optional<int64_t> eos_id() const { return eos_id_; }
  std::optional<int64_t> pad_id() const { return pad_id_; }  // tokenizer_config.json's pad_token
  int64_t vocab_size() const { return vocab_size_; }  // largest id + 1
  int64_t special_tokens_added() const { return static_cast<int64_t>(prefix_.size() + suffix_.size()); }

 private:
  struct Normalize {  // one normalizer step
    bool prepend = false;
    std::u32string pattern, content;  // Replace: pattern -> content; Prepend: content
  };
  std::u32string normalize(std::u32string_view text) const;
  void encode_raw_span(std::u32string_view span, std::vector<int64_t>& ids) const;
  void bpe_word(std::u32string_view word, std::vector<int64_t>& ids) const;

  std::unordered_map<std::string, int64_t> vocab_;
  std::unordered_map<uint64_t, std::pair<int64_t, int64_t>> merges_;  // (left id << 32 | right id) -> (rank, id)
  std::vector<std::pair<std::u32string, int64_t>> raw_added_, normalized_added_;  // longest first
  std::vector<Normalize> normalizer_;
  bool byte_fallback_ = false;
  std::vector<int64_t> byte_ids_;  // the <0xNN> token of each byte, -1 where the vocabulary has none
  std::optional<int64_t> unk_id_;
  bool fuse_unk_ = false, ignore_merges_ = false;
  std::vector<int64_t> prefix_, suffix_;
  std::optional<int64_t> bos_id_, eos_id_, pad_id_;
  int64_t vocab_size_ = 0;
};

}  // namespace vidax::text
