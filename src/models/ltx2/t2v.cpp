// The LTX-2 one-stage text-to-video+audio denoising (t2v.h).
#include "models/ltx2/t2v.h"

#include <algorithm>
#include <cmath>

#include "backend/ops.h"
#include "core/error.h"
#include "models/ltx2/rope.h"
#include "sched/ltx2_schedule.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

namespace {

constexpr int64_t kVideoChannels = 128;  // VideoLatentShape.from_pixel_shape's latent_channels default
constexpr int64_t kAudioChannels = 8, kAudioMelBins = 16;         // AudioLatentShape's defaults
constexpr double kAudioLatentsPerSecond = 16000.0 / 160.0 / 4.0;  // sample_rate / hop / downsample
constexpr int64_t kTime = 8, kSpace = 32;                         // VIDEO_SCALE_FACTORS

// Positions as the DiT takes them, repeated for `batch` samples: [batch, n_axes, T, 2].
Tensor positions_tensor(const Positions& p, int64_t batch) {
  std::vector<float> v(static_cast<size_t>(batch * p.n_axes * p.tokens * 2));
  size_t k = 0;
  for (int64_t b = 0; b < batch; ++b)
    for (int64_t a = 0; a < p.n_axes; ++a)
      for (int64_t t = 0; t < p.tokens; ++t) {
        v[k++] = p.start[static_cast<size_t>(a * p.tokens + t)];
        v[k++] = p.end[static_cast<size_t>(a * p.tokens + t)];
      }
  return Tensor::from_f32(v, {batch, p.n_axes, p.tokens, 2});
}

Tensor repeat_batch(const Tensor& x, int64_t n) { return n == 1 ? x : ops::concat(std::vector<Tensor>(n, x), 0); }

void check_context(const Tensor& t, const char* name) {
  VIDAX_CHECK(t.defined() && t.dim() == 3 && t.size(0) == 1 && t.dtype() == DType::F32,
              "LTX-2 t2v: " << name << " must be a [1, L, D] F32 context, found " << (t.defined() ? t.str() : "none"));
}

}  // namespace

T2VRequest T2VRequest::from_json(const nlohmann::json& j) {
  VIDAX_CHECK(j.is_object(), "LTX-2 t2v request: expected a JSON object, found " << j.dump());
  T2VRequest r;
  r.height = translate::required<int64_t>(j, "height");
  r.width = translate::required<int64_t>(j, "width");
  r.num_frames = translate::required<int64_t>(j, "num_frames");
  r.frame_rate = translate::required<double>(j, "frame_rate");
  r.num_inference_steps = translate::required<int64_t>(j, "num_inference_steps");
  const int64_t seed = translate::required<int64_t>(j, "seed");
  r.seed = static_cast<uint64_t>(seed);  // torch.manual_seed: a negative seed is its two's complement
  VIDAX_CHECK(j.contains("video_guider_params") && j.contains("audio_guider_params"),
              "LTX-2 t2v request: video_guider_params and audio_guider_params are required (MultiModalGuiderParams)");
  r.video_guider = GuiderParams::from_json(j.at("video_guider_params"));
  r.audio_guider = GuiderParams::from_json(j.at("audio_guider_params"));
  return r;
}

void check_t2v_request(const T2VRequest& r) {
  // assert_resolution(height, width, is_two_stage=False).
  if (r.height < kSpace || r.width < kSpace || r.height % kSpace != 0 || r.width % kSpace != 0) {
    auto near = [](int64_t v) {
      const int64_t lo = std::max<int64_t>(kSpace, v / kSpace * kSpace);
      const int64_t hi = std::max<int64_t>(kSpace, (v + kSpace - 1) / kSpace * kSpace);
      return lo == hi ? std::to_string(lo) : std::to_string(lo) + " or " + std::to_string(hi);
    };
    throw Error(msg() << "LTX-2 t2v: resolution (" << r.height << "x" << r.width
                      << ") is not divisible by 32: for one-stage pipelines height and width must be multiples of 32"
                      << " (nearest valid: height " << near(r.height) << ", width " << near(r.width) << ")");
  }
  if (r.num_frames < 1 || (r.num_frames - 1) % kTime != 0) {
    const int64_t lo = r.num_frames < 1 ? 1 : (r.num_frames - 1) / kTime * kTime + 1;
    const int64_t hi = r.num_frames < 1 ? 1 : lo + kTime;
    throw Error(msg() << "LTX-2 t2v: num_frames " << r.num_frames
                      << " breaks the VAE's frame rule (8k + 1 frames; nearest valid: "
                      << (lo == hi ? std::to_string(lo) : std::to_string(lo) + " or " + std::to_string(hi)) << ")");
  }
  VIDAX_CHECK(std::isfinite(r.frame_rate) && r.frame_rate > 0,
              "LTX-2 t2v: frame_rate must be a positive number, found " << r.frame_rate);
  VIDAX_CHECK(r.num_inference_steps >= 1,
              "LTX-2 t2v: num_inference_steps must be >= 1, found " << r.num_inference_steps);
}

LatentGrid latent_grid(const T2VRequest& r) {
  check_t2v_request(r);
  LatentGrid g;
  g.video_frames = (r.num_frames - 1) / kTime + 1;
  g.video_height = r.height / kSpace;
  g.video_width = r.width / kSpace;
  // round(duration * latents_per_second): Python's round, half to even (the default FE_TONEAREST).
  const double duration = static_cast<double>(r.num_frames) / r.frame_rate;
  g.audio_frames = static_cast<int64_t>(std::nearbyint(duration * kAudioLatentsPerSecond));
  VIDAX_CHECK(g.audio_frames >= 1, "LTX-2 t2v: " << r.num_frames << " frames at " << r.frame_rate
                                                 << " fps give no audio latent frame (round(" << duration
                                                 << " s * 25) = 0)");
  return g;
}

VideoTarget video_target(const T2VRequest& r) {
  const LatentGrid g = latent_grid(r);
  VideoTarget t;
  t.frames = g.video_frames;
  t.height = g.video_height;
  t.width = g.video_width;
  t.channels = kVideoChannels;
  t.num_frames = r.num_frames;
  t.fps = r.frame_rate;
  return t;
}

T2VLatents denoise_t2v(const LTXModel& model, const T2VRequest& r, const PromptContexts& c, TorchGenerator& gen,
                       bool keep_steps, const std::vector<ImageConditioning>& images, const AfterStep& after_step,
                       const DenoiseHooks& hooks) {
  const LatentGrid g = latent_grid(r);
  const DiTConfig& cfg = model.config();
  VIDAX_CHECK(cfg.model_type == ModelType::AudioVideo,
              "LTX-2 t2v: the text-to-video+audio pipeline needs the audio-video model, found '"
                  << model_type_name(cfg.model_type) << "'");
  VIDAX_CHECK(cfg.in_channels == kVideoChannels && cfg.out_channels == kVideoChannels &&
                  cfg.audio_in_channels == kAudioChannels * kAudioMelBins &&
                  cfg.audio_out_channels == kAudioChannels * kAudioMelBins,
              "LTX-2 t2v: the pipeline's latents have 128 video channels and 8 x 16 audio values per frame; the DiT "
              "takes "
                  << cfg.in_channels << " / " << cfg.out_channels << " video and " << cfg.audio_in_channels << " / "
                  << cfg.audio_out_channels << " audio channels");
  check_context(c.v_context_p, "v_context_p");
  check_context(c.a_context_p, "a_context_p");
  // _guided_denoise: a guider with cfg != 1 needs its negative context; when only the other stream's
  // guider runs the uncond pass, a missing negative context is replaced by the positive one.
  const bool needs_neg = r.video_guider.do_unconditional() || r.audio_guider.do_unconditional();
  VIDAX_CHECK(!r.video_guider.do_unconditional() || c.v_context_n.defined(),
              "LTX-2 t2v: the video guider's cfg_scale " << r.video_guider.cfg_scale
                                                         << " needs the negative video context (v_context_n)");
  VIDAX_CHECK(!r.audio_guider.do_unconditional() || c.a_context_n.defined(),
              "LTX-2 t2v: the audio guider's cfg_scale " << r.audio_guider.cfg_scale
                                                         << " needs the negative audio context (a_context_n)");
  const Tensor v_neg = c.v_context_n.defined() ? c.v_context_n : c.v_context_p;
  const Tensor a_neg = c.a_context_n.defined() ? c.a_context_n : c.a_context_p;
  if (needs_neg) {
    check_context(v_neg, "v_context_n");
    check_context(a_neg, "a_context_n");
    // The passes' contexts are concatenated along the batch (torch.cat): same length and width.
    VIDAX_CHECK(c.v_context_p.shape() == v_neg.shape() && c.a_context_p.shape() == a_neg.shape(),
                "LTX-2 t2v: the positive and negative contexts must have the same shape (they are batched), found "
                "video "
                    << c.v_context_p.str() << " / " << v_neg.str() << ", audio " << c.a_context_p.str() << " / "
                    << a_neg.str());
  }

  T2VLatents out;
  sched::Ltx2ScheduleOptions so;
  so.steps = r.num_inference_steps;
  out.sigmas = sched::ltx2_sigmas(so);
  // GaussianNoiser: lerp(zeros, noise, 1) then lerp(clean = zeros, ., mask = 1) is the noise itself.
  const int64_t tv = g.video_tokens(), ta = g.audio_frames;
  // The state path (conditioning.h) with images, or for a DiT with the keyframe embedding: the
  // reference always marks the first latent frame's tokens (VideoLatentTools._first_frame_keyframes_mask).
  const bool conditioned = !images.empty() || cfg.use_keyframes_abs_pos_embedding;
  if (conditioned) out.video_state = conditioned_video_state(video_target(r), images);
  const VideoLatentState& vs = out.video_state;
  auto drawn = [&](const char* stream, Tensor t) { return hooks.noise ? hooks.noise(stream, t) : t; };
  Tensor video = drawn("video", gen.randn({1, conditioned ? vs.tokens() : tv, kVideoChannels}));
  Tensor audio = drawn("audio", gen.randn({1, ta, kAudioChannels * kAudioMelBins}));
  if (conditioned) {  // GaussianNoiser: lerp(clean, noise, denoise_mask)
    VideoLatentState noised = vs;
    add_noise(noised, video);
    video = noised.latent;
  }
  out.video_noise = video;
  out.audio_noise = audio;
  const Positions vpos =
      conditioned ? vs.positions : video_positions(g.video_frames, g.video_height, g.video_width, r.frame_rate);
  const Positions apos = audio_positions(ta);

  const GuiderParams& vg = r.video_guider;
  const GuiderParams& ag = r.audio_guider;
  Tensor last_v, last_a;
  for (int64_t i = 0; i + 1 < static_cast<int64_t>(out.sigmas.size()); ++i) {
    const float sigma = out.sigmas[static_cast<size_t>(i)];
    const bool v_skip = vg.should_skip_step(i), a_skip = ag.should_skip_step(i);
    Tensor dv = last_v, da = last_a, cond_v, cond_a;
    if (!(v_skip && a_skip)) {
      const std::vector<Pass> passes = guidance_passes(vg, ag);
      const int64_t n = static_cast<int64_t>(passes.size());
      std::vector<Tensor> vctx, actx;
      for (Pass p : passes) {
        vctx.push_back(p == Pass::Uncond ? v_neg : c.v_context_p);
        actx.push_back(p == Pass::Uncond ? a_neg : c.a_context_p);
      }
      const Tensor sig = Tensor::full({n}, sigma, DType::F32);
      // modality_from_latent_state: timesteps = denoise_mask * sigma (all ones without images).
      Modality vm{repeat_batch(video, n), sig, conditioned ? timesteps_from_mask(vs.denoise_mask, sigma, n) : sig,
                  positions_tensor(vpos, n), ops::concat(vctx, 0)};
      if (cfg.use_keyframes_abs_pos_embedding) vm.keyframes_mask = repeat_batch(vs.keyframes_mask, n);
      Modality am{repeat_batch(audio, n), sig, sig, positions_tensor(apos, n), ops::concat(actx, 0)};
      vm.enabled = !v_skip;
      am.enabled = !a_skip;
      const bool perturbs =
          std::any_of(passes.begin(), passes.end(), [](Pass p) { return p == Pass::Perturbed || p == Pass::Modality; });
      const Tensor masks = perturbation_masks(passes, vg, ag, cfg.num_layers, 1);
      const DiTOutput y = model.forward(&vm, &am, perturbs ? &masks : nullptr);
      // X0Model: to_denoised(latent, velocity, timesteps = denoise mask (ones) * sigma).
      const Tensor x0v = conditioned ? to_denoised_tokens(vm.latent, y.video, vm.timesteps)
                                     : to_denoised(vm.latent, y.video, sigma);
      const Tensor x0a = to_denoised(am.latent, y.audio, sigma);
      auto pass_of = [&](const Tensor& x0, Pass which, Tensor& keep) -> const Tensor* {
        for (int64_t k = 0; k < n; ++k)
          if (passes[static_cast<size_t>(k)] == which) {
            keep = x0.slice(0, k, k + 1).contiguous();
            return &keep;
          }
        return nullptr;
      };
      Tensor cv, uv, pv, mv, ca, ua, pa, ma;
      pass_of(x0v, Pass::Cond, cv);
      pass_of(x0a, Pass::Cond, ca);
      const Tensor* u_v = pass_of(x0v, Pass::Uncond, uv);
      const Tensor* p_v = pass_of(x0v, Pass::Perturbed, pv);
      const Tensor* m_v = pass_of(x0v, Pass::Modality, mv);
      const Tensor* u_a = pass_of(x0a, Pass::Uncond, ua);
      const Tensor* p_a = pass_of(x0a, Pass::Perturbed, pa);
      const Tensor* m_a = pass_of(x0a, Pass::Modality, ma);
      if (!v_skip) dv = guide(vg, cv, u_v, p_v, m_v);
      if (!a_skip) da = guide(ag, ca, u_a, p_a, m_a);
      cond_v = cv;
      cond_a = ca;
    }
    VIDAX_CHECK(dv.defined() && da.defined(), "LTX-2 t2v: step " << i << " skipped before any denoised sample");
    last_v = dv;
    last_a = da;
    // post_process_latent: with denoise mask 1 (no images) it keeps the denoised sample as it is.
    const Tensor dv_kept = conditioned ? post_process_latent(dv, vs.denoise_mask, vs.clean_latent) : dv;
    video = sched::ltx2_euler_step(video, dv_kept, out.sigmas, i);
    audio = sched::ltx2_euler_step(audio, da, out.sigmas, i);
    if (keep_steps) out.steps.push_back({video, audio, dv_kept, da, cond_v, cond_a});
    if (hooks.step) hooks.step(i + 1, sigma, video, audio);
    if (after_step) after_step(i + 1, static_cast<int64_t>(out.sigmas.size()) - 1);
  }
  // clear_conditioning (the appended tokens dropped), then unpatchify: b (f h w) c -> b c f h w; b t (c f) -> b c t f.
  if (conditioned) video = video.slice(1, 0, tv).contiguous();
  out.video = video.reshape({1, g.video_frames, g.video_height, g.video_width, kVideoChannels})
                  .permute({0, 4, 1, 2, 3})
                  .contiguous();
  out.audio = audio.reshape({1, ta, kAudioChannels, kAudioMelBins}).permute({0, 2, 1, 3}).contiguous();
  return out;
}

}  // namespace vidax::ltx2
