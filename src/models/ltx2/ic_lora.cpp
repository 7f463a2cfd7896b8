// The LTX-2 IC-LoRA pipeline's stage 1 (ic_lora.h).
#include "models/ltx2/ic_lora.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "models/ltx2/guidance.h"
#include "models/ltx2/rope.h"
#include "sched/ltx2_schedule.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

namespace {

constexpr int64_t kTwoStage = 64;  // assert_resolution(is_two_stage=True)

// LatentState.positions as the DiT takes them: [1, n_axes, T, 2].
Tensor positions_tensor(const Positions& p) {
  std::vector<float> v;
  v.reserve(static_cast<size_t>(p.n_axes * p.tokens * 2));
  for (int64_t a = 0; a < p.n_axes; ++a)
    for (int64_t t = 0; t < p.tokens; ++t) {
      v.push_back(p.start[static_cast<size_t>(a * p.tokens + t)]);
      v.push_back(p.end[static_cast<size_t>(a * p.tokens + t)]);
    }
  return Tensor::from_f32(v, {1, p.n_axes, p.tokens, 2});
}

void check_context(const Tensor& t, const char* name) {
  VIDAX_CHECK(t.defined() && t.dim() == 3 && t.size(0) == 1 && t.dtype() == DType::F32,
              "LTX-2 IC-LoRA: " << name << " must be a [1, L, D] F32 context, found " << (t.defined() ? t.str() : "none"));
}

}  // namespace

ICLoraRequest ICLoraRequest::from_json(const nlohmann::json& j) {
  VIDAX_CHECK(j.is_object(), "LTX-2 IC-LoRA request: expected a JSON object, found " << j.dump());
  ICLoraRequest r;
  r.height = translate::required<int64_t>(j, "height");
  r.width = translate::required<int64_t>(j, "width");
  r.num_frames = translate::required<int64_t>(j, "num_frames");
  r.frame_rate = translate::required<double>(j, "frame_rate");
  r.seed = static_cast<uint64_t>(translate::required<int64_t>(j, "seed"));
  r.conditioning_attention_strength = j.value("conditioning_attention_strength", 1.0);
  r.skip_stage_2 = j.value("skip_stage_2", false);
  if (j.contains("stage_1_sigmas")) r.stage_1_sigmas = j.at("stage_1_sigmas").get<std::vector<float>>();
  return r;
}

void check_ic_lora_request(const ICLoraRequest& r) {
  if (r.height < kTwoStage || r.width < kTwoStage || r.height % kTwoStage != 0 || r.width % kTwoStage != 0) {
    auto near = [](int64_t v) {
      const int64_t lo = std::max<int64_t>(kTwoStage, v / kTwoStage * kTwoStage);
      const int64_t hi = std::max<int64_t>(kTwoStage, (v + kTwoStage - 1) / kTwoStage * kTwoStage);
      return lo == hi ? std::to_string(lo) : std::to_string(lo) + " or " + std::to_string(hi);
    };
    throw Error(msg() << "LTX-2 IC-LoRA: resolution (" << r.height << "x" << r.width
                      << ") is not divisible by 64: for two-stage pipelines height and width must be multiples of 64"
                      << " (nearest valid: height " << near(r.height) << ", width " << near(r.width) << ")");
  }
  VIDAX_CHECK(std::isfinite(r.conditioning_attention_strength) && r.conditioning_attention_strength >= 0.0 &&
                  r.conditioning_attention_strength <= 1.0,
              "conditioning_attention_strength must be in [0.0, 1.0], got " << r.conditioning_attention_strength);
  VIDAX_CHECK(r.skip_stage_2,
              "LTX-2 IC-LoRA: stage 2 (the spatial upsampler and the distilled refinement at the full size) is not "
              "built; run with skip_stage_2 (vidax generate --skip-stage-2: the video comes out at half the "
              "requested height and width, as the reference's --skip-stage-2)");
  VIDAX_CHECK(r.stage_1_sigmas.empty() || (r.stage_1_sigmas.size() >= 2 && r.stage_1_sigmas.back() == 0.0f),
              "LTX-2 IC-LoRA: stage_1_sigmas must hold at least two values ending with 0");
  check_t2v_request(stage_1_request(r));  // the frame rule and the frame rate
}

T2VRequest stage_1_request(const ICLoraRequest& r) {
  T2VRequest s;
  s.height = r.height / 2;
  s.width = r.width / 2;
  s.num_frames = r.num_frames;
  s.frame_rate = r.frame_rate;
  s.seed = r.seed;
  s.num_inference_steps =
      r.stage_1_sigmas.empty() ? 8 : static_cast<int64_t>(r.stage_1_sigmas.size()) - 1;  // DISTILLED_SIGMAS: 8 steps
  return s;
}

ICLoraLatents denoise_ic_lora(const LTXModel& model, const ICLoraRequest& r, const Tensor& v_context,
                              const Tensor& a_context, TorchGenerator& gen, bool keep_steps,
                              const std::vector<ImageConditioning>& images,
                              const std::vector<ReferenceVideoConditioning>& references, const AfterStep& after_step) {
  check_ic_lora_request(r);
  const T2VRequest s1 = stage_1_request(r);
  const LatentGrid g = latent_grid(s1);
  const DiTConfig& cfg = model.config();
  VIDAX_CHECK(cfg.model_type == ModelType::AudioVideo && cfg.in_channels == 128 && cfg.out_channels == 128 &&
                  cfg.audio_in_channels == 128 && cfg.audio_out_channels == 128,
              "LTX-2 IC-LoRA: the pipeline needs the audio-video model with 128 video channels and 8 x 16 audio "
              "values per frame");
  check_context(v_context, "v_context");
  check_context(a_context, "a_context");

  ICLoraLatents out;
  out.sigmas = r.stage_1_sigmas.empty() ? sched::ltx2_distilled_sigmas("distilled") : r.stage_1_sigmas;
  const VideoTarget t = video_target(s1);
  out.video_state = conditioned_video_state(t, images);
  for (size_t i = 0; i < references.size(); ++i) append_reference_video(out.video_state, t, references[i], i);
  const VideoLatentState& vs = out.video_state;
  const int64_t ta = g.audio_frames;
  VideoLatentState noised = vs;
  add_noise(noised, gen.randn({1, vs.tokens(), 128}));
  Tensor video = noised.latent;
  Tensor audio = gen.randn({1, ta, 128});  // lerp(zeros, noise, 1): the noise itself
  out.video_noise = video;
  out.audio_noise = audio;
  const Tensor vpos = positions_tensor(vs.positions), apos = positions_tensor(audio_positions(ta));

  for (int64_t i = 0; i + 1 < static_cast<int64_t>(out.sigmas.size()); ++i) {
    const float sigma = out.sigmas[static_cast<size_t>(i)];
    const Tensor sig = Tensor::full({1}, sigma, DType::F32);
    // SimpleDenoiser: modality_from_latent_state with the positive contexts, one transformer call.
    Modality vm{video, sig, timesteps_from_mask(vs.denoise_mask, sigma, 1), vpos, v_context};
    if (vs.attention_mask.defined()) vm.attention_mask = vs.attention_mask;
    if (cfg.use_keyframes_abs_pos_embedding) vm.keyframes_mask = vs.keyframes_mask;
    Modality am{audio, sig, sig, apos, a_context};
    const DiTOutput y = model.forward(&vm, &am);
    const Tensor x0v = to_denoised_tokens(video, y.video, vm.timesteps);
    const Tensor x0a = to_denoised(audio, y.audio, sigma);
    // _step_state: post_process_latent (the audio's mask is ones: x0 as it is), then the Euler step.
    const Tensor dv = post_process_latent(x0v, vs.denoise_mask, vs.clean_latent);
    video = sched::ltx2_euler_step(video, dv, out.sigmas, i);
    audio = sched::ltx2_euler_step(audio, x0a, out.sigmas, i);
    if (keep_steps) out.steps.push_back({video, audio, dv, x0a, {}, {}});
    if (after_step) after_step(i + 1, static_cast<int64_t>(out.sigmas.size()) - 1);
  }
  // clear_conditioning, then unpatchify.
  out.video = video.slice(1, 0, g.video_tokens())
                  .contiguous()
                  .reshape({1, g.video_frames, g.video_height, g.video_width, 128})
                  .permute({0, 4, 1, 2, 3})
                  .contiguous();
  out.audio = audio.reshape({1, ta, 8, 16}).permute({0, 2, 1, 3}).contiguous();
  return out;
}

}  // namespace vidax::ltx2
