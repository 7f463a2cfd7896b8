#include "pipeline/wan_t2v.h"

#include <chrono>
#include <cmath>

#include "backend/ops.h"
#include "core/error.h"
#include "core/rng.h"
#include "nn/parallel_cfg.h"
#include "pipeline/interrupt.h"
#include "pipeline/sampler.h"

namespace vidax::pipeline {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) {
  return std::chrono::duration<double>(Clock::now() - t0).count();
}

// The nearest valid values around v for a "multiple of m" rule, for messages.
std::string nearest_multiples(int64_t v, int64_t m) {
  const int64_t lo = v / m * m, hi = lo + m;
  if (lo <= 0) return std::to_string(hi);
  return std::to_string(lo) + " or " + std::to_string(hi);
}

void check_finite(const Tensor& t, const std::string& what, int step, int total, double timestep) {
  if (ops::all_finite(t)) return;
  throw Error(msg() << what << " contains NaN or Inf at denoising step " << step << "/" << total
                    << " (model timestep " << timestep << "); stopping. With --precision bf16, try fp32; "
                    << "otherwise check the weights (vidax inspect) and the noise file");
}

}  // namespace

Shape latent_shape(const WanGeometry& g, const T2VRequest& r) {
  return {g.z_dim, (r.frames - 1) / g.vae_stride_t + 1, r.height / g.vae_stride_s, r.width / g.vae_stride_s};
}

void validate_request(const WanGeometry& g, const T2VRequest& r) {
  const int64_t ft = g.vae_stride_t * g.patch_t;
  VIDAX_CHECK(r.frames >= 1 && (r.frames - 1) % ft == 0,
              "--frames " << r.frames << ": the Wan VAE needs " << ft << "k+1 frames (e.g. "
                          << (r.frames < 1 ? std::string("1, 5 or 81")
                                           : std::to_string(std::max<int64_t>(1, (r.frames - 1) / ft * ft + 1)) +
                                                 " or " + std::to_string(((r.frames - 1) / ft + 1) * ft + 1))
                          << ")");
  const int64_t sm = g.vae_stride_s * g.patch_h;
  VIDAX_CHECK(r.height >= sm && r.height % sm == 0,
              "--height " << r.height << ": must be a positive multiple of " << sm << " (VAE stride "
                          << g.vae_stride_s << " x patch " << g.patch_h << "); nearest: "
                          << nearest_multiples(r.height, sm));
  const int64_t wm = g.vae_stride_s * g.patch_w;
  VIDAX_CHECK(r.width >= wm && r.width % wm == 0,
              "--width " << r.width << ": must be a positive multiple of " << wm << " (VAE stride "
                         << g.vae_stride_s << " x patch " << g.patch_w << "); nearest: "
                         << nearest_multiples(r.width, wm));
  VIDAX_CHECK(r.steps >= 1, "--steps " << r.steps << ": needs at least 1 step");
  VIDAX_CHECK(std::isfinite(r.guidance), "--guidance " << r.guidance << ": must be a finite number");
  VIDAX_CHECK(std::isfinite(r.shift) && r.shift > 0, "--shift " << r.shift << ": must be a positive number");
  bool known = false;
  std::string names;
  for (const auto& n : sampler_names()) {
    known |= n == r.sampler;
    names += (names.empty() ? "" : ", ") + n;
  }
  VIDAX_CHECK(known, "--sampler " << r.sampler << ": unknown; choose one of " << names);
  if (r.noise.defined())
    VIDAX_CHECK(r.noise.shape() == latent_shape(g, r),
                "noise " << r.noise.str() << " does not fit the request: " << r.frames << " frames of " << r.width
                         << "x" << r.height << " need " << shape_str(latent_shape(g, r)));
}

Tensor draw_noise(uint64_t seed, const Shape& shape) {
  TorchGenerator gen(seed);
  return gen.randn(shape, DType::F32);
}

T2VResult run_wan_t2v(const WanT2VComponents& parts, const T2VRequest& req, const T2VEvents& ev, bool decode) {
  validate_request(parts.geometry, req);
  auto stage = [&](const std::string& s) {
    if (ev.on_stage) ev.on_stage(s);
  };
  T2VResult res;
  res.negative_prompt = req.negative_prompt.empty() ? req.default_negative_prompt : req.negative_prompt;

  // 1. Text, once per run (the reference encodes the prompt, then the negative prompt).
  stage("encoding the prompts");
  auto t0 = Clock::now();
  EncodedPrompt cond = parts.encode_prompt(req.prompt);
  if (cond.truncated && ev.warn)
    ev.warn(msg() << "the prompt is longer than " << parts.geometry.text_len
                  << " tokens; it was truncated to that length (as the reference does)");
  throw_if_interrupted("prompt encoding");
  EncodedPrompt uncond = parts.encode_prompt(res.negative_prompt);
  if (uncond.truncated && ev.warn)
    ev.warn(msg() << "the negative prompt is longer than " << parts.geometry.text_len
                  << " tokens; it was truncated to that length (as the reference does)");
  res.seconds_text = seconds_since(t0);
  throw_if_interrupted("prompt encoding");

  // 2. Noise.
  const Shape shape = latent_shape(parts.geometry, req);
  Tensor x = req.noise.defined() ? req.noise.contiguous().to(DType::F32) : draw_noise(req.seed, shape);

  // 3. Denoising with classifier-free guidance (always on, as the reference).
  std::unique_ptr<sched::Scheduler> sampler = make_sampler(req.sampler, req.steps, req.shift);
  res.timesteps = sampler->timesteps();
  const int total = static_cast<int>(res.timesteps.size());
  stage("denoising");
  auto t1 = Clock::now();
  for (int i = 0; i < total; ++i) {
    auto ts = Clock::now();
    const double t = res.timesteps[static_cast<size_t>(i)];
    auto [v_cond, v_uncond] = nn::cfg_parallel_branches(
        parts.cfg_group, [&](int branch) { return parts.predict(x, t, branch == 0 ? cond : uncond); });
    check_finite(v_cond, "the DiT output for the prompt", i + 1, total, t);
    check_finite(v_uncond, "the DiT output for the negative prompt", i + 1, total, t);
    // noise_pred_uncond + guide_scale * (noise_pred_cond - noise_pred_uncond), in that order.
    Tensor v = ops::add(v_uncond, ops::scale(ops::sub(v_cond, v_uncond), req.guidance));
    x = sampler->step(v, i, x);
    check_finite(x, "the latent after the sampler update", i + 1, total, t);
    if (ev.on_step) ev.on_step(i + 1, total, seconds_since(ts));
    throw_if_interrupted(msg() << "denoising step " << i + 1 << "/" << total);
  }
  res.seconds_denoise = seconds_since(t1);
  res.latents = x;

  // 4. VAE decode.
  if (decode) {
    stage("decoding the video");
    auto t2 = Clock::now();
    res.video = parts.decode(x);
    res.seconds_decode = seconds_since(t2);
    throw_if_interrupted("VAE decoding");
  }
  return res;
}

T2VRequest t2v_request_from_json(const nlohmann::json& c, const std::string& default_negative_prompt) {
  T2VRequest r;
  r.prompt = c.at("prompt");
  r.negative_prompt = c.value("negative_prompt", std::string());
  r.default_negative_prompt = default_negative_prompt;
  r.frames = c.at("frames");
  r.height = c.at("height");
  r.width = c.at("width");
  r.steps = c.at("steps");
  r.seed = c.at("seed");
  r.guidance = c.at("guidance");
  r.shift = c.at("shift");
  r.sampler = c.value("sampler", std::string("unipc"));
  return r;
}

}  // namespace vidax::pipeline
