// Kinds ltx2.conditioning.reference_video and ltx2.pipeline.ic_lora (ic_lora_parity.h).
#include "models/ltx2/ic_lora_parity.h"

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>

#include "backend/ops.h"
#include "core/error.h"
#include "models/ltx2/audio_vae.h"
#include "models/ltx2/checkpoint_keys.h"
#include "models/ltx2/ic_lora.h"
#include "models/ltx2/video_vae.h"
#include "models/ltx2/vocoder.h"
#include "parity/parity.h"
#include "translate/config_fields.h"
#include "translate/inspect.h"
#include "translate/lora.h"

namespace vidax::ltx2 {
namespace {

constexpr const char* kRefCond = "ltx2.conditioning.reference_video";
constexpr const char* kICLora = "ltx2.pipeline.ic_lora";

void warn(const std::string& m) { std::fprintf(stderr, "warning: %s\n", m.c_str()); }

// The file's parameters of one part under their official names (as pipeline_parity.cpp reads them):
// <owner><half>X -> X; with a half, <owner>per_channel_statistics.X -> per_channel_statistics.X.
std::map<std::string, Tensor> part(const parity::Golden& g, const std::string& owner, const std::string& half,
                                   std::set<std::string>& used) {
  const std::string prefix = owner + half, stats = owner + "per_channel_statistics.";
  std::map<std::string, Tensor> params;
  for (const std::string& n : g.file.names()) {
    if (translate::is_golden_io_key(n)) continue;
    std::string name;
    if (n.rfind(prefix, 0) == 0)
      name = n.substr(prefix.size());
    else if (!half.empty() && n.rfind(stats, 0) == 0)
      name = n.substr(owner.size());
    else
      continue;
    used.insert(n);
    if (!half.empty() && is_unused_checkpoint_buffer(name)) continue;
    params.emplace(name, g.file.get(n));
  }
  return params;
}

Tensor positions_of(const Positions& p) {
  std::vector<float> v;
  v.reserve(static_cast<size_t>(p.n_axes * p.tokens * 2));
  for (int64_t a = 0; a < p.n_axes; ++a)
    for (int64_t t = 0; t < p.tokens; ++t) {
      v.push_back(p.start[static_cast<size_t>(a * p.tokens + t)]);
      v.push_back(p.end[static_cast<size_t>(a * p.tokens + t)]);
    }
  return Tensor::from_f32(v, {1, p.n_axes, p.tokens, 2});
}

void check_options(const parity::Options& opt, const char* kind) {
  VIDAX_CHECK(opt.precision.empty() || opt.precision == "fp32",
              kind << " parity: only fp32 is supported, found '" << opt.precision << "'");
  VIDAX_CHECK(opt.mesh.empty() && opt.loras.empty() && opt.quantize.empty() &&
                  (opt.device.empty() || opt.device == "cpu"),
              kind << " parity: --mesh, --lora (the file's config names its LoRAs), --quantize and --device are not "
                      "supported");
}

struct ImageSpec {
  int64_t frame_idx = 0;
  double strength = 1.0;
};
// "images" (optional here): [{"frame_idx", "strength"}].
std::vector<ImageSpec> image_specs(const parity::Golden& g, const char* kind) {
  std::vector<ImageSpec> specs;
  if (!g.config.contains("images")) return specs;
  VIDAX_CHECK(g.config.at("images").is_array(), g.path << ": " << kind << " \"images\" must be a list");
  for (const nlohmann::json& j : g.config.at("images")) {
    VIDAX_CHECK(j.is_object() && j.size() == 2 && j.contains("frame_idx") && j.at("frame_idx").is_number_integer() &&
                    j.contains("strength") && j.at("strength").is_number(),
                g.path << ": " << kind << " image entry " << j.dump()
                       << " must be {\"frame_idx\": integer, \"strength\": number}");
    specs.push_back({j.at("frame_idx").get<int64_t>(), j.at("strength").get<double>()});
  }
  return specs;
}

// "video_conditioning": [{"strength": number}] (the CLI's --video-conditioning PATH STRENGTH; the
// frames are input.reference_video.<i>).
std::vector<double> reference_strengths(const parity::Golden& g, const char* kind) {
  VIDAX_CHECK(g.config.contains("video_conditioning") && g.config.at("video_conditioning").is_array(),
              g.path << ": " << kind << " config needs \"video_conditioning\": [{\"strength\": number}, ...]");
  std::vector<double> out;
  for (const nlohmann::json& j : g.config.at("video_conditioning")) {
    VIDAX_CHECK(j.is_object() && j.size() == 1 && j.contains("strength") && j.at("strength").is_number(),
                g.path << ": " << kind << " video_conditioning entry " << j.dump() << " must be {\"strength\": number}");
    out.push_back(j.at("strength").get<double>());
  }
  return out;
}

Tensor picture(const parity::Golden& g, size_t i, int64_t height, int64_t width, const char* kind) {
  const Tensor x = g.input("image." + std::to_string(i)).to(DType::F32);
  VIDAX_CHECK(x.dim() == 3, g.path << ": " << kind << " input.image." << i << " must be a decoded [h, w, 3] picture, found "
                                   << x.str());
  return preprocess_image(x, height, width);
}

// The attention of a reference: a pixel mask (input.conditioning_attention_mask, __call__'s name, or
// input.attention_mask; [1, 1, F, H, W]) downsampled to the reference's latent grid times the
// strength, else the scalar strength when < 1, else none.
Tensor reference_attention_of(const parity::Golden& g, const Tensor& latent, double strength) {
  const char* name = g.has("input.conditioning_attention_mask") ? "conditioning_attention_mask" : "attention_mask";
  if (g.has(std::string("input.") + name)) {
    const Tensor w = downsample_mask_to_latent(g.input(name), latent.size(2), latent.size(3), latent.size(4));
    std::vector<float> v = w.to_f32_vector();
    for (float& x : v) x = x * static_cast<float>(strength);
    return Tensor::from_f32(v, w.shape());
  }
  return reference_attention(strength, latent.size(2) * latent.size(3) * latent.size(4));
}

// ltx2.conditioning.reference_video: combined_image_conditionings + the reference videos with a real
// encoder (official names, no prefix) into a VideoLatentTools state of config latent_channels.
parity::Produced run_reference_conditioning(const parity::Golden& g, const parity::Options& opt) {
  const char* kKind = kRefCond;
  check_options(opt, kKind);
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("vae"), g.path << ": " << kKind << " config needs \"vae\" (the encoder's config)");
  T2VRequest r;
  r.height = translate::required<int64_t>(c, "height");
  r.width = translate::required<int64_t>(c, "width");
  r.num_frames = translate::required<int64_t>(c, "num_frames");
  r.frame_rate = translate::required<double>(c, "frame_rate");
  r.num_inference_steps = 1;
  const int64_t seed = translate::required<int64_t>(c, "seed");
  VideoTarget t = video_target(r);
  t.channels = translate::required<int64_t>(c, "latent_channels");
  const int64_t down = c.value("reference_downscale_factor", int64_t{1});
  const int64_t temporal = c.value("reference_temporal_scale_factor", int64_t{1});
  const double attention = c.value("conditioning_attention_strength", 1.0);
  int64_t rh = 0, rw = 0;
  reference_size(r.height, r.width, down, &rh, &rw);
  std::map<std::string, Tensor> params;
  for (const std::string& n : g.file.names())
    if (!translate::is_golden_io_key(n) && !is_unused_checkpoint_buffer(n)) params.emplace(n, g.file.get(n));
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), g.path);
  const VideoEncoder encoder(VideoVaeConfig::from_json(c.at("vae")), src, "", DType::F32);
  src.expect_all_taken();

  parity::Produced out;
  std::vector<ImageConditioning> images;
  const std::vector<ImageSpec> specs = image_specs(g, kKind);
  for (size_t i = 0; i < specs.size(); ++i) {
    ImageConditioning ic{encoder.forward(picture(g, i, r.height, r.width, kKind)), specs[i].frame_idx,
                         specs[i].strength};
    out["output.image_latent." + std::to_string(i)] = ic.latent;
    images.push_back(std::move(ic));
  }
  VideoLatentState s = conditioned_video_state(t, images);
  const std::vector<double> strengths = reference_strengths(g, kKind);
  for (size_t i = 0; i < strengths.size(); ++i) {
    const std::string id = std::to_string(i);
    const Tensor video = reference_video_input(g.input("reference_video." + id), r.num_frames, rh, rw, temporal);
    out["inter.reference_video." + id] = video;
    ReferenceVideoConditioning rc;
    rc.latent = encoder.forward(crop_to_encoder_frames(video, encoder.config().encoder_time_factor(), warn));
    rc.downscale_factor = down;
    rc.temporal_scale_factor = temporal;
    rc.strength = strengths[i];
    rc.attention = reference_attention_of(g, rc.latent, attention);
    out["output.reference_latent." + id] = rc.latent;
    append_reference_video(s, t, rc, i);
  }
  TorchGenerator gen(static_cast<uint64_t>(seed));
  add_noise(s, gen.randn(s.clean_latent.shape()));
  out["output.state.latent"] = s.latent;
  out["output.state.clean_latent"] = s.clean_latent;
  out["output.state.denoise_mask"] = s.denoise_mask;
  out["output.state.positions"] = positions_of(s.positions);
  out["output.state.keyframes_mask"] = s.keyframes_mask;
  if (s.attention_mask.defined()) out["output.state.attention_mask"] = s.attention_mask;
  return out;
}

VocoderConfig vocoder_config(nlohmann::json j) {
  VIDAX_CHECK(j.is_object() && !j.contains("bwe") && j.value("resblock", std::string()) == "1" &&
                  j.contains("stereo") && j.at("stereo") == true,
              kICLora << ": the vocoder config must be the flat LTX-2 one with resblock \"1\" and \"stereo\": true");
  j.erase("stereo");
  return VocoderConfig::from_json(j);
}

// ltx2.pipeline.ic_lora: ICLoraPipeline.__call__ with skip_stage_2 from the prompt contexts on.
parity::Produced run_ic_lora(const parity::Golden& g, const parity::Options& opt) {
  const char* kKind = kICLora;
  check_options(opt, kKind);
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("transformer"), g.path << ": " << kKind << " config needs \"transformer\" (the DiT config)");
  const ICLoraRequest r = ICLoraRequest::from_json(c);
  check_ic_lora_request(r);
  const T2VRequest s1 = stage_1_request(r);
  auto has_params = [&g](const std::string& prefix) {
    for (const std::string& n : g.file.names())
      if (n.rfind(prefix, 0) == 0) return true;
    return false;
  };
  const bool decode = c.contains("audio_vae") || c.contains("vocoder");
  VIDAX_CHECK(!decode || (c.contains("vae") && c.contains("audio_vae") && c.contains("vocoder")),
              g.path << ": " << kKind << " decodes with all of \"vae\", \"audio_vae\" and \"vocoder\" or none of them");

  // The DiT with the IC-LoRA(s) of "loras": [{"file" (beside the golden), "strength"}] merged, as
  // DiffusionStage.from_checkpoint(loras=...) fuses them; their metadata gives the reference factors.
  std::set<std::string> used;
  const DiTConfig cfg = DiTConfig::from_json(c.at("transformer"));
  std::map<std::string, Tensor> dit_params = part(g, "model.diffusion_model.", "", used);
  std::vector<translate::LoraSpec> loras;
  std::vector<std::pair<std::string, std::map<std::string, std::string>>> metadata;
  const std::filesystem::path dir = std::filesystem::path(g.path).parent_path();
  for (const nlohmann::json& l : c.value("loras", nlohmann::json::array())) {
    VIDAX_CHECK(l.is_object() && l.contains("file") && l.at("file").is_string(),
                g.path << ": " << kKind << " lora entry " << l.dump() << " must be {\"file\": name, \"strength\": number}");
    translate::LoraSpec spec;
    spec.path = (dir / l.at("file").get<std::string>()).string();
    spec.scale = l.value("strength", 1.0);
    metadata.emplace_back(spec.path, io::Checkpoint::open(spec.path).metadata());
    loras.push_back(spec);
  }
  translate::apply_loras(dit_params, loras, dit_component(), dit_config_json(cfg), {}, warn);
  nn::ParamSource dit_src = nn::ParamSource::from_map(std::move(dit_params), g.path);
  const LTXModel dit(cfg, dit_src, DType::F32);
  dit_src.expect_all_taken();
  const ReferenceScale scale = reference_scale(metadata);

  std::optional<VideoDecoder> vae;
  std::optional<AudioDecoder> audio_vae;
  std::optional<Vocoder> vocoder;
  if (decode) {
    nn::ParamSource vsrc = nn::ParamSource::from_map(part(g, "vae.", "decoder.", used), g.path);
    vae.emplace(VideoVaeConfig::from_json(c.at("vae")), vsrc, "", DType::F32);
    vsrc.expect_all_taken();
    nn::ParamSource asrc = nn::ParamSource::from_map(part(g, "audio_vae.", "decoder.", used), g.path);
    audio_vae.emplace(AudioVaeConfig::from_json(c.at("audio_vae")), asrc);
    asrc.expect_all_taken();
    nn::ParamSource vocsrc = nn::ParamSource::from_map(part(g, "vocoder.", "", used), g.path);
    vocoder.emplace(vocoder_config(c.at("vocoder")), vocsrc);
    vocsrc.expect_all_taken();
  }
  std::optional<VideoEncoder> encoder;
  if (has_params("vae.encoder.")) {
    VIDAX_CHECK(c.contains("vae"), g.path << ": " << kKind << " has vae.encoder.* but no \"vae\" config");
    nn::ParamSource esrc = nn::ParamSource::from_map(part(g, "vae.", "encoder.", used), g.path);
    encoder.emplace(VideoVaeConfig::from_json(c.at("vae")), esrc, "", DType::F32);
    esrc.expect_all_taken();
  }
  for (const std::string& n : g.file.names())
    VIDAX_CHECK(translate::is_golden_io_key(n) || used.count(n),
                g.path << ": parameter '" << n << "' belongs to no part of " << kKind
                       << " (model.diffusion_model.*, vae.*, audio_vae.*, vocoder.*)");

  parity::Produced out;
  // Images at the stage-1 size (combined_image_conditionings), then the references at (H / 2) / scale.
  std::vector<ImageConditioning> images;
  const std::vector<ImageSpec> specs = image_specs(g, kKind);
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string id = std::to_string(i);
    Tensor px;
    if (g.has("input.image." + id)) out["inter.image." + id] = px = picture(g, i, s1.height, s1.width, kKind);
    ImageConditioning ic;
    ic.frame_idx = specs[i].frame_idx;
    ic.strength = specs[i].strength;
    if (g.has("input.image_latent." + id)) {
      ic.latent = g.input("image_latent." + id).to(DType::F32);
    } else {
      VIDAX_CHECK(px.defined() && encoder, g.path << ": " << kKind << " image " << i << " needs input.image_latent."
                                                  << i << ", or input.image." << i << " and vae.encoder.*");
      out["inter.image_latent." + id] = ic.latent = encoder->forward(px);
    }
    images.push_back(std::move(ic));
  }
  int64_t rh = 0, rw = 0;
  reference_size(s1.height, s1.width, scale.downscale, &rh, &rw);
  std::vector<ReferenceVideoConditioning> refs;
  const std::vector<double> strengths = reference_strengths(g, kKind);
  for (size_t i = 0; i < strengths.size(); ++i) {
    const std::string id = std::to_string(i);
    Tensor video;
    if (g.has("input.reference_video." + id))
      out["inter.reference_video." + id] = video =
          reference_video_input(g.input("reference_video." + id), r.num_frames, rh, rw, scale.temporal);
    ReferenceVideoConditioning rc;
    if (g.has("input.reference_latent." + id)) {
      rc.latent = g.input("reference_latent." + id).to(DType::F32);
    } else {
      VIDAX_CHECK(video.defined() && encoder, g.path << ": " << kKind << " reference " << i
                                                     << " needs input.reference_latent." << i
                                                     << ", or input.reference_video." << i << " and vae.encoder.*");
      out["inter.reference_latent." + id] = rc.latent =
          encoder->forward(crop_to_encoder_frames(video, encoder->config().encoder_time_factor(), warn));
    }
    rc.downscale_factor = scale.downscale;
    rc.temporal_scale_factor = scale.temporal;
    rc.strength = strengths[i];
    rc.attention = reference_attention_of(g, rc.latent, r.conditioning_attention_strength);
    refs.push_back(std::move(rc));
  }

  VIDAX_CHECK(g.has("input.v_context_p") && g.has("input.a_context_p"),
              g.path << ": " << kKind << " needs input.v_context_p and input.a_context_p");
  TorchGenerator gen(r.seed);
  const ICLoraLatents lat = denoise_ic_lora(dit, r, g.input("v_context_p").to(DType::F32),
                                            g.input("a_context_p").to(DType::F32), gen, /*keep_steps=*/true, images,
                                            refs);
  const VideoLatentState& s = lat.video_state;
  out["inter.state.clean_latent"] = s.clean_latent;
  out["inter.state.denoise_mask"] = s.denoise_mask;
  out["inter.state.positions"] = positions_of(s.positions);
  if (s.attention_mask.defined()) out["inter.state.attention_mask"] = s.attention_mask;
  out["output.video_latent"] = lat.video;
  out["output.audio_latent"] = lat.audio;
  out["inter.sigmas"] = Tensor::from_f32(lat.sigmas, {static_cast<int64_t>(lat.sigmas.size())});
  out["inter.noise.video"] = lat.video_noise;
  out["inter.noise.audio"] = lat.audio_noise;
  for (size_t i = 0; i < lat.steps.size(); ++i) {
    const std::string p = "inter.step" + std::to_string(i) + ".";
    out[p + "video"] = lat.steps[i].video;
    out[p + "audio"] = lat.steps[i].audio;
    out[p + "video_denoised"] = lat.steps[i].video_denoised;
    out[p + "audio_denoised"] = lat.steps[i].audio_denoised;
  }
  if (decode) {  // skip_stage_2: decode stage 1's latents (half size) with the same generator
    DecoderConditioning dc;
    dc.generator = &gen;
    const Tensor v = vae->forward(lat.video, {}, dc);
    const Tensor fhwc = v.select(0, 0).permute({1, 2, 3, 0}).contiguous();
    out["output.video"] = ops::clamp(ops::scale(ops::add_scalar(fhwc, 1.0), 0.5), 0.0, 1.0);
    out["output.audio"] = vocoder->forward(audio_vae->forward(lat.audio)).select(0, 0).contiguous();
  }
  return out;
}

}  // namespace

void register_ic_lora_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] {
    parity::register_kind(kRefCond, run_reference_conditioning);
    parity::register_kind(kICLora, run_ic_lora);
  });
}

}  // namespace vidax::ltx2
