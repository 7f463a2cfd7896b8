// Parity kind wan.pipeline.t2v (DESIGN.md §4): a whole text-to-video run
// against the official WanT2V.generate (tools/golden/wan_pipeline.py).
//   config: the request (prompt, negative_prompt, frames, height, width, steps,
//           seed, guidance, shift, sampler) and "weights", a checkpoint
//           directory next to the golden file (original or diffusers layout)
//   output.latents [16, F', h, w] (the final x0), output.video [3, F, H, W];
//   inter.noise (the seeded noise), inter.timesteps (F64, the model timesteps)
// End to end at fp32 the latents' relative L2 is 3-4e-6 and the video's 0.7-1.1e-5
// (measured with two versions of the CPU kernels; the VAE amplifies the latents'
// difference ~2.5x, the VAE alone on the golden latents gives ~1e-6): at the
// edge of the 1e-5 component bound, so run it with --rtol 3e-5. The golden lives
// in tests/golden/pipeline/, outside the default-tolerance sweep of
// tests/golden/*.safetensors; tests/wan checks it with these bounds.
#pragma once
#include "parity/parity.h"

namespace vidax::wan {

parity::Produced run_t2v_golden(const parity::Golden& g, const parity::Options& opt);

// Parity kind wan.pipeline.i2v: a whole image-to-video (WanI2V.generate) or first-last-frame
// (WanFLF2V.generate) run (tools/golden/wan_i2v_pipeline.py). As wan.pipeline.t2v, plus
//   config: "diffusion_model" (optional): a DiT file next to the golden replacing the folder's;
//           height x width is the area (max_area), the images give the size
//   input.image [3, H, W] F32 in [-1, 1] (to_tensor().sub_(0.5).div_(0.5) of the picture),
//   input.last_image (FLF2V);
//   inter.z: the VAE encoding of the conditioning frames (y after its 4 mask channels).
parity::Produced run_i2v_golden(const parity::Golden& g, const parity::Options& opt);

// Kind wan.pipeline.vace: a whole WanVace.generate run (tools/golden/wan_vace_pipeline.py). As
// wan.pipeline.t2v, plus config "diffusion_model" (the VACE DiT next to the golden), "control_fps",
// "control_scale"; input.control_video, input.mask_video [3, F, H, W] (VaceVideoProcessor's
// levels / 127.5 - 1), input.reference_image.<j> [3, h, w]; inter.vace_context (the DiT's
// vace_context). output.latents includes the reference images' leading latent frames.
parity::Produced run_vace_golden(const parity::Golden& g, const parity::Options& opt);

}  // namespace vidax::wan
