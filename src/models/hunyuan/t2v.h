// HunyuanVideo 1.0 text-to-video as the generic pipeline runs it (pipeline/parts.h), the official
// HunyuanVideoPipeline.__call__ (hyvideo/diffusion/pipelines/pipeline_hunyuan_video.py) split into
// the loop's parts:
//   encode_prompt  the PromptEncoder's embeddings (prompt.h), checked against the DiT's widths
//   predict        the DiT on [1, 16, F', h, w] with t (the sampler's float32 timestep), the prompt's
//                  text_states / text_mask / text_states_2, the rotary tables of
//                  hyvideo/inference.py get_rotary_pos_embed (rope.h, computed once per latent
//                  size) and guidance = the embedded scale * 1000 as the pipeline forms it
//                  (embedded_guidance_value)
//   decode         latents / scaling_factor, the VAE decoder (tiled as --vae-tiling, the official
//                  default, tiles it), clamped to [-1, 1] (the pipeline's (x / 2 + 0.5).clamp(0, 1)
//                  is the same values on [0, 1]: x * 0.5 + 0.5 of this, exactly)
// Guidance is Embedded (one DiT pass per step, --guidance = --embedded-cfg-scale): the official
// default --cfg-scale 1.0 runs no unconditional pass. A classifier-free pass on top of the embedded
// scale (--cfg-scale > 1) is not offered yet.
#pragma once
#include <memory>
#include <string>

#include "models/hunyuan/dit.h"
#include "models/hunyuan/presets.h"
#include "models/hunyuan/prompt.h"
#include "models/hunyuan/vae.h"
#include "models/hunyuan/weights.h"
#include "pipeline/family.h"

namespace vidax::hunyuan {

// The guidance value the DiT embeds for scale `scale`, as the pipeline forms it:
// torch.tensor([scale], float32).to(target_dtype) * 1000.0, so at fp32 float(scale) * 1000 in
// float32 and at bf16 that product of the bf16-rounded scale rounded to bf16 (6.0 -> 6016).
double embedded_guidance_value(double scale, DType compute);

// The parts for a loaded DiT and VAE (decoder) and a prompt encoder; `tiling` as the decode runs;
// text_len the LLM's token budget (the official --text-len, 256).
pipeline::Parts make_t2v_parts(std::shared_ptr<const HunyuanDiT> dit, std::shared_ptr<const HunyuanVAE> vae,
                               VAETiling tiling, std::shared_ptr<PromptEncoder> encoder, int64_t text_len = 256);

// The geometry of a DiT + VAE pair: z_dim, the VAE's strides, the DiT's patch, text_len.
pipeline::Geometry geometry_of(const DiTConfig& dit, const VAEConfig& vae, int64_t text_len);

struct LoadedT2V {
  Preset preset;  // with the architecture actually loaded (configs from the weights)
  WeightFiles files;
  std::string precision;
  pipeline::Parts parts;
};

// Loads the DiT and the VAE decoder of opt.weights_dir through the translator (either layout,
// strictly) and wires `encoder`. Without an encoder (null) the prompt encoder is built from the
// weights' text_encoder/ and text_encoder_2/ (make_prompt_encoder), before any weight is read.
LoadedT2V load_t2v(const pipeline::LoadOptions& opt, std::shared_ptr<PromptEncoder> encoder = nullptr);

// The LLaVA-Llama-3-8B + CLIP-L/14 prompt encoder of a weights directory (prompt_encoder.h's
// HunyuanTextEncoders): the Llama-3 tokenizer (files.tokenizer/tokenizer.json, with
// tokenizer_config.json's pad_token) and the LLM (files.text_encoder: config.json + its weights,
// either key layout), the CLIP tokenizer (files.tokenizer_2: vocab.json + merges.txt) and CLIP's
// text model (files.text_encoder_2); the LLM sees `template_name` (hyvideo/constants.py
// PROMPT_TEMPLATE) at text_len + its crop_start tokens, skip layer 2, CLIP 77 tokens, as
// hyvideo/inference.py sets them up. Every tokenizer file, config and weights file is checked
// before any weight is read; a missing one is an error naming its path.
std::shared_ptr<PromptEncoder> make_prompt_encoder(const WeightFiles& files, const std::string& precision,
                                                   int64_t text_len = 256,
                                                   const std::string& template_name = "dit-llm-encode-video");

}  // namespace vidax::hunyuan
