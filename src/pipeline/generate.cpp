#include "pipeline/generate.h"

#include <chrono>
#include <cmath>
#include <optional>
#include <tuple>

#include "backend/ops.h"
#include "core/error.h"
#include "core/rng.h"
#include "dist/communicator.h"
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

Shape latent_shape(const Geometry& g, const Request& r) {
  return {g.z_dim, (r.frames - 1) / g.vae_stride_t + 1, r.height / g.vae_stride_s, r.width / g.vae_stride_s};
}

void validate_request(const Geometry& g, const Request& r) {
  const int64_t ft = g.frame_multiple();
  VIDAX_CHECK(r.frames >= 1 && (r.frames - 1) % ft == 0,
              "--frames " << r.frames << ": " << g.vae_label << " needs " << ft << "k+1 frames (e.g. "
                          << (r.frames < 1 ? std::string("1, 5 or 81")
                                           : std::to_string(std::max<int64_t>(1, (r.frames - 1) / ft * ft + 1)) +
                                                 " or " + std::to_string(((r.frames - 1) / ft + 1) * ft + 1))
                          << ")");
  const int64_t sm = g.height_multiple();
  VIDAX_CHECK(r.height >= sm && r.height % sm == 0,
              "--height " << r.height << ": must be a positive multiple of " << sm << " (VAE stride "
                          << g.vae_stride_s << " x patch " << g.patch_h << "); nearest: "
                          << nearest_multiples(r.height, sm));
  const int64_t wm = g.width_multiple();
  VIDAX_CHECK(r.width >= wm && r.width % wm == 0,
              "--width " << r.width << ": must be a positive multiple of " << wm << " (VAE stride "
                         << g.vae_stride_s << " x patch " << g.patch_w << "); nearest: "
                         << nearest_multiples(r.width, wm));
  VIDAX_CHECK(r.steps >= 1 && r.steps <= kMaxSteps,
              "--steps " << r.steps << ": must be 1.." << kMaxSteps << " (the samplers' schedules span "
                         << kMaxSteps << " training timesteps; more steps would repeat them)");
  VIDAX_CHECK(std::isfinite(r.guidance), "--guidance " << r.guidance << ": must be a finite number");
  VIDAX_CHECK(std::isfinite(r.cfg_scale) && r.cfg_scale > 0,
              "--cfg-scale " << r.cfg_scale << ": must be a positive number (1 = no classifier-free pass)");
  VIDAX_CHECK(r.cfg_from_step >= 0 && (r.cfg_to_step < 0 || r.cfg_to_step > r.cfg_from_step),
              "guidance step range [" << r.cfg_from_step << ", " << r.cfg_to_step << ") is empty or negative");
  VIDAX_CHECK(std::isfinite(r.shift) && r.shift > 0, "--shift " << r.shift << ": must be a positive number");
  (void)sampler_index(r.sampler);  // throws listing the samplers
  if (r.noise.defined())
    VIDAX_CHECK(r.noise.shape() == latent_shape(g, r),
                "noise " << r.noise.str() << " does not fit the request: " << r.frames << " frames of " << r.width
                         << "x" << r.height << " need " << shape_str(latent_shape(g, r)));
}

Tensor draw_noise(uint64_t seed, const Shape& shape) {
  TorchGenerator gen(seed);
  return gen.randn(shape, DType::F32);
}

namespace {
// The seeded generator after the initial noise: what a re-noising sampler draws from
// (flow_step_distill, as LightX2V's scheduler draws from the generator of its latents).
struct SeededNoise {
  TorchGenerator gen;
  Tensor x;
  SeededNoise(const Request& req, const Shape& shape)
      : gen(req.seed), x(req.noise.defined() ? req.noise.contiguous().to(DType::F32) : gen.randn(shape, DType::F32)) {}
};
}  // namespace

namespace {
// The images of a request against what the loaded model takes; throws naming the option.
void check_images(const Parts& parts, const Request& req) {
  const int given = (req.image.defined() ? 1 : 0) + (req.last_image.defined() ? 1 : 0);
  VIDAX_CHECK(!req.last_image.defined() || req.image.defined(),
              "--last-image needs --image (the first frame): first-last-frame models take both");
  if (parts.max_images == 0)
    VIDAX_CHECK(given == 0, "this model is text-to-video only: it takes no --image");
  VIDAX_CHECK(given <= parts.max_images, "this model takes only a first frame (--image), not --last-image");
  VIDAX_CHECK(given >= parts.min_images,
              (parts.min_images == 2 ? "this first-last-frame model needs --image and --last-image"
                                     : "this image-to-video model needs --image (the first frame)"));
  for (const Tensor* t : {&req.image, &req.last_image})
    if (t->defined())
      VIDAX_CHECK(t->dim() == 3 && t->size(0) == 3 && t->dtype() == DType::F32,
                  "an input image must be [3, H, W] F32, got " << t->str());
  VIDAX_CHECK(!req.two_stage || parts.two_stage, "--two-stage: this model has no two-stage pipeline");
  VIDAX_CHECK(req.key_images.empty() || parts.takes_key_images,
              "this model takes no images at chosen frames (--image-frame / --image-strength, or --image given "
              "more than once)");
  for (const KeyImage& k : req.key_images)
    VIDAX_CHECK(k.image.defined() && k.image.dim() == 3 && k.image.size(0) == 3 && k.image.dtype() == DType::F32,
                "an input image must be [3, H, W] F32, got " << (k.image.defined() ? k.image.str() : "none"));
  VIDAX_CHECK(req.reference_videos.empty() || parts.takes_reference_videos,
              "this model takes no reference videos (--reference-video / --video-conditioning / --video)");
  for (const ReferenceVideo& v : req.reference_videos)
    VIDAX_CHECK(v.video.defined() && v.video.dim() == 4 && v.video.size(0) == 3 && v.video.dtype() == DType::F32,
                "a reference video must be [3, F, H, W] F32, got " << (v.video.defined() ? v.video.str() : "none"));
}

// The control inputs of a request against what the loaded model takes; throws naming the option.
void check_control(const Parts& parts, const Request& req) {
  check_control_inputs(req);
  VIDAX_CHECK(!req.has_control() || parts.condition_on_control,
              "this model takes no --control-video, --mask-video or --reference-image (control-video models only, "
              "e.g. VACE)");
}
}  // namespace

void check_control_inputs(const Request& req) {
  VIDAX_CHECK(!req.control_mask.defined() || req.control_video.defined(),
              "--mask-video needs --control-video: the mask marks which pixels of the control video are regenerated");
  for (const Tensor* t : {&req.control_video, &req.control_mask})
    if (t->defined())
      VIDAX_CHECK(t->dim() == 4 && t->size(0) == 3 && t->size(1) >= 1 && t->dtype() == DType::F32,
                  "a control or mask video must be [3, F, H, W] F32, got " << t->str());
  if (req.control_mask.defined()) {
    const Tensor &v = req.control_video, &m = req.control_mask;
    VIDAX_CHECK(m.size(1) == v.size(1), "--mask-video has " << m.size(1) << " frames but --control-video has "
                                                            << v.size(1) << ": the mask must have one frame per "
                                                               "frame of the control video");
    VIDAX_CHECK(m.size(2) == v.size(2) && m.size(3) == v.size(3),
                "--mask-video is " << m.size(3) << "x" << m.size(2) << " but --control-video is " << v.size(3) << "x"
                                   << v.size(2) << ": the mask must have the control video's size");
  }
  VIDAX_CHECK(!req.control_video.defined() || req.control_fps > 0,
              "--control-video: the frame rate is " << req.control_fps << " (the file gave none)");
  for (const Tensor& r : req.reference_images)
    VIDAX_CHECK(r.dim() == 3 && r.size(0) == 3 && r.dtype() == DType::F32,
                "a reference image must be [3, H, W] F32, got " << r.str());
  VIDAX_CHECK(std::isfinite(req.control_scale), "--control-scale " << req.control_scale << ": must be a finite number");
}

Result run_generation(const Parts& parts, const Request& request, const Events& ev, bool decode) {
  check_images(parts, request);
  check_control(parts, request);
  const bool control = static_cast<bool>(parts.condition_on_control);
  {  // The noise of an image or control request has the size its inputs give; checked once that is known.
    Request r = request;
    if (request.image.defined() || control) r.noise = Tensor();
    validate_request(parts.geometry, r);
  }
  // A family that owns its run (Parts::run): the checks above, then its own steps.
  if (parts.run) {
    Result res = parts.run(request, ev, decode);
    if (res.height == 0) res.height = request.height;
    if (res.width == 0) res.width = request.width;
    if (res.frames == 0) res.frames = request.frames;
    return res;
  }
  Request req = request;  // image-to-video: with the size its images give
  auto stage = [&](const std::string& s) {
    if (ev.on_stage) ev.on_stage(s);
  };
  // A signal (process-wide) or the caller's cancel (this run only), at the same boundaries.
  auto stop_point = [&](const std::string& where) {
    throw_if_interrupted(where);
    if (ev.cancelled && ev.cancelled()) throw Cancelled("cancelled during " + where);
  };
  Result res;
  std::unique_ptr<sched::Scheduler> sampler = make_sampler(req.sampler, req.steps, req.shift);
  res.timesteps = sampler->timesteps();
  const int total = static_cast<int>(res.timesteps.size());
  // The guidance of each step: one strategy, or one per denoiser when the family has several and
  // the request gives each its scale (Request::guidance_scales).
  const size_t denoisers = parts.denoiser_index ? parts.denoiser_count : 1;
  VIDAX_CHECK(req.guidance_scales.empty() || req.guidance_scales.size() == denoisers,
              req.guidance_scales.size() << " guidance scales given, but the model has " << denoisers
                                         << " denoiser" << (denoisers == 1 ? "" : "s") << " (one scale each)");
  std::vector<std::unique_ptr<Guidance>> guidances;
  // Parts::guidance_below_one_is_one: a classifier-free scale under 1 runs as 1 (one pass).
  auto scale_of = [&](double s) { return parts.guidance_below_one_is_one && s < 1.0 ? 1.0 : s; };
  if (req.guidance_scales.empty())
    guidances.push_back(
        make_guidance(parts.guidance, {scale_of(req.guidance), req.cfg_from_step, req.cfg_to_step, req.cfg_scale}));
  for (double s : req.guidance_scales)
    guidances.push_back(make_guidance(parts.guidance, {scale_of(s), req.cfg_from_step, req.cfg_to_step, req.cfg_scale}));
  auto denoiser_at = [&](int i) -> size_t {
    if (!parts.denoiser_index) return 0;
    const size_t d = parts.denoiser_index(i, res.timesteps[static_cast<size_t>(i)]);
    VIDAX_CHECK(d < denoisers, "the family's denoiser_index gave " << d << " of " << denoisers << " denoisers");
    return d;
  };
  auto guidance_at = [&](int i) -> const Guidance& {
    return *guidances[guidances.size() == 1 ? 0 : denoiser_at(i)];
  };
  res.denoiser_calls_by_index.assign(denoisers, 0);
  res.denoiser_steps.assign(denoisers, {});
  bool any_uncond = false;
  for (int i = 0; i < total; ++i) any_uncond |= guidance_at(i).needs_uncond(i, total);

  // 0. Images (image-to-video): the family's preprocessing, image encoder and conditioning
  // latent, once per run. They fix the video's size.
  std::optional<ImageConditioning> images;
  if (req.image.defined()) {
    stage(req.last_image.defined() ? "encoding the first and last frames" : "encoding the image");
    const auto ti = Clock::now();
    images = parts.condition_on_images({req.image, req.last_image, req.frames, req.height, req.width});
    for (const std::string& n : images->notes)
      if (ev.warn) ev.warn(n);
    res.taps = images->taps;
    req.height = images->height;
    req.width = images->width;
    validate_request(parts.geometry, req);  // the derived size, and a noise tensor against it
    if (parts.after_images) parts.after_images();
    res.seconds_images = seconds_since(ti);
    stop_point("image encoding");
  }
  // 0'. Control video (VACE): its frames, mask and reference images, once per run. They may fix
  // the video's size and frame count, and add latent frames before the video's.
  if (control) {
    stage("encoding the control video");
    const auto ti = Clock::now();
    images = parts.condition_on_control({req.control_video, req.control_fps, req.control_mask, req.reference_images,
                                         req.control_scale, req.frames, req.height, req.width});
    for (const std::string& n : images->notes)
      if (ev.warn) ev.warn(n);
    res.taps = images->taps;
    req.height = images->height;
    req.width = images->width;
    if (images->frames > 0) req.frames = images->frames;
    Request r = req;
    r.noise = Tensor();  // checked below against the whole latent (with the leading frames)
    validate_request(parts.geometry, r);
    res.seconds_images = seconds_since(ti);
    stop_point("control video encoding");
  }
  res.height = req.height;
  res.width = req.width;
  res.frames = req.frames;

  // 1. Text, once per run (the reference encodes the prompt, then the negative prompt).
  stage("encoding the prompts");
  const auto t0 = Clock::now();
  auto warn_truncated = [&](const EncodedPrompt& e, const char* which) {
    if (e.truncated && ev.warn)
      ev.warn(msg() << "the " << which << " is longer than " << parts.geometry.text_len
                    << " tokens; it was truncated to that length (as the reference does)");
  };
  EncodedPrompt cond = parts.encode_prompt(req.prompt);
  warn_truncated(cond, "prompt");
  stop_point("prompt encoding");
  EncodedPrompt uncond;
  if (any_uncond) {
    res.negative_prompt = req.negative_prompt.empty() ? req.default_negative_prompt : req.negative_prompt;
    uncond = parts.encode_negative_prompt ? parts.encode_negative_prompt(res.negative_prompt)
                                          : parts.encode_prompt(res.negative_prompt);
    warn_truncated(uncond, "negative prompt");
  }
  res.seconds_text = seconds_since(t0);
  stop_point("prompt encoding");
  if (parts.after_encoding) parts.after_encoding();

  // 2. Noise.
  Shape shape = latent_shape(parts.geometry, req);
  const int64_t leading = images ? images->leading_latent_frames : 0;
  shape[1] += leading;
  if (control && req.noise.defined())
    VIDAX_CHECK(req.noise.shape() == shape, "noise " << req.noise.str() << " does not fit the request: "
                                                     << req.frames << " frames of " << req.width << "x" << req.height
                                                     << (leading ? " and the reference images" : "") << " need "
                                                     << shape_str(shape));
  SeededNoise noise(req, shape);
  Tensor x = noise.x;
  // Image-fixed latent frames (ImageConditioning::fixed_frames): put in place of x's first frames,
  // after the noise is drawn and after every step. Checked and widened once; the latent keeps its shape.
  Tensor fixed;
  if (images && images->fixed_frames.defined()) {
    const Tensor& z = images->fixed_frames;
    VIDAX_CHECK(z.dim() == 4 && x.dim() == 4 && z.size(0) == x.size(0) && z.size(1) <= x.size(1) &&
                    z.size(2) == x.size(2) && z.size(3) == x.size(3),
                "the image's fixed latent frames " << z.str() << " do not fit the latent " << x.str());
    fixed = z.to(DType::F32);
  }
  auto fix_frames = [&](const Tensor& lat) {
    if (!fixed.defined()) return lat;
    const int64_t n = fixed.size(1);
    if (n == lat.size(1)) return fixed;
    return ops::concat({fixed, lat.slice(1, n, lat.size(1))}, 1).contiguous();
  };
  if (ev.on_noise) ev.on_noise(0, x);
  x = fix_frames(x);
  sampler->set_generator(&noise.gen);
  int step_now = 0;  // the 1-based step whose sampler update is drawing
  if (ev.on_noise || ev.replace_noise)
    sampler->set_noise_source([&](const Shape& s) {
      Tensor n = ev.replace_noise ? ev.replace_noise(step_now, s) : Tensor();
      if (!n.defined()) n = noise.gen.randn(s, DType::F32);
      if (ev.on_noise) ev.on_noise(step_now, n);
      return n;
    });

  // 3. Denoising.
  stage("denoising");
  auto t1 = Clock::now();
  for (int i = 0; i < total; ++i) {
    auto ts = Clock::now();
    dist::mark_denoising_step(i + 1);  // VIDAX_TEST_FAULT (tests only): a rank failing inside this step
    const double t = res.timesteps[static_cast<size_t>(i)];
    const Guidance& guidance = guidance_at(i);
    const double embedded = guidance.embedded_scale();
    const size_t denoiser = denoiser_at(i);
    res.denoiser_steps[denoiser].push_back(i);
    auto predict = [&](const EncodedPrompt& p) {
      ++res.denoiser_calls;
      ++res.denoiser_calls_by_index[denoiser];
      const double t_next = i + 1 < total ? res.timesteps[static_cast<size_t>(i + 1)] : 0.0;
      Tensor out = parts.predict({x, t, p, embedded, images ? &*images : nullptr, t_next});
      return to_scheduler_input(parts.prediction, out, x, *sampler, i);
    };
    Tensor v_cond, v_uncond;
    if (guidance.needs_uncond(i, total)) {
      std::tie(v_cond, v_uncond) = nn::cfg_parallel_branches(
          parts.cfg_group, [&](int branch) { return predict(branch == 0 ? cond : uncond); });
      check_finite(v_cond, "the DiT output for the prompt", i + 1, total, t);
      check_finite(v_uncond, "the DiT output for the negative prompt", i + 1, total, t);
    } else {
      v_cond = predict(cond);  // every rank of a cfg group runs it: the latents stay replicated
      check_finite(v_cond, "the DiT output for the prompt", i + 1, total, t);
    }
    step_now = i + 1;
    x = fix_frames(sampler->step(guidance.combine(v_cond, v_uncond, i, total), i, x));
    check_finite(x, "the latent after the sampler update", i + 1, total, t);
    if (ev.on_latent) ev.on_latent(i + 1, x);
    if (ev.on_step) ev.on_step(i + 1, total, seconds_since(ts));
    stop_point(msg() << "denoising step " << i + 1 << "/" << total);
  }
  res.seconds_denoise = seconds_since(t1);
  res.latents = x;
  if (parts.after_denoising) parts.after_denoising();

  // 4. VAE decode.
  if (decode) {
    stage("decoding the video");
    auto t2 = Clock::now();
    auto tc = Clock::now();
    const Parts::DecodeProgress progress = [&](int64_t done, int64_t total) {
      if (ev.on_decode) ev.on_decode(static_cast<int>(done), static_cast<int>(total), seconds_since(tc));
      tc = Clock::now();
    };
    // Leading latent frames (VACE's reference images) are not part of the video.
    res.video = parts.decode(leading ? x.slice(1, leading, x.size(1)).contiguous() : x, progress);
    res.seconds_decode = seconds_since(t2);
    stop_point("VAE decoding");
  }
  return res;
}

Request request_from_json(const nlohmann::json& c, const std::string& default_negative_prompt) {
  Request r;
  r.prompt = c.at("prompt");
  r.negative_prompt = c.value("negative_prompt", std::string());
  r.default_negative_prompt = default_negative_prompt;
  r.frames = c.at("frames");
  r.height = c.at("height");
  r.width = c.at("width");
  r.steps = c.at("steps");
  r.seed = c.at("seed");
  r.guidance = c.at("guidance");
  if (c.contains("guidance_scales")) r.guidance_scales = c.at("guidance_scales").get<std::vector<double>>();
  r.shift = c.at("shift");
  r.sampler = c.value("sampler", std::string("unipc"));
  r.cfg_scale = c.value("cfg_scale", 1.0);
  return r;
}

}  // namespace vidax::pipeline
