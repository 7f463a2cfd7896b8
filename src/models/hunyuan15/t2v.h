// HunyuanVideo 1.5 text-to-video as the generic pipeline runs it (pipeline/parts.h): the official
// HunyuanVideo_1_5_Pipeline.__call__ (hyvideo/pipelines/hunyuan_video_pipeline.py,
// Tencent-Hunyuan/HunyuanVideo-1.5 60783e7) for task "t2v", split into the loop's parts:
//   encode_prompt  the prompt's embeddings (PromptEmbeds: the Qwen2.5-VL states and mask,
//                  text_encoder.h; the ByT5 glyph states and mask, text_byt5.h), checked against the
//                  DiT's widths
//   predict        the DiT on [latent; zero condition latent; zero mask channel] (the pipeline's
//                  _prepare_cond_latents with get_task_mask("t2v") all zero), t (the sampler's
//                  float32 timestep), the prompt's states and mask, the glyph states as extra_kwargs,
//                  vision_states all zero [1, vision_tokens, vision_states_dim]
//                  (_prepare_vision_states without a reference image) with mask_type "t2v", no
//                  text_states_2 (the pipeline's text_encoder_2 is None), the rotary tables the DiT
//                  computes (the pipeline passes none)
//   decode         latents / scaling_factor (+ shift_factor when set), the VAE decoder tiled as
//                  vae.memory_efficient_context() tiles it (spatial tiling on, the tile the pipeline
//                  set with set_tile_sample_min_size), clamped to [-1, 1] (the pipeline's
//                  (x / 2 + 0.5).clamp(0, 1) is x * 0.5 + 0.5 of this, exactly)
// Guidance is classifier-free (guidance_scale > 1: the DiT on the negative prompt too,
// v_uncond + s * (v_cond - v_uncond); 1 = one pass), the scheduler the flow-match discrete one
// (sched.flow_match_discrete: 1.5's FlowMatchDiscreteScheduler is 1.0's with use_flux_shift off,
// which the pipeline's _create_scheduler leaves off). The noise is torch.randn on the CPU generator
// seeded `seed`, float32 (the published pipeline draws it in its target dtype, bf16).
// A meanflow DiT (use_meanflow) takes timestep_r = the next timestep (0 after the last step), as
// __call__ passes it (DenoiseInput::t_next).
// Not built: guidance-embedded (distilled) DiTs, guidance_rescale,
// the super-resolution stage; each is refused by make_t2v_parts. Image-to-video: i2v.h (these parts
// plus the reference image's conditioning).
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "models/hunyuan15/dit.h"
#include "models/hunyuan15/vae.h"
#include "pipeline/parts.h"

namespace vidax::hunyuan15 {

// One prompt's embeddings as the DiT takes them (batch dimension dropped).
struct PromptEmbeds {
  Tensor text_states;  // [L, text_states_dim] F32: the Qwen2.5-VL hidden state (the pipeline's prompt_embeds)
  Tensor text_mask;    // [L] I64, 1 = token
  Tensor byt5_states;  // [Lb, 1472] F32 (glyph_byT5_v2 DiTs): the ByT5 encoder's output, zeros without glyph text
  Tensor byt5_mask;    // [Lb] I64
  bool truncated = false;  // the prompt was longer than an encoder's budget and was cut as the reference cuts it
};

// What encodes prompts for the DiT (the LLM and the glyph encoder with their tokenizers).
class PromptEncoder {
 public:
  virtual ~PromptEncoder() = default;
  virtual PromptEmbeds encode(const std::string& prompt) = 0;
  // The negative prompt's embeddings (the loop's encode_negative_prompt); default: encode's.
  virtual PromptEmbeds encode_negative(const std::string& prompt) { return encode(prompt); }
};

// Checks the embeddings against the DiT (throws naming the tensor, its shape and what was
// expected) and wraps them for the loop; prompt_embeds_of gets them back (throws when the prompt
// was not encoded this way).
pipeline::EncodedPrompt to_encoded_prompt(PromptEmbeds e, const DiTConfig& dit);
const PromptEmbeds& prompt_embeds_of(const pipeline::EncodedPrompt& p);

struct T2VOptions {
  VAETiling tiling = VAETiling::pipeline();  // the decode's (create_pipeline's set_tile_sample_min_size)
  int64_t vision_tokens = 729;               // the pipeline's vision_num_semantic_tokens
  int64_t text_len = 1000;                   // the LLM's token budget (the pipeline's TextEncoder max_length)
};

// The geometry of a DiT + VAE pair: latent channels, the VAE's strides, the DiT's patch, text_len.
pipeline::Geometry geometry_of(const DiTConfig& dit, const VAEConfig& vae, int64_t text_len);

// The parts for a loaded DiT and VAE (its decoder) and a prompt encoder. Throws naming the field
// when the pair does not fit or the DiT needs what the t2v loop does not build.
pipeline::Parts make_t2v_parts(std::shared_ptr<const HunyuanVideo15DiT> dit, std::shared_ptr<const HunyuanVideo15VAE> vae,
                               std::shared_ptr<PromptEncoder> encoder, const T2VOptions& opt = {});

}  // namespace vidax::hunyuan15
