// Parity kind hunyuan.pipeline.t2v (docs/parity.md): a whole text-to-video run, the denoise loop
// and the decode, against the official HunyuanVideoPipeline.__call__
// (tools/golden/hunyuan_pipeline.py), on the tiny DiT and VAE the file holds.
//   config: the request (prompt, negative_prompt, frames, height, width, steps, seed, guidance =
//           the embedded scale, shift, sampler) and "dit", "vae" (the models' init args)
//   parameters: transformer.<official DiT name>, vae.<official VAE name> (the decoder half)
//   input.prompt_embeds [1, L, D], input.attention_mask [1, L] I64, input.prompt_embeds_2 [1, D2]
//     (__call__'s prompt_embeds / attention_mask, and the pooled vector text_encoder_2 gives)
//   -> output.latents [16, F', h, w] (the final latent), output.video [3, F, H, W] in [0, 1] (the
//      pipeline's output); inter.noise (the seeded initial latent), inter.timesteps (F64).
// Runs the family's own parts (t2v.h make_t2v_parts) through pipeline::run_generation, with a
// prompt encoder that hands back the file's embeddings.
#pragma once
#include "parity/parity.h"

namespace vidax::hunyuan {

parity::Produced run_t2v_golden(const parity::Golden& g, const parity::Options& opt);

}  // namespace vidax::hunyuan
