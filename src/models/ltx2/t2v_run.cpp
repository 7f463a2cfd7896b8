// The LTX-2 family's whole run (t2v_run.h).
#include "models/ltx2/t2v_run.h"

#include "models/ltx2/ic_lora_run.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "backend/ops.h"
#include "core/error.h"
#include "core/rng.h"
#include "io/checkpoint.h"
#include "nn/params.h"
#include "models/ltx2/checkpoint_keys.h"
#include "pipeline/interrupt.h"
#include "pipeline/lora_load.h"

namespace vidax::ltx2 {

namespace {

using Clock = std::chrono::steady_clock;
double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// The bundled checkpoint's parts: the prefixes each takes and the names it gives them (the
// configurators' SDOps), in checkpoint.h's order (the VAEs take their statistics as
// per_channel_statistics.*).
struct PartKeys {
  const char* what;
  std::vector<std::pair<std::string, std::string>> renames;  // checkpoint prefix -> module prefix
};

const PartKeys kConnectorVideo{"the video embeddings connector",
                               {{"model.diffusion_model.video_embeddings_connector.", ""}}};
const PartKeys kConnectorAudio{"the audio embeddings connector",
                               {{"model.diffusion_model.audio_embeddings_connector.", ""}}};
const PartKeys kDit{"the DiT", {{"model.diffusion_model.", ""}}};
const PartKeys kFeatures{"the feature extractor", {{"text_embedding_projection.", ""}}};
const PartKeys kVae{"the video VAE decoder",
                    {{"vae.decoder.", ""}, {"vae.per_channel_statistics.", "per_channel_statistics."}}};
const PartKeys kAudioVae{"the audio VAE decoder",
                         {{"audio_vae.decoder.", ""}, {"audio_vae.per_channel_statistics.", "per_channel_statistics."}}};
const PartKeys kVocoder{"the vocoder", {{"vocoder.", ""}}};
// Read by no part here (the video encoder is read apart: load_model; the audio encoder: audio conditioning).
const std::vector<std::string> kNotRead = {"vae.encoder.", "audio_vae.encoder."};

bool starts_with(const std::string& s, const std::string& p) { return s.rfind(p, 0) == 0; }

// Splits the checkpoint's names among the parts (the first part whose prefix matches wins: the
// connectors before the DiT), and refuses names no part takes.
class Split {
 public:
  explicit Split(const io::Checkpoint& ck, const std::string& path) : ck_(ck), path_(path) {
    const std::vector<const PartKeys*> order = {&kConnectorVideo, &kConnectorAudio, &kDit, &kFeatures,
                                                &kVae,            &kAudioVae,       &kVocoder};
    std::string stray;
    for (const std::string& n : ck.names()) {
      bool placed = false;
      for (const PartKeys* p : order) {
        for (const auto& [from, to] : p->renames)
          if (starts_with(n, from)) {
            names_[p].emplace(to + n.substr(from.size()), n);
            placed = true;
            break;
          }
        if (placed) break;
      }
      bool skipped = false;
      for (const auto& s : kNotRead) skipped = skipped || starts_with(n, s);
      if (!placed && !skipped) stray += "\n  " + n;
    }
    VIDAX_CHECK(stray.empty(), "LTX-2: " << path << " holds tensors no part of the model takes (the DiT "
                                            "model.diffusion_model.*, text_embedding_projection.*, vae.*, audio_vae.*, "
                                            "vocoder.*):"
                                         << stray);
  }
  // The part's tensors under the module's names (views of the checkpoint).
  std::map<std::string, Tensor> tensors(const PartKeys& p) const {
    std::map<std::string, Tensor> m;
    auto it = names_.find(&p);
    if (it != names_.end())
      for (const auto& [name, key] : it->second) m.emplace(name, ck_.get(key));
    VIDAX_CHECK(!m.empty(), "LTX-2: " << path_ << " holds no tensors of " << p.what << " ("
                                      << p.renames.front().first << "*)");
    return m;
  }
  // The part's tensors under the module's names; `drop` filters names the module has no use for.
  nn::ParamSource source(const PartKeys& p, const std::function<bool(const std::string&)>& drop = {}) const {
    std::map<std::string, Tensor> m;
    auto it = names_.find(&p);
    if (it != names_.end())
      for (const auto& [name, key] : it->second)
        if (!drop || !drop(name)) m.emplace(name, ck_.get(key));
    VIDAX_CHECK(!m.empty(), "LTX-2: " << path_ << " holds no tensors of " << p.what << " ("
                                      << p.renames.front().first << "*)");
    return nn::ParamSource::from_map(std::move(m), path_ + " (" + p.what + ")");
  }

 private:
  const io::Checkpoint& ck_;
  std::string path_;
  std::map<const PartKeys*, std::map<std::string, std::string>> names_;
};

constexpr int64_t kVideoChannels = 128;

// The run's streams as Events::on_stream_* see them (record and replay): each draw, the patchified
// states [T, 128] after each step (the batch of 1 dropped), in the order video, audio.
DenoiseHooks record_hooks(const pipeline::Events& ev) {
  DenoiseHooks h;
  if (ev.on_stream_noise)
    h.noise = [&ev](const std::string& stream, const Tensor& drawn) {
      const Tensor used = ev.on_stream_noise(stream, drawn.select(0, 0).contiguous());
      VIDAX_CHECK(used.defined() && used.shape() == Shape(drawn.shape().begin() + 1, drawn.shape().end()),
                  "LTX-2: the " << stream << " noise given for " << drawn.str() << " is "
                                << (used.defined() ? used.str() : "none"));
      return used.contiguous().to(DType::F32).clone().reshape(drawn.shape());  // the run's own copy
    };
  if (ev.on_stream_latents)
    h.step = [&ev](int64_t step, float sigma, const Tensor& video, const Tensor& audio) {
      ev.on_stream_latents(static_cast<int>(step), sigma,
                           {{"video", video.select(0, 0).contiguous()}, {"audio", audio.select(0, 0).contiguous()}});
    };
  return h;
}

}  // namespace

pipeline::Geometry geometry() {
  pipeline::Geometry g;
  g.vae_label = "the LTX-2 video VAE";
  g.z_dim = kVideoChannels;
  g.vae_stride_t = 8;
  g.vae_stride_s = 32;
  g.patch_t = g.patch_h = g.patch_w = 1;
  g.text_len = kPromptMaxLength;
  return g;
}

std::shared_ptr<Model> load_model(const CheckpointFiles& files, const Preset& preset, DType compute,
                                  pipeline::Residency text_encoder,
                                  const std::function<void(const std::string&)>& on_stage, const DitLoras& loras) {
  auto stage = [&](const std::string& s) {
    if (on_stage) on_stage(s);
  };
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16, "LTX-2: the DiT and Gemma compute in fp32 or bf16");
  const nlohmann::json& c = files.config;
  VIDAX_CHECK(VocoderBweConfig::is_bwe(c.at("vocoder")),
              "LTX-2: " << files.checkpoint
                        << ": the vocoder has no bandwidth extension (\"bwe\"): an LTX-2.0 checkpoint; the variants are "
                           "LTX-2.3's");
  auto m = std::make_shared<Model>();
  m->preset = preset;
  m->files = files;

  // The text side first: a missing tokenizer or Gemma file fails before the DiT is read.
  stage("loading the Gemma-3 text encoder " + files.gemma_root);
  m->text.tokenizer = std::make_shared<const text::GemmaTokenizer>(text::GemmaTokenizer::from_dir(files.gemma_root));
  const text::Gemma3Config gemma_cfg = read_gemma_config(files.gemma_root);
  const std::string root = files.gemma_root;
  m->text.gemma = std::make_shared<pipeline::ResidentPart<const text::Gemma3TextEncoder>>(
      "the Gemma-3 text encoder", text_encoder, [root, gemma_cfg, compute] {
        const std::map<std::string, Tensor> w = read_gemma_weights(root, gemma_cfg);
        return std::make_shared<const text::Gemma3TextEncoder>(
            gemma_cfg, [&](const std::string& n) { return w.at(n); }, compute);
      });
  (void)m->text.gemma->acquire();  // read now: its errors before the DiT's gigabytes

  const io::Checkpoint ck = io::Checkpoint::open(files.checkpoint);
  const Split split(ck, files.checkpoint);
  const nlohmann::json& t = c.at("transformer");
  {
    nn::ParamSource src = split.source(kFeatures);
    m->text.features = std::make_shared<const FeatureExtractor>(
        feature_extractor_version_of(t), gemma_cfg,
        [&](const std::string& n) {
          return src.take(n, ck.info("text_embedding_projection." + n).shape).to(DType::F32);
        });
    src.expect_all_taken();
  }
  {
    nn::ParamSource src = split.source(kConnectorVideo);
    m->text.video = std::make_shared<const EmbeddingsConnector>(video_connector_config(t), src, "");
    src.expect_all_taken();
    nn::ParamSource asrc = split.source(kConnectorAudio);
    m->text.audio = std::make_shared<const EmbeddingsConnector>(audio_connector_config(t), asrc, "");
    asrc.expect_all_taken();
  }
  stage("loading the DiT " + files.checkpoint);
  {
    auto ds = std::make_shared<DitSource>();
    ds->base = split.tensors(kDit);
    ds->config = dit_config_json(DiTConfig::from_json(t));
    ds->compute = compute;
    ds->origin = files.checkpoint + " (" + kDit.what + ")";
    ds->options = loras.options;
    ds->on_stage = on_stage;
    m->dit = build_dit(*ds, loras.loras, on_stage);
    ds->loras = loras.loras;
    m->dit_source = ds;
  }
  stage("loading the VAE decoders and the vocoder");
  {
    nn::ParamSource src = split.source(kVae, is_unused_checkpoint_buffer);
    m->vae = std::make_shared<const VideoDecoder>(VideoVaeConfig::from_json(c.at("vae")), src, "", DType::F32);
    src.expect_all_taken();
    m->latent_stats = std::make_shared<const vae::PerChannelStatistics>(
        latent_statistics(split.tensors(kVae), files.checkpoint));
    nn::ParamSource asrc = split.source(kAudioVae);
    m->audio_vae = std::make_shared<const AudioDecoder>(AudioVaeConfig::from_json(c.at("audio_vae")), asrc);
    asrc.expect_all_taken();
    nn::ParamSource vsrc = split.source(kVocoder);
    m->vocoder = std::make_shared<const VocoderWithBwe>(VocoderBweConfig::from_json(c.at("vocoder")), vsrc);
    vsrc.expect_all_taken();
  }
  {  // ImageConditioner's encoder, when the checkpoint has one (image conditioning only).
    std::map<std::string, Tensor> ep;
    for (const std::string& n : ck.names()) {
      for (const auto& [from, to] : {std::pair<std::string, std::string>{"vae.encoder.", ""},
                                     {"vae.per_channel_statistics.", "per_channel_statistics."}})
        if (starts_with(n, from) && !is_unused_checkpoint_buffer(to + n.substr(from.size())))
          ep.emplace(to + n.substr(from.size()), ck.get(n));
    }
    bool has_encoder = false;
    for (const auto& [n, t] : ep) has_encoder = has_encoder || !starts_with(n, "per_channel_statistics.");
    if (has_encoder) {
      stage("loading the video VAE encoder");
      nn::ParamSource src = nn::ParamSource::from_map(std::move(ep), files.checkpoint + " (the video VAE encoder)");
      m->encoder = std::make_shared<const VideoEncoder>(VideoVaeConfig::from_json(c.at("vae")), src, "", DType::F32);
      src.expect_all_taken();
    }
  }
  const int64_t vae_t = m->vae->config().decoder_time_factor(), vae_s = m->vae->config().decoder_space_factor();
  VIDAX_CHECK(vae_t == 8 && vae_s == 32 && m->vae->config().latent_channels == kVideoChannels,
              "LTX-2: the video VAE decodes " << vae_t << "x in time and " << vae_s << "x in space from "
                                              << m->vae->config().latent_channels
                                              << " channels; the pipeline's latents are 8x / 32x with 128 channels");
  return m;
}

std::shared_ptr<const LTXModel> build_dit(const DitSource& src, const std::vector<translate::LoraSpec>& loras,
                                          const std::function<void(const std::string&)>& on_stage) {
  // Tensor handles: a merge replaces entries of this copy, never the base's data.
  nn::ParamSource params = pipeline::params_with_loras(src.base, loras, dit_component(), src.config, src.options,
                                                       src.origin, "the DiT", /*pjrt=*/false, on_stage);
  // Not a const object: a two-stage run patches its stage-2 LoRA into the Linears (StageLora).
  auto d = std::make_shared<LTXModel>(DiTConfig::from_json(src.config), params, src.compute);
  params.expect_all_taken();
  return d;
}

T2VRequest t2v_request(const Preset& preset, const pipeline::Request& q) {
  const pipeline::Defaults& d = preset.variant.defaults;
  VIDAX_CHECK(q.sampler == d.sampler, "--sampler " << q.sampler << ": LTX-2 samples with Euler steps on LTX2Scheduler's "
                                                      "sigmas, as the reference (--sampler "
                                                   << d.sampler << " only)");
  VIDAX_CHECK(q.shift == d.shift, "--shift " << q.shift
                                             << ": LTX-2's schedule (LTX2Scheduler) shifts by the latent's token count "
                                                "itself; it takes no --shift");
  VIDAX_CHECK(q.cfg_scale == 1.0, "--cfg-scale " << q.cfg_scale
                                                 << ": LTX-2 is guided classifier-free by its guiders; the video "
                                                    "guider's scale is --guidance");
  VIDAX_CHECK(q.cfg_from_step == 0 && q.cfg_to_step < 0,
              "a guidance step range: LTX-2's guiders run on every step (their skip_step is not an option yet)");
  VIDAX_CHECK(q.guidance_scales.empty(), "per-denoiser guidance scales: LTX-2 has one denoiser; use --guidance");
  VIDAX_CHECK(!q.noise.defined(), "--noise: LTX-2 draws two noise tensors (the video's, then the audio's) from one "
                                  "seeded generator; a noise file is not taken, give --seed");
  VIDAX_CHECK(!q.last_image.defined(),
              "--last-image: LTX-2 takes images at chosen frames instead: --image FILE --image-frame N (the last "
              "frame is N = --frames - 1)");
  VIDAX_CHECK(!q.has_control(), "--control-video / --mask-video / --reference-image: LTX-2 takes no control video");
  if (preset.distilled) {
    VIDAX_CHECK(q.steps == kDistilledSteps, "--steps " << q.steps << ": " << preset.name()
                                                       << " runs DISTILLED_SIGMAS' " << kDistilledSteps
                                                       << " steps, then 3 stage-2 steps (--steps " << kDistilledSteps
                                                       << " only)");
    VIDAX_CHECK(q.guidance == 1.0, "--guidance " << q.guidance << ": " << preset.name()
                                                 << " runs without guidance (DistilledPipeline's SimpleDenoiser)");
  }
  VIDAX_CHECK(!q.skip_stage_2 && q.conditioning_attention_strength == 1.0,
              "--skip-stage-2 / --conditioning-attention-strength: for the IC-LoRA pipeline (--reference-video FILE or "
              "--video FILE); this run takes no reference video");
  T2VRequest r;
  r.height = q.height;
  r.width = q.width;
  r.num_frames = q.frames;
  r.frame_rate = q.fps > 0 ? q.fps : d.fps;
  r.num_inference_steps = q.steps;
  r.seed = q.seed;
  r.video_guider = preset.video_guider;
  r.video_guider.cfg_scale = q.guidance;
  r.audio_guider = preset.audio_guider;
  check_t2v_request(r);
  return r;
}

std::vector<ImageConditioning> encode_images(const Model& m, const pipeline::Request& q, const T2VRequest& r) {
  std::vector<pipeline::KeyImage> given;
  if (q.image.defined()) given.push_back({q.image, 0, 1.0});  // a first frame (vidax serve's input_reference)
  given.insert(given.end(), q.key_images.begin(), q.key_images.end());
  std::vector<ImageConditioning> out;
  if (given.empty()) return out;
  VIDAX_CHECK(m.encoder, "--image: " << m.files.checkpoint
                                     << " has no video VAE encoder (vae.encoder.*), which image conditioning needs"
                                        " (a demo folder made before the encoder was added: run vidax make-demo again)");
  const VideoTarget t = video_target(r);
  for (size_t i = 0; i < given.size(); ++i) {
    const pipeline::KeyImage& k = given[i];
    ImageConditioning c;
    c.frame_idx = k.frame;
    c.strength = k.strength;
    c.latent = Tensor::zeros({1, t.channels, 1, t.height, t.width}, DType::F32);
    check_image_conditioning(c, t, i);  // the frame and strength before the encode
    VIDAX_CHECK(k.image.defined() && k.image.dim() == 3 && k.image.size(0) == 3,
                "LTX-2 image conditioning " << i << ": the image must be [3, H, W], found "
                                            << (k.image.defined() ? k.image.str() : "none"));
    // The decoded file's 8-bit values (the request holds v / 127.5 - 1), as [h, w, 3].
    const std::vector<float> x = k.image.contiguous().to(DType::F32).to_f32_vector();
    const int64_t h = k.image.size(1), w = k.image.size(2), n = h * w;
    std::vector<float> rgb(x.size());
    for (int64_t p = 0; p < n; ++p)
      for (int64_t ch = 0; ch < 3; ++ch)
        rgb[static_cast<size_t>(p * 3 + ch)] =
            std::clamp(std::nearbyint((x[static_cast<size_t>(ch * n + p)] + 1.0f) * 127.5f), 0.0f, 255.0f);
    c.latent = m.encoder->forward(preprocess_image(Tensor::from_f32(rgb, {h, w, 3}), r.height, r.width));
    check_image_conditioning(c, t, i);
    out.push_back(std::move(c));
  }
  return out;
}

PromptContexts encode_contexts(const Model& m, const std::string& prompt, const std::string& negative_prompt,
                               bool* prompt_truncated, bool* negative_truncated, bool with_negative) {
  const std::shared_ptr<const text::Gemma3TextEncoder> gemma = m.text.gemma->acquire();
  PromptEncoder enc;
  enc.tokenizer = m.text.tokenizer.get();
  enc.gemma = gemma.get();
  enc.features = m.text.features.get();
  enc.video = m.text.video.get();
  enc.audio = m.text.audio.get();
  // PromptEncoder.__call__: text_encoder.encode per prompt, then process_hidden_states per prompt.
  const EncodedPrompts p = encode_prompts(enc, {prompt});
  if (prompt_truncated) *prompt_truncated = p.tokens.prompts.at(0).truncated;
  if (!with_negative) return {p.context.video, p.context.audio, Tensor(), Tensor()};
  const EncodedPrompts n = encode_prompts(enc, {negative_prompt});
  if (negative_truncated) *negative_truncated = n.tokens.prompts.at(0).truncated;
  return {p.context.video, p.context.audio, n.context.video, n.context.audio};
}

pipeline::Result run(const Model& m, const pipeline::Request& q, const pipeline::Events& ev, bool decode) {
  // Record and replay (pipeline/record.h): the two streams through Events::on_stream_*.
  VIDAX_CHECK(ev.on_stream_noise || ev.on_stream_latents || (!ev.on_noise && !ev.on_latent && !ev.replace_noise),
              "LTX-2's run has two latent streams (video, audio): it reports them through Events::on_stream_noise / "
              "on_stream_latents (pipeline/record.h), not on_noise / on_latent");
  if (!q.reference_videos.empty()) return run_ic_lora(m, q, ev, decode);  // ICLoraPipeline (ic_lora_run.h)
  const T2VRequest r = t2v_request(m.preset, q);
  auto stage = [&](const std::string& s) {
    if (ev.on_stage) ev.on_stage(s);
  };
  auto stop_point = [&](const std::string& where) {
    pipeline::throw_if_interrupted(where);
    if (ev.cancelled && ev.cancelled()) throw pipeline::Cancelled("cancelled during " + where);
  };
  pipeline::Result res;
  res.height = r.height;
  res.width = r.width;
  res.frames = r.num_frames;

  stage("encoding the prompts");
  auto t0 = Clock::now();
  // DistilledPipeline encodes the prompt alone (no guidance: no negative prompt).
  VIDAX_CHECK(!m.preset.distilled || q.negative_prompt.empty(),
              "--negative-prompt: " << m.preset.name() << " runs without guidance and takes no negative prompt");
  res.negative_prompt = m.preset.distilled ? std::string()
                        : q.negative_prompt.empty() ? q.default_negative_prompt
                                                    : q.negative_prompt;
  bool cut_p = false, cut_n = false;
  const PromptContexts ctx =
      encode_contexts(m, q.prompt, res.negative_prompt, &cut_p, &cut_n, /*with_negative=*/!m.preset.distilled);
  for (const auto& [cut, which] : {std::pair{cut_p, "prompt"}, std::pair{cut_n, "negative prompt"}})
    if (cut && ev.warn)
      ev.warn(msg() << "the " << which << " is longer than " << kPromptMaxLength
                    << " tokens; it was truncated to that length (as the reference does)");
  m.text.gemma->release();  // PromptEncoder frees Gemma after encoding (kept under a server's residency)
  res.seconds_text = seconds_since(t0);
  stop_point("prompt encoding");

  const bool two_stage = q.two_stage || m.preset.distilled;
  const T2VRequest r1 = two_stage ? stage1_request(r) : r;
  if (two_stage) check_two_stage_request(r);
  std::vector<ImageConditioning> images, images_full;
  if (q.image.defined() || !q.key_images.empty()) {
    stage("encoding the images");
    auto ti = Clock::now();
    images = encode_images(m, q, r1);  // combined_image_conditionings, after the prompts as the reference
    if (two_stage) images_full = encode_images(m, q, r);  // stage 2's, at full size
    res.seconds_images = seconds_since(ti);
    stop_point("image encoding");
  }

  stage("denoising");
  auto t1 = Clock::now();
  auto ts = Clock::now();
  TorchGenerator gen(r.seed);  // torch.Generator(device).manual_seed(seed): the noiser's and the decode's
  const AfterStep after_step = [&](int64_t done, int64_t total) {
    if (ev.on_step) ev.on_step(static_cast<int>(done), static_cast<int>(total), seconds_since(ts));
    ts = Clock::now();
    stop_point(msg() << "denoising step " << done << "/" << total);
  };
  T2VLatents lat;
  const int64_t passes = static_cast<int64_t>(guidance_passes(r.video_guider, r.audio_guider).size());
  if (two_stage) {
    VIDAX_CHECK(!ev.on_stream_noise && !ev.on_stream_latents && !ev.on_stream_final,
                "--record / --replay: not wired for the two-stage pipelines yet (four draws over two stages of "
                "different sizes)");
    VIDAX_CHECK(m.two_stage_files && m.latent_stats, "LTX-2 two-stage: the model was loaded without its two-stage files");
    const TwoStageKind kind = m.preset.distilled ? TwoStageKind::Distilled : TwoStageKind::TwoStage;
    const std::shared_ptr<const LatentUpsampler> up = two_stage_upsampler(*m.two_stage_files);
    // The stage-2 DiT is this one with the LoRA patched in for the stage (StageLora): build_dit made
    // it a mutable object; runs are one at a time (the server's worker).
    const std::shared_ptr<LTXModel> dit = std::const_pointer_cast<LTXModel>(m.dit);
    std::shared_ptr<const nn::Adapters> lora;
    if (kind == TwoStageKind::TwoStage)
      lora = two_stage_lora(*m.two_stage_files, m.dit_source->base, m.dit_source->config, linear_weight_names(*dit));
    TwoStageParts parts;
    parts.dit = dit.get();
    parts.stage2_lora = lora.get();
    parts.upsampler = up.get();
    parts.stats = m.latent_stats.get();
    stage(msg() << "denoising (" << two_stage_kind_name(kind) << ": stage 1 at " << r1.width << "x" << r1.height
                << ", stage 2 at " << r.width << "x" << r.height << ")");
    const TwoStageLatents two =
        denoise_two_stage(parts, kind, r, ctx, gen, images, images_full, /*keep_steps=*/false, after_step);
    lat = two.stage2;
    lat.video = two.video;
    lat.audio = two.audio;
    for (size_t i = 0; i + 1 < two.stage1.sigmas.size(); ++i) res.timesteps.push_back(two.stage1.sigmas[i]);
    const int64_t n1 = static_cast<int64_t>(two.stage1.sigmas.size()) - 1;
    res.denoiser_calls = (kind == TwoStageKind::TwoStage ? passes : 1) * n1 +
                         static_cast<int64_t>(two.stage2.sigmas.size()) - 1;  // stage 2: one pass per step
  } else {
    lat = denoise_t2v(*m.dit, r, ctx, gen, /*keep_steps=*/false, images, after_step, record_hooks(ev));
    res.denoiser_calls = passes * r.num_inference_steps;
  }
  res.seconds_denoise = seconds_since(t1);
  for (size_t i = 0; i + 1 < lat.sigmas.size(); ++i) res.timesteps.push_back(lat.sigmas[i]);
  res.denoiser_calls_by_index = {res.denoiser_calls};
  res.latents = lat.video.select(0, 0).contiguous();
  res.taps["audio_latent"] = lat.audio.select(0, 0).contiguous();
  VIDAX_CHECK(ops::all_finite(lat.video) && ops::all_finite(lat.audio),
              "the LTX-2 latents contain NaN or Inf after denoising; with --precision bf16, try fp32");
  if (ev.on_stream_final) ev.on_stream_final({{"video", res.latents}, {"audio", res.taps["audio_latent"]}});
  if (!decode) return res;

  stage("decoding the video");
  auto t2 = Clock::now();
  auto tc = Clock::now();
  // decode_video(latent, tiling None, generator): the same generator, after both noise draws.
  DecoderConditioning cond;
  cond.generator = &gen;
  const Tensor v = m.vae->forward(lat.video, {}, cond);
  res.video = ops::clamp(v.select(0, 0), -1.0, 1.0).contiguous();
  const int64_t parts = q.decode_audio ? 2 : 1;
  if (ev.on_decode) ev.on_decode(1, parts, seconds_since(tc));
  tc = Clock::now();
  stop_point("VAE decoding");
  if (!q.decode_audio) {  // --no-audio, no WAV asked: nothing takes the waveform
    res.seconds_decode = seconds_since(t2);
    return res;
  }
  stage("decoding the audio");
  // decode_audio: vocoder(audio_decoder(latent)).squeeze(0).
  res.audio = m.vocoder->forward(m.audio_vae->forward(lat.audio)).select(0, 0).contiguous();
  res.audio_sample_rate = m.vocoder->config().output_sampling_rate;
  if (ev.on_decode) ev.on_decode(2, 2, seconds_since(tc));
  res.seconds_decode = seconds_since(t2);
  stop_point("audio decoding");
  return res;
}

pipeline::Parts make_parts(std::shared_ptr<Model> m) {
  VIDAX_CHECK(m, "LTX-2: no model");
  pipeline::Parts p;
  p.geometry = geometry();
  p.min_images = 0;  // Request::image: a first frame (frame 0, strength 1)
  p.max_images = 1;
  p.takes_key_images = true;
  p.two_stage = true;  // --two-stage (two_stage.h)
  p.takes_reference_videos = true;  // the IC-LoRA pipeline (ic_lora_run.h)
  p.run = [m](const pipeline::Request& q, const pipeline::Events& ev, bool decode) { return run(*m, q, ev, decode); };
  // A server's per-job LoRAs (docs/lora.md): the DiT built again from its base weights with the
  // job's LoRAs (the same list as now costs nothing). The old DiT goes first (one DiT in memory, as
  // Wan's switch unloads before it merges); a bad file leaves the base weights in use (parts.h).
  // Jobs run one at a time (serve's worker), so no run reads m->dit while it is replaced.
  if (m->dit_source) {
    std::shared_ptr<DitSource> ds = m->dit_source;
    p.check_loras = [ds](const std::vector<translate::LoraSpec>& loras) {
      pipeline::check_loras(loras, dit_component(), ds->config);
    };
    p.use_loras = [m, ds](const std::vector<translate::LoraSpec>& loras) {
      std::lock_guard<std::mutex> lock(ds->mu);
      const bool same = loras.size() == ds->loras.size() &&
                        std::equal(loras.begin(), loras.end(), ds->loras.begin(),
                                   [](const auto& a, const auto& b) { return a.path == b.path && a.scale == b.scale; });
      if (same) return;
      m->dit.reset();
      ds->loras.clear();
      try {
        m->dit = build_dit(*ds, loras, ds->on_stage);
      } catch (...) {
        m->dit = build_dit(*ds, {}, ds->on_stage);  // back to the base weights: no half-applied set
        throw;
      }
      ds->loras = loras;
    };
  }
  return p;
}

}  // namespace vidax::ltx2
