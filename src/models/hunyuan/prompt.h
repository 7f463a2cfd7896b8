// The prompt as the HunyuanVideo 1.0 DiT takes it, and the interface the text side implements.
//
// The official pipeline (hyvideo/diffusion/pipelines/pipeline_hunyuan_video.py) encodes a prompt
// twice and hands the DiT both:
//   text_states   [L, text_states_dim]   the LLM's hidden state (LLaVA-Llama-3-8B: the layer
//                                        hidden_state_skip_layer = 2 from the end, the prompt
//                                        template's first crop_start tokens cut), L = text_len
//                                        (256) tokens, padded at the right ("max_length");
//   text_mask     [L] I64                1 for the prompt's tokens, 0 for the padding (the
//                                        attention_mask of the same crop);
//   text_states_2 [text_states_dim_2]    CLIP-L/14's pooled output (77 tokens), the DiT's vector_in.
// A PromptEncoder turns a prompt into these (src/text + src/models/hunyuan/text_encoder*, another
// piece of work); the family's encode_prompt wraps them into the pipeline's EncodedPrompt:
// `context` = text_states, `conditioning` = the whole PromptEmbeds (opaque to the loop), read back
// by predict through prompt_embeds_of.
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "core/tensor.h"
#include "pipeline/parts.h"

namespace vidax::hunyuan {

struct PromptEmbeds {
  Tensor text_states;    // [L, text_states_dim] F32 (or the compute dtype)
  Tensor text_mask;      // [L] I64, 1 = token
  Tensor text_states_2;  // [text_states_dim_2] F32
  bool truncated = false;  // the prompt was longer than an encoder's budget and was cut as the reference cuts it
};

// What encodes prompts for the DiT: both text encoders with their tokenizers and the prompt
// template. Implementations own their weights; encode may be called many times.
class PromptEncoder {
 public:
  virtual ~PromptEncoder() = default;
  virtual PromptEmbeds encode(const std::string& prompt) = 0;
};

// Checks the shapes and dtypes against the DiT's widths (throws naming the tensor, the shape and
// what was expected) and wraps them for the loop.
pipeline::EncodedPrompt to_encoded_prompt(PromptEmbeds e, int64_t text_states_dim, int64_t text_states_dim_2);
// The PromptEmbeds an EncodedPrompt from to_encoded_prompt carries; throws when it carries none
// (a prompt not encoded by this family's encode_prompt).
const PromptEmbeds& prompt_embeds_of(const pipeline::EncodedPrompt& p);

}  // namespace vidax::hunyuan
