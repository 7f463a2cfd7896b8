// Parity kind hunyuan1.5.pipeline.t2v (docs/parity.md): a whole HunyuanVideo 1.5 text-to-video run,
// the denoise loop and the decode, against the official HunyuanVideo_1_5_Pipeline.__call__
// (tools/golden/hunyuan15_pipeline.py), on the tiny DiT and VAE the file describes.
//   config: the request (prompt, negative_prompt, frames, height, width, steps, seed, guidance =
//           the pipeline's guidance_scale, shift = flow_shift, sampler "flow_match_euler"; __call__'s
//           names guidance_scale, flow_shift, video_length, num_inference_steps are taken too), "dit"
//           and "vae" (the models' init args), "vae_tiling" {sample_size, overlap} (the decode's tile;
//           absent: the VAE constructor's, the config's sample_size and 0.25),
//           "vision_num_semantic_tokens" (absent: 729)
//   parameters: the DiT's as __metadata__.synthetic_params (official names) and/or stored under
//           transformer.<official name>; the VAE decoder's under vae.<official name>
//   input.text_states [1, L, D], input.text_mask [1, L] I64, input.byt5_text_states [1, Lb, 1472],
//     input.byt5_text_mask [1, Lb] I64 (the prompt's; text_states / text_mask may be spelled as
//     __call__'s prompt_embeds / prompt_mask), and with guidance > 1 input.negative_* (the
//     negative prompt's)
//   -> output.latents [C, F', h, w] (the final latent), output.video [3, F, H, W] in [0, 1] (the
//      pipeline's output); inter.noise (the seeded initial latent), inter.timesteps (F64),
//      inter.latents_step0 / inter.latents_last (the latent after the first / the last step).
// guidance < 1 runs as 1 (the pipeline's do_classifier_free_guidance is guidance_scale > 1).
// Runs the family's parts (t2v.h make_t2v_parts) through pipeline::run_generation, with a prompt
// encoder that hands back the file's embeddings.
#pragma once
#include "parity/parity.h"

namespace vidax::hunyuan15 {

parity::Produced run_t2v_golden(const parity::Golden& g, const parity::Options& opt);

// Kind hunyuan1.5.pipeline.i2v: the same run with a reference image (i2v.h make_i2v_parts), against
// __call__ with reference_image (tools/golden/hunyuan15_pipeline_i2v.py). Config as t2v's plus
// "siglip" {"vision", "processor"} (the image encoder's config.json and preprocessor_config.json) and
// "bucket_hw_base_size" (the size buckets' base; absent: sqrt(height * width)); parameters as t2v's
// plus the VAE encoder's under vae.encoder.* and the SigLIP's under vision_encoder.* (transformers
// names); input.image [H, W, 3] U8 (the picture) -> as t2v's, plus inter.cond_latents [C, 1, h, w]
// (get_image_condition_latents) and inter.vision_states [1, tokens, width] (_prepare_vision_states).
parity::Produced run_i2v_golden(const parity::Golden& g, const parity::Options& opt);

// Registers hunyuan1.5.pipeline.t2v and .i2v (engine::register_builtin_kinds calls it).
void register_pipeline_parity_kinds();

}  // namespace vidax::hunyuan15
