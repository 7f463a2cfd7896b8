// Wan 2.1 text-to-video, as the official WanT2V.generate runs it
// (Wan-Video/Wan2.1 wan/text2video.py):
//   1. encode the prompt and the negative prompt (the config's
//      sample_neg_prompt when empty) once, each trimmed to its token count;
//   2. draw noise [16, (F-1)/4+1, H/8, W/8] float32 with the seeded generator
//      (here torch's CPU generator, bit for bit; the official code seeds a
//      CUDA generator, diffusers a CPU one), or take it from a file;
//   3. per sampler step: v_cond = DiT(x, t, ctx), then v_uncond = DiT(x, t,
//      ctx_null); v = v_uncond + g * (v_cond - v_uncond); x = sampler.step(v);
//   4. decode the final latent with the VAE (clamped to [-1, 1]).
// The parts come in as callables (WanT2VComponents) so the loop is the same
// for real checkpoints, the tiny demo and tests; wan_t2v_load.h builds them.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "dist/communicator.h"

namespace vidax::pipeline {

// Sizes that tie the parts together (reference: vae_stride (4, 8, 8),
// patch_size (1, 2, 2), z_dim 16, text_len 512).
struct WanGeometry {
  int64_t z_dim = 16;
  int64_t vae_stride_t = 4, vae_stride_s = 8;
  int64_t patch_t = 1, patch_h = 2, patch_w = 2;
  int64_t text_len = 512;
};

struct EncodedPrompt {
  Tensor context;          // [L, text_dim], L = the prompt's token count (incl. </s>), L <= text_len
  bool truncated = false;  // the prompt was longer than text_len tokens and was cut as the reference cuts it
  // What the denoiser derives from the context once per prompt (the Wan DiT:
  // the projected text and every block's cross-attention K/V), so the steps
  // reuse it; owned here, opaque to the loop.
  std::shared_ptr<const void> conditioning;
};

struct WanT2VComponents {
  WanGeometry geometry;
  std::function<EncodedPrompt(const std::string& prompt)> encode_prompt;
  // x [z_dim, F', h, w] F32, t = the sampler's model timestep, a prompt from
  // encode_prompt -> the DiT's output for x (F32, same shape).
  std::function<Tensor(const Tensor& x, double t, const EncodedPrompt& prompt)> predict;
  // z [z_dim, F', h, w] (normalized latent) -> video [3, F, H, W] in [-1, 1].
  std::function<Tensor(const Tensor& z)> decode;
  // CFG parallelism (nn/parallel_cfg.h): with a group of 2 ranks, rank 0 predicts for the
  // prompt, rank 1 for the negative prompt, and one exchange per step gives both to both.
  dist::Communicator* cfg_group = nullptr;
};

struct T2VRequest {
  std::string prompt;
  std::string negative_prompt;  // "" = default_negative_prompt (as the reference)
  std::string default_negative_prompt;
  int64_t frames = 81, height = 480, width = 832;
  int64_t steps = 50;
  uint64_t seed = 0;
  double guidance = 5.0;
  double shift = 5.0;
  std::string sampler = "unipc";
  Tensor noise;  // defined = use it (shape of latent_shape()) instead of drawing from the seed
};

struct T2VEvents {
  std::function<void(const std::string& stage)> on_stage;                   // "encoding prompts", ...
  std::function<void(int done, int total, double seconds)> on_step;         // after each denoising step
  std::function<void(const std::string& message)> warn;                     // e.g. a truncated prompt
};

struct T2VResult {
  Tensor latents;  // [z_dim, F', h, w] F32, the sampler's final x0
  Tensor video;    // [3, F, H, W] in [-1, 1]; undefined when decode was skipped
  std::vector<double> timesteps;
  std::string negative_prompt;  // what was encoded
  double seconds_text = 0, seconds_denoise = 0, seconds_decode = 0;
};

// [z_dim, (F-1)/stride_t + 1, H/stride_s, W/stride_s], after validate_request.
Shape latent_shape(const WanGeometry& g, const T2VRequest& r);

// Throws a message naming the option, the value and what would be valid:
// frames not 4k+1, height/width not multiples of stride_s * patch (16), steps
// < 1, non-finite guidance, shift <= 0, an unknown sampler, a noise tensor of
// the wrong shape.
void validate_request(const WanGeometry& g, const T2VRequest& r);

// torch.manual_seed(seed); torch.randn(shape, dtype=float32) on the CPU generator.
Tensor draw_noise(uint64_t seed, const Shape& shape);

// A safetensors file holding the initial noise: the tensor named "noise" or
// "latents", else the file's only tensor; [z, F', h, w] or [1, z, F', h, w];
// converted to F32. Throws naming the file, the tensor and both shapes.
Tensor read_noise_file(const std::string& path, const Shape& expected);

// Runs the whole request. Checks for Ctrl-C between steps (pipeline::Interrupted)
// and for NaN/Inf in the DiT outputs and the latents after every step
// (vidax::Error naming the step). decode = false stops after denoising.
// The request a golden file's config names (prompt, negative_prompt, frames, height, width,
// steps, seed, guidance, shift, sampler; negative_prompt and sampler optional).
T2VRequest t2v_request_from_json(const nlohmann::json& c, const std::string& default_negative_prompt);

T2VResult run_wan_t2v(const WanT2VComponents& parts, const T2VRequest& request, const T2VEvents& events = {},
                      bool decode = true);

}  // namespace vidax::pipeline
