// HunyuanVideo 1.0's PromptEncoder (prompt.h) over its two text encoders (text_encoder.h):
// what HunyuanVideoPipeline.encode_prompt does for a text-to-video prompt with both encoders
// (hyvideo/text_encoder/__init__.py TextEncoder.text2tokens + encode, data_type "video"):
//   LLM:  text = template.format(prompt) ("dit-llm-encode-video"), tokenized to text_len +
//         crop_start tokens (truncation, padding "max_length"), encode_llm -> text_states [L, 4096]
//         and text_mask [L] (the crop of the template's first crop_start positions)
//   CLIP: the prompt alone, tokenized to 77 (truncation, padding "max_length"), encode_clip ->
//         text_states_2 [768] (the pooled output)
// The tokenizers are callables: make_prompt_encoder (t2v.h) hands in the Llama-3 byte-level BPE
// and CLIP BPE tokenizers of a weights folder; tests may hand in the token ids of a golden.
#pragma once
#include <functional>
#include <memory>
#include <string>

#include "models/hunyuan/prompt.h"
#include "models/hunyuan/text_encoder.h"

namespace vidax::hunyuan {

// A tokenizer as TextEncoder.text2tokens calls it: `text` to exactly max_length ids (right-padded,
// cut at max_length) with its mask, [1, max_length] I64 each; `truncated` when the text had more.
struct Tokenized {
  Tensor input_ids, attention_mask;
  bool truncated = false;
};
using Tokenize = std::function<Tokenized(const std::string& text, int64_t max_length)>;

// template.format(prompt) for a template with one "{}" and no other braces (hyvideo/constants.py's);
// throws naming the template otherwise.
std::string apply_template(const std::string& tmpl, const std::string& prompt);

class HunyuanTextEncoders final : public PromptEncoder {
 public:
  // llm_opt: max_length = text_len + the template's crop_start, the skip layer, ...
  // (LlmEncodeOptions; hyvideo/inference.py's defaults: 256 + 95, skip 2, no final norm, mask on).
  HunyuanTextEncoders(std::shared_ptr<const text::LlamaTextEncoder> llm, LlmEncodeOptions llm_opt, PromptTemplate tmpl,
                      Tokenize llm_tokenize, std::shared_ptr<const text::ClipTextEncoder> clip, Tokenize clip_tokenize,
                      int64_t clip_max_length = 77);
  PromptEmbeds encode(const std::string& prompt) override;

 private:
  std::shared_ptr<const text::LlamaTextEncoder> llm_;
  LlmEncodeOptions llm_opt_;
  PromptTemplate tmpl_;
  Tokenize llm_tokenize_;
  std::shared_ptr<const text::ClipTextEncoder> clip_;
  Tokenize clip_tokenize_;
  int64_t clip_max_length_;
};

}  // namespace vidax::hunyuan
