// The LTX-2 family's IC-LoRA run (ic_lora_run.h).
#include "models/ltx2/ic_lora_run.h"

#include <chrono>
#include <cmath>
#include <cstring>

#include "backend/ops.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "pipeline/interrupt.h"

namespace vidax::ltx2 {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

}  // namespace

ICLoraRequest ic_lora_request(const Preset& preset, const pipeline::Request& q) {
  const pipeline::Defaults& d = preset.variant.defaults;
  VIDAX_CHECK(q.skip_stage_2, "--reference-video / --video: ICLoraPipeline's stage 2 (the spatial upsampler and the "
                              "distilled refinement at the full size) is not built yet; add --skip-stage-2 (the video "
                              "comes out at half --height and --width, as the reference's --skip-stage-2)");
  VIDAX_CHECK(q.steps == d.steps, "--steps " << q.steps
                                             << ": the IC-LoRA pipeline runs the distilled sigma table (8 steps, "
                                                "DISTILLED_SIGMAS) and takes no step count");
  VIDAX_CHECK(q.guidance == d.guidance, "--guidance " << q.guidance
                                                      << ": the IC-LoRA pipeline's stage 1 is unguided (SimpleDenoiser, "
                                                         "the prompt alone)");
  VIDAX_CHECK(q.sampler == d.sampler && q.shift == d.shift && q.cfg_scale == 1.0 && q.guidance_scales.empty(),
              "--sampler / --shift / --cfg-scale: the IC-LoRA pipeline runs Euler steps on the distilled sigmas, "
              "unguided");
  VIDAX_CHECK(!q.noise.defined(), "--noise: LTX-2 draws its noise from one seeded generator; give --seed");
  VIDAX_CHECK(!q.last_image.defined(), "--last-image: LTX-2 takes images at chosen frames: --image FILE --image-frame N");
  VIDAX_CHECK(!q.has_control(), "--control-video / --mask-video / --reference-image: LTX-2 takes no control video");
  ICLoraRequest r;
  r.height = q.height;
  r.width = q.width;
  r.num_frames = q.frames;
  r.frame_rate = q.fps > 0 ? q.fps : d.fps;
  r.seed = q.seed;
  r.conditioning_attention_strength = q.conditioning_attention_strength;
  r.skip_stage_2 = q.skip_stage_2;
  try {
    check_ic_lora_request(r);
  } catch (const Error& e) {  // name the options
    throw Error(msg() << "--height " << q.height << " / --width " << q.width << " / --frames " << q.frames << ": "
                      << e.what());
  }
  return r;
}

ReferenceScale model_reference_scale(const Model& m) {
  VIDAX_CHECK(m.dit_source && !m.dit_source->loras.empty(),
              "--reference-video / --video: the IC-LoRA pipeline conditions on reference videos through an IC-LoRA "
              "(ICLoraPipeline's loras); give it with --lora FILE (a model without one has never seen reference "
              "tokens)");
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> metadata;
  for (const translate::LoraSpec& l : m.dit_source->loras)
    metadata.emplace_back(l.path, io::Checkpoint::open(l.path).metadata());
  return reference_scale(metadata);
}

std::vector<ReferenceVideoConditioning> encode_reference_videos(const Model& m, const pipeline::Request& q,
                                                                const ICLoraRequest& r, const ReferenceScale& s,
                                                                const std::function<void(const std::string&)>& warn) {
  VIDAX_CHECK(m.encoder, "--reference-video: " << m.files.checkpoint
                                               << " has no video VAE encoder (vae.encoder.*), which the reference "
                                                  "videos need");
  const T2VRequest s1 = stage_1_request(r);
  int64_t rh = 0, rw = 0;
  reference_size(s1.height, s1.width, s.downscale, &rh, &rw);
  std::vector<ReferenceVideoConditioning> out;
  for (size_t i = 0; i < q.reference_videos.size(); ++i) {
    const pipeline::ReferenceVideo& v = q.reference_videos[i];
    const std::string who = "--reference-video " + v.path + ": ";
    if (v.fps > 0 && std::fabs(v.fps - r.frame_rate) > 1e-6 && warn)
      warn(who + "its frame rate " + std::to_string(v.fps) + " differs from the video's " +
           std::to_string(r.frame_rate) + "; its frames are taken one by one, not resampled (as the reference)");
    const Tensor frames = video_frames_of(v.video);
    if (frames.size(0) < r.num_frames && warn)
      warn(who + "has " + std::to_string(frames.size(0)) + " frames for --frames " + std::to_string(r.num_frames) +
           "; all of them are taken (as the reference: its latent covers fewer frames)");
    const Tensor video = reference_video_input(frames, r.num_frames, rh, rw, s.temporal);
    ReferenceVideoConditioning c;
    c.latent = m.encoder->forward(crop_to_encoder_frames(video, m.encoder->config().encoder_time_factor(),
                                                         [&](const std::string& w) {
                                                           if (warn) warn(who + w);
                                                         }));
    c.downscale_factor = s.downscale;
    c.temporal_scale_factor = s.temporal;
    c.strength = v.strength;
    c.attention = reference_attention(r.conditioning_attention_strength,
                                      c.latent.size(2) * c.latent.size(3) * c.latent.size(4));
    out.push_back(std::move(c));
  }
  return out;
}

std::map<std::string, Tensor> demo_ic_lora(const std::map<std::string, Tensor>& checkpoint, uint64_t seed) {
  constexpr int64_t kRank = 2;
  const std::string prefix = "model.diffusion_model.";
  TorchGenerator gen(seed);
  std::map<std::string, Tensor> out;
  for (const auto& [name, w] : checkpoint) {  // sorted: the draws' order is the names'
    if (name.rfind(prefix, 0) != 0 || w.dim() != 2) continue;
    const std::string module = name.substr(prefix.size(), name.size() - prefix.size() - std::string(".weight").size());
    bool target = false;
    for (const char* t : {".to_q", ".to_k", ".to_v", ".to_out.0"})
      target = target || (module.size() > std::strlen(t) && module.compare(module.size() - std::strlen(t), std::string::npos, t) == 0);
    if (!target || name.substr(name.size() - 7) != ".weight" || module.find("connector") != std::string::npos) continue;
    const int64_t rows = w.size(0), cols = w.size(1);
    out["diffusion_model." + module + ".lora_A.weight"] =
        ops::scale(gen.randn({kRank, cols}), 1.0 / std::sqrt(static_cast<double>(cols)));
    out["diffusion_model." + module + ".lora_B.weight"] =
        ops::scale(gen.randn({rows, kRank}), 0.5 / std::sqrt(static_cast<double>(kRank)));
  }
  return out;
}

pipeline::Result run_ic_lora(const Model& m, const pipeline::Request& q, const pipeline::Events& ev, bool decode) {
  VIDAX_CHECK(!ev.on_noise && !ev.on_latent && !ev.replace_noise && !ev.on_stream_noise && !ev.on_stream_latents,
              "--record / --replay: not wired for LTX-2's IC-LoRA pipeline (--reference-video / --video) yet; the "
              "one-stage run records");
  const ICLoraRequest r = ic_lora_request(m.preset, q);
  const ReferenceScale scale = model_reference_scale(m);
  const T2VRequest s1 = stage_1_request(r);
  auto stage = [&](const std::string& s) {
    if (ev.on_stage) ev.on_stage(s);
  };
  auto stop_point = [&](const std::string& where) {
    pipeline::throw_if_interrupted(where);
    if (ev.cancelled && ev.cancelled()) throw pipeline::Cancelled("cancelled during " + where);
  };
  pipeline::Result res;
  res.height = s1.height;  // skip_stage_2: stage 1's size
  res.width = s1.width;
  res.frames = r.num_frames;

  stage("encoding the prompt");
  auto t0 = Clock::now();
  Tensor v_ctx, a_ctx;
  {
    const std::shared_ptr<const text::Gemma3TextEncoder> gemma = m.text.gemma->acquire();
    PromptEncoder enc;
    enc.tokenizer = m.text.tokenizer.get();
    enc.gemma = gemma.get();
    enc.features = m.text.features.get();
    enc.video = m.text.video.get();
    enc.audio = m.text.audio.get();
    const EncodedPrompts p = encode_prompts(enc, {q.prompt});  // (ctx_p,) = prompt_encoder([prompt])
    if (p.tokens.prompts.at(0).truncated && ev.warn)
      ev.warn(msg() << "the prompt is longer than " << kPromptMaxLength
                    << " tokens; it was truncated to that length (as the reference does)");
    v_ctx = p.context.video;
    a_ctx = p.context.audio;
  }
  m.text.gemma->release();
  res.seconds_text = seconds_since(t0);
  stop_point("prompt encoding");

  stage("encoding the images and reference videos");
  auto ti = Clock::now();
  const std::vector<ImageConditioning> images = encode_images(m, q, s1);  // at the stage-1 size
  const std::vector<ReferenceVideoConditioning> refs = encode_reference_videos(m, q, r, scale, ev.warn);
  res.seconds_images = seconds_since(ti);
  stop_point("reference video encoding");

  stage("denoising (stage 1)");
  auto t1 = Clock::now();
  auto ts = Clock::now();
  TorchGenerator gen(r.seed);
  const ICLoraLatents lat =
      denoise_ic_lora(*m.dit, r, v_ctx, a_ctx, gen, /*keep_steps=*/false, images, refs, [&](int64_t done, int64_t total) {
        if (ev.on_step) ev.on_step(static_cast<int>(done), static_cast<int>(total), seconds_since(ts));
        ts = Clock::now();
        stop_point(msg() << "denoising step " << done << "/" << total);
      });
  res.seconds_denoise = seconds_since(t1);
  for (size_t i = 0; i + 1 < lat.sigmas.size(); ++i) res.timesteps.push_back(lat.sigmas[i]);
  res.denoiser_calls = static_cast<int64_t>(lat.sigmas.size()) - 1;  // one unguided pass per step
  res.denoiser_calls_by_index = {res.denoiser_calls};
  res.latents = lat.video.select(0, 0).contiguous();
  res.taps["audio_latent"] = lat.audio.select(0, 0).contiguous();
  VIDAX_CHECK(ops::all_finite(lat.video) && ops::all_finite(lat.audio),
              "the LTX-2 latents contain NaN or Inf after denoising; with --precision bf16, try fp32");
  // STAGE2_HOOK (ic_lora_run.h): the upsampler and the stage-2 refinement go here.
  if (!decode) return res;

  stage("decoding the video");
  auto t2 = Clock::now();
  DecoderConditioning cond;
  cond.generator = &gen;
  const Tensor v = m.vae->forward(lat.video, {}, cond);
  res.video = ops::clamp(v.select(0, 0), -1.0, 1.0).contiguous();
  if (ev.on_decode) ev.on_decode(1, q.decode_audio ? 2 : 1, seconds_since(t2));
  stop_point("VAE decoding");
  if (q.decode_audio) {
    stage("decoding the audio");
    res.audio = m.vocoder->forward(m.audio_vae->forward(lat.audio)).select(0, 0).contiguous();
    res.audio_sample_rate = m.vocoder->config().output_sampling_rate;
    if (ev.on_decode) ev.on_decode(2, 2, seconds_since(t2));
    stop_point("audio decoding");
  }
  res.seconds_decode = seconds_since(t2);
  return res;
}

}  // namespace vidax::ltx2
