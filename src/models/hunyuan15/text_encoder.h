// HunyuanVideo 1.5's LLM text encoder as its pipeline uses it (hyvideo/models/text_encoders/
// __init__.py TextEncoder; hyvideo/pipelines/hunyuan_video_pipeline.py encode_prompt and
// _load_text_encoders): Qwen2.5-VL-7B-Instruct's language model (text::Qwen25VLTextConfig on
// text::LlamaTextEncoder) with its tokenizer (text::ByteLevelBpeTokenizer, Qwen2's tokenizer.json).
//
//   1. the prompt goes into a chat conversation (PROMPT_TEMPLATE "li-dit-encode-image-json" /
//      "li-dit-encode-video-json": a system message, then the user's: the prompt, " " when empty),
//      rendered by Qwen2.5-VL's chat template with add_generation_prompt:
//        <|im_start|>system\n{system}<|im_end|>\n<|im_start|>user\n{prompt}<|im_end|>\n<|im_start|>assistant\n
//   2. crop_start is computed once per template, as the constructor does: the conversation of
//      "a photo of a cat" tokenized (truncated to 256), the position after the first
//      "<|im_start|>user\n" tokens (0 when they are not found);
//   3. tokenized with truncation to text_len + crop_start and padded to it (right, <|endoftext|>);
//   4. the model runs with the attention mask; the pipeline takes hidden_states[-(skip + 1)]
//      (hidden_state_skip_layer 2: the output of the third layer from the end, before the final
//      norm; the norm only with apply_final_norm and skip > 0), then drops the first crop_start
//      positions from the states and the mask (hunyuan::encode_llm, the same TextEncoder.encode as
//      HunyuanVideo 1.0's). Output: [B, text_len, 3584] + that mask. The pipeline's text_len: 1000.
#pragma once
#include <string>
#include <vector>

#include "models/hunyuan/text_encoder.h"
#include "text/bpe_tokenizer.h"
#include "text/qwen2_config.h"

namespace vidax::hunyuan15 {

// PROMPT_TEMPLATE's conversations: the system message (verbatim, the source's line continuations
// leave nine spaces before each numbered aspect); the user message is the prompt.
struct ChatTemplate {
  std::string name;
  std::string system;
};
// "li-dit-encode-image-json" or "li-dit-encode-video-json"; throws naming the known ones.
const ChatTemplate& prompt_template(const std::string& name);
// The pipeline's t2v default (encode_prompt's data_type "video").
inline const char* kVideoTemplate = "li-dit-encode-video-json";

// Qwen2.5-VL's chat template on [system, user] (string contents) with add_generation_prompt.
// An empty prompt becomes " " (apply_text_to_template's prevent_empty_text).
std::string render_chat(const ChatTemplate& tmpl, const std::string& prompt);

// TextEncoder.calculate_crop_start for `tmpl` with this tokenizer. Refuses a tokenizer that is not
// Qwen2's (the Split regex), naming what it is.
int64_t crop_start(const text::ByteLevelBpeTokenizer& tokenizer, const ChatTemplate& tmpl);

// TextEncoder.text2tokens(prompts, data_type, max_length=text_len): [B, text_len + crop_start]
// (crop_start > 0, else text_len), truncated and right-padded; a prompt cut short is marked
// prompts[i].truncated (the reference cuts it silently, its closing tokens with it).
text::TokenizedBatch text2tokens(const text::ByteLevelBpeTokenizer& tokenizer, const std::vector<std::string>& prompts,
                                 const ChatTemplate& tmpl, int64_t text_len, int64_t crop_start);

// The TextEncoder args of a hunyuan1.5.text.qwen golden's config (max_length = text_len,
// hidden_state_skip_layer, apply_final_norm, use_attention_mask, prompt_template {name or
// template, crop_start}, optional prompt_template_video (used when data_type is "video", as
// TextEncoder.encode does), data_type (default "image")) as hunyuan::encode_llm takes them; the
// pipeline's: skip 2, no final norm, mask on.
hunyuan::LlmEncodeOptions encode_options(const nlohmann::json& j);

// Registers `hunyuan1.5.text.qwen` (engine::register_builtin_kinds calls it).
void register_text_parity_kinds();

}  // namespace vidax::hunyuan15
