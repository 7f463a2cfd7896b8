// HunyuanVideo 1.0's text encoders as its pipeline uses them (hyvideo/text_encoder/__init__.py,
// TextEncoder.encode; hyvideo/constants.py; hyvideo/config.py's defaults):
//
// - the LLM (LLaVA-Llama-3-8B's language model, text::LlamaTextEncoder): the prompt goes into a
//   template (PROMPT_TEMPLATE: "dit-llm-encode" for images, "dit-llm-encode-video" for videos),
//   is tokenized to max_length = text_len (256) + crop_start tokens, right-padded; the model runs
//   with the attention mask and output_hidden_states; the pipeline takes
//   hidden_states[-(hidden_state_skip_layer + 1)] (skip 2 by default: the output of the third
//   layer from the end, before the final norm), the final norm applied to it only when
//   apply_final_norm is set and skip > 0, then drops the template's first crop_start positions
//   from the states and from the mask. Output: [B, max_length - crop_start, 4096] + that mask.
// - CLIP-L/14's text model (text::ClipTextEncoder), 77 tokens, no template: the pooled output
//   (pooler_output, [B, 768]), the DiT's text_states_2.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "core/tensor.h"
#include "text/bpe_tokenizer.h"
#include "text/clip_text.h"
#include "text/llama_encoder.h"

namespace vidax::hunyuan {

// hyvideo/constants.py PROMPT_TEMPLATE: the template text ({} = the prompt) and how many of its
// tokens (Llama-3 tokenizer) precede the prompt.
struct PromptTemplate {
  std::string text;
  int64_t crop_start = 0;
};
// "dit-llm-encode" (crop_start 36) or "dit-llm-encode-video" (95); throws naming the known ones.
const PromptTemplate& prompt_template(const std::string& name);

// TextEncoder.text2tokens for the LLM: template.format(prompt) for each prompt, tokenized with
// truncation to max_length = text_len + crop_start and padded to it (right). A prompt cut short is
// marked in the batch's prompts[i].truncated, as the reference cuts it (silently there).
text::TokenizedBatch tokenize_llm(const text::ByteLevelBpeTokenizer& tokenizer, const std::vector<std::string>& prompts,
                                  const PromptTemplate& tmpl, int64_t text_len = 256);

// The TextEncoder init args that shape what encode() returns for the LLM.
struct LlmEncodeOptions {
  int64_t max_length = 256 + 95;  // text_len + crop_start (hyvideo/inference.py)
  // hidden_states[-(skip + 1)]; nullopt: the model's last_hidden_state (the same as skip 0).
  std::optional<int64_t> hidden_state_skip_layer = 2;
  bool apply_final_norm = false;
  bool use_attention_mask = true;
  int64_t crop_start = 95;  // the template's; <= 0: nothing cropped (TextEncoder's `crop_start > 0`)

  // TextEncoder's init args as JSON: max_length, hidden_state_skip_layer (null allowed),
  // apply_final_norm, use_attention_mask, prompt_template ({template, crop_start}, or null).
  static LlmEncodeOptions from_json(const nlohmann::json& j);
};

// TextEncoderModelOutput's hidden_state and attention_mask (nullopt when use_attention_mask is off).
struct LlmEncoding {
  Tensor hidden_state;                   // [B, L - crop_start, hidden], the compute dtype
  std::optional<Tensor> attention_mask;  // [B, L - crop_start], the input's dtype
};

// TextEncoder.encode for the LLM: input_ids / attention_mask [B, L] as text2tokens makes them
// (L <= max_length, right-padded).
LlmEncoding encode_llm(const text::LlamaTextEncoder& llm, const Tensor& input_ids, const Tensor& attention_mask,
                       const LlmEncodeOptions& opt);

// TextEncoder.encode for CLIP: the pooled output [B, hidden] (its output_key "pooler_output").
// use_attention_mask false runs the model without the padding mask, as the reference does.
Tensor encode_clip(const text::ClipTextEncoder& clip, const Tensor& input_ids, const Tensor& attention_mask,
                   bool use_attention_mask = true);

// Parity kinds hunyuan.text.llama and hunyuan.text.clip (docs/parity.md).
void register_text_parity_kinds();

}  // namespace vidax::hunyuan
