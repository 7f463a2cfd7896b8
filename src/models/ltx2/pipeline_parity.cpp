// Kinds ltx2.pipeline.t2v, ltx2.pipeline.i2v and ltx2.conditioning.image (pipeline_parity.h).
#include "models/ltx2/pipeline_parity.h"

#include <mutex>
#include <optional>
#include <set>

#include "backend/ops.h"
#include "core/error.h"
#include "models/ltx2/audio_vae.h"
#include "models/ltx2/t2v.h"
#include "models/ltx2/video_vae.h"
#include "models/ltx2/vocoder.h"
#include "parity/parity.h"
#include "translate/config_fields.h"
#include "translate/inspect.h"

namespace vidax::ltx2 {
namespace {

constexpr const char* kT2V = "ltx2.pipeline.t2v";
constexpr const char* kI2V = "ltx2.pipeline.i2v";
constexpr const char* kImageCond = "ltx2.conditioning.image";

// The file's parameters of one part, renamed to the official names: <owner><half>X -> X, and with
// a half (a VAE's decoder) <owner>per_channel_statistics.X -> per_channel_statistics.X (the
// configurators' COMFY_KEYS_FILTER renames); the names taken are recorded in `used`.
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
    params.emplace(name, g.file.get(n));
  }
  return params;
}

Tensor context(const parity::Golden& g, const std::string& name, const char* kKind) {
  VIDAX_CHECK(g.has("input." + name), g.path << ": " << kKind << " needs input." << name);
  return g.input(name).to(DType::F32);
}

// VocoderConfigurator.from_metadata: a flat config (no "bwe") must say resblock "1" and stereo true;
// "stereo" is the configurator's, not Vocoder's init argument.
VocoderConfig vocoder_config(nlohmann::json j, const char* kKind) {
  VIDAX_CHECK(
      j.is_object() && !j.contains("bwe"),
      kKind << ": the vocoder config must be the flat LTX-2 (2.0) one (the 2.3 bandwidth extension is not built)");
  VIDAX_CHECK(j.value("resblock", std::string()) == "1",
              kKind << ": the vocoder's resblock must be \"1\" (VocoderConfigurator's check), found " << j.dump());
  VIDAX_CHECK(j.contains("stereo") && j.at("stereo") == true,
              kKind << ": the vocoder config must say \"stereo\": true (VocoderConfigurator's check)");
  j.erase("stereo");
  return VocoderConfig::from_json(j);
}

// The config's "images": [{"frame_idx": int, "strength": number}, ...] (ImageConditioningInput's
// fields; every field required, no other).
struct ImageSpec {
  int64_t frame_idx = 0;
  double strength = 1.0;
};
std::vector<ImageSpec> image_specs(const parity::Golden& g, const char* kKind) {
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("images") && c.at("images").is_array(),
              g.path << ": " << kKind << " config needs \"images\": [{\"frame_idx\", \"strength\"}, ...]");
  std::vector<ImageSpec> specs;
  for (const nlohmann::json& j : c.at("images")) {
    VIDAX_CHECK(j.is_object() && j.size() == 2 && j.contains("frame_idx") && j.at("frame_idx").is_number_integer() &&
                    j.contains("strength") && j.at("strength").is_number(),
                g.path << ": " << kKind << " image entry " << j.dump()
                       << " must be {\"frame_idx\": integer, \"strength\": number}");
    specs.push_back({j.at("frame_idx").get<int64_t>(), j.at("strength").get<double>()});
  }
  return specs;
}

// LatentState.positions as the reference holds them: [1, n_axes, T, 2] ([start, end) last).
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

// input.image.<i> as the kinds take it: the decoded picture [h, w, 3] (preprocessed here) or the
// already preprocessed [1, 3, 1, height, width].
Tensor pixels(const parity::Golden& g, size_t i, int64_t height, int64_t width, const char* kKind) {
  const Tensor x = g.input("image." + std::to_string(i)).to(DType::F32);
  if (x.dim() == 3) return preprocess_image(x, height, width);
  VIDAX_CHECK(x.dim() == 5 && x.size(0) == 1 && x.size(1) == 3 && x.size(2) == 1 && x.size(3) == height &&
                  x.size(4) == width,
              g.path << ": " << kKind << " input.image." << i << " must be a decoded [h, w, 3] picture or the preprocessed [1, 3, 1, "
                     << height << ", " << width << "] image, found " << x.str());
  return x;
}

parity::Produced run_pipeline(const parity::Golden& g, const parity::Options& opt, bool i2v) {
  const char* kKind = i2v ? kI2V : kT2V;
  VIDAX_CHECK(opt.precision.empty() || opt.precision == "fp32",
              kKind << " parity: only fp32 is supported, found '" << opt.precision << "'");
  VIDAX_CHECK(opt.mesh.empty(), kKind << " parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  VIDAX_CHECK(opt.loras.empty() && opt.quantize.empty() && (opt.device.empty() || opt.device == "cpu"),
              kKind << " parity: --lora, --quantize and --device are not supported");
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("transformer"), g.path << ": " << kKind << " config needs \"transformer\" (the DiT config)");
  const T2VRequest r = T2VRequest::from_json(c);
  auto has_params = [&g](const std::string& prefix) {
    for (const std::string& n : g.file.names())
      if (n.rfind(prefix, 0) == 0) return true;
    return false;
  };
  // i2v: a file may carry the video encoder alone (vae.encoder.*, the "vae" config), then no decode.
  const bool encoder_only = i2v && c.contains("vae") && !has_params("vae.decoder.") && !c.contains("audio_vae") &&
                            !c.contains("vocoder");
  const bool decode = !encoder_only && (c.contains("vae") || c.contains("audio_vae") || c.contains("vocoder"));
  VIDAX_CHECK(!decode || (c.contains("vae") && c.contains("audio_vae") && c.contains("vocoder")),
              g.path << ": " << kKind << " decodes with all of \"vae\", \"audio_vae\" and \"vocoder\" or none of them");

  std::set<std::string> used;
  nn::ParamSource dit_src = nn::ParamSource::from_map(part(g, "model.diffusion_model.", "", used), g.path);
  const LTXModel dit(DiTConfig::from_json(c.at("transformer")), dit_src, DType::F32);
  dit_src.expect_all_taken();
  std::optional<VideoDecoder> vae;
  std::optional<AudioDecoder> audio_vae;
  std::optional<Vocoder> vocoder;
  if (decode) {
    std::map<std::string, Tensor> vp = part(g, "vae.", "decoder.", used);
    for (auto it = vp.begin(); it != vp.end();) it = is_unused_checkpoint_buffer(it->first) ? vp.erase(it) : ++it;
    nn::ParamSource vsrc = nn::ParamSource::from_map(std::move(vp), g.path);
    vae.emplace(VideoVaeConfig::from_json(c.at("vae")), vsrc, "", DType::F32);
    vsrc.expect_all_taken();
    nn::ParamSource asrc = nn::ParamSource::from_map(part(g, "audio_vae.", "decoder.", used), g.path);
    audio_vae.emplace(AudioVaeConfig::from_json(c.at("audio_vae")), asrc);
    asrc.expect_all_taken();
    nn::ParamSource vocsrc = nn::ParamSource::from_map(part(g, "vocoder.", "", used), g.path);
    vocoder.emplace(vocoder_config(c.at("vocoder"), kKind), vocsrc);
    vocsrc.expect_all_taken();
  }
  // i2v: the video encoder (ImageConditioner's VideoEncoder: vae.encoder.*, the statistics shared
  // with the decoder) when the file has one.
  std::optional<VideoEncoder> encoder;
  if (i2v && has_params("vae.encoder.")) {
    VIDAX_CHECK(c.contains("vae"), g.path << ": " << kKind << " has vae.encoder.* but no \"vae\" config");
    std::map<std::string, Tensor> ep = part(g, "vae.", "encoder.", used);
    for (auto it = ep.begin(); it != ep.end();) it = is_unused_checkpoint_buffer(it->first) ? ep.erase(it) : ++it;
    nn::ParamSource esrc = nn::ParamSource::from_map(std::move(ep), g.path);
    encoder.emplace(VideoVaeConfig::from_json(c.at("vae")), esrc, "", DType::F32);
    esrc.expect_all_taken();
  }
  for (const std::string& n : g.file.names())
    VIDAX_CHECK(translate::is_golden_io_key(n) || used.count(n),
                g.path << ": parameter '" << n << "' belongs to no part of " << kKind
                       << " (model.diffusion_model.*, vae.*, audio_vae.*, vocoder.*)");

  const PromptContexts ctx{context(g, "v_context_p", kKind), context(g, "a_context_p", kKind),
                           context(g, "v_context_n", kKind), context(g, "a_context_n", kKind)};
  parity::Produced out;
  // combined_image_conditionings: each image's encoded latent given (input.image_latent.<i>: the
  // golden's stand-in encoder), or its picture (input.image.<i>, preprocessed: a tap either way)
  // encoded by the file's video encoder.
  std::vector<ImageConditioning> images;
  if (i2v) {
    const std::vector<ImageSpec> specs = image_specs(g, kKind);
    for (size_t i = 0; i < specs.size(); ++i) {
      const std::string id = std::to_string(i);
      Tensor image;
      if (g.has("input.image." + id)) {
        image = pixels(g, i, r.height, r.width, kKind);
        out["inter.image." + id] = image;
      }
      ImageConditioning ic;
      ic.frame_idx = specs[i].frame_idx;
      ic.strength = specs[i].strength;
      if (g.has("input.image_latent." + id)) {
        ic.latent = g.input("image_latent." + id).to(DType::F32);
      } else {
        VIDAX_CHECK(image.defined() && encoder,
                    g.path << ": " << kKind << " image " << i << " needs input.image_latent." << i
                           << " (the encoded image), or input.image." << i << " and the video encoder (vae.encoder.*)");
        ic.latent = encoder->forward(image);
        out["inter.image_latent." + id] = ic.latent;
      }
      images.push_back(std::move(ic));
    }
  }
  TorchGenerator gen(r.seed);  // torch.Generator(device).manual_seed(seed): the noiser's and the decode's
  const T2VLatents lat = denoise_t2v(dit, r, ctx, gen, /*keep_steps=*/true, images);
  if (i2v) {
    const VideoLatentState& s = lat.video_state;
    out["inter.state.clean_latent"] = s.clean_latent;
    out["inter.state.denoise_mask"] = s.denoise_mask;
    out["inter.state.positions"] = positions_of(s.positions);
  }

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
    if (lat.steps[i].video_cond.defined()) out[p + "video_cond"] = lat.steps[i].video_cond;
    if (lat.steps[i].audio_cond.defined()) out[p + "audio_cond"] = lat.steps[i].audio_cond;
  }
  if (decode) {
    // decode_video(latent, None, generator): forward, then to_rgb: c f h w -> f h w c, (x + 1) * 0.5, clamp.
    DecoderConditioning cond;
    cond.generator = &gen;
    const Tensor v = vae->forward(lat.video, {}, cond);
    const Tensor fhwc = v.select(0, 0).permute({1, 2, 3, 0}).contiguous();
    out["output.video"] = ops::clamp(ops::scale(ops::add_scalar(fhwc, 1.0), 0.5), 0.0, 1.0);
    // decode_audio: vocoder(audio_decoder(latent)).squeeze(0).float().
    out["output.audio"] = vocoder->forward(audio_vae->forward(lat.audio)).select(0, 0).contiguous();
  }
  return out;
}

// ltx2.conditioning.image: combined_image_conditionings with a real encoder (official names, no
// prefix) into a VideoLatentTools state of config latent_channels, noised by Generator(seed).
parity::Produced run_image_conditioning(const parity::Golden& g, const parity::Options& opt) {
  const char* kKind = kImageCond;
  VIDAX_CHECK(opt.precision.empty() || opt.precision == "fp32",
              kKind << " parity: only fp32 is supported, found '" << opt.precision << "'");
  VIDAX_CHECK(opt.mesh.empty() && opt.loras.empty() && opt.quantize.empty() && (opt.device.empty() || opt.device == "cpu"),
              kKind << " parity: --mesh, --lora, --quantize and --device are not supported");
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("vae"), g.path << ": " << kKind << " config needs \"vae\" (the encoder's config)");
  T2VRequest r;  // the fields the target needs (latent_grid's checks)
  r.height = translate::required<int64_t>(c, "height");
  r.width = translate::required<int64_t>(c, "width");
  r.num_frames = translate::required<int64_t>(c, "num_frames");
  r.frame_rate = translate::required<double>(c, "frame_rate");
  r.num_inference_steps = 1;
  const int64_t seed = translate::required<int64_t>(c, "seed");
  VideoTarget t = video_target(r);
  t.channels = translate::required<int64_t>(c, "latent_channels");
  std::map<std::string, Tensor> params;
  for (const std::string& n : g.file.names())
    if (!translate::is_golden_io_key(n) && !is_unused_checkpoint_buffer(n)) params.emplace(n, g.file.get(n));
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), g.path);
  const VideoEncoder encoder(VideoVaeConfig::from_json(c.at("vae")), src, "", DType::F32);
  src.expect_all_taken();

  parity::Produced out;
  const std::vector<ImageSpec> specs = image_specs(g, kKind);
  std::vector<ImageConditioning> images;
  for (size_t i = 0; i < specs.size(); ++i) {
    const std::string id = std::to_string(i);
    const Tensor image = pixels(g, i, r.height, r.width, kKind);
    out["inter.image." + id] = image;
    ImageConditioning ic{encoder.forward(image), specs[i].frame_idx, specs[i].strength};
    out["output.image_latent." + id] = ic.latent;
    images.push_back(std::move(ic));
  }
  VideoLatentState s = conditioned_video_state(t, images);
  TorchGenerator gen(static_cast<uint64_t>(seed));
  add_noise(s, gen.randn(s.clean_latent.shape()));
  out["output.state.latent"] = s.latent;
  out["output.state.clean_latent"] = s.clean_latent;
  out["output.state.denoise_mask"] = s.denoise_mask;
  out["output.state.positions"] = positions_of(s.positions);
  return out;
}

parity::Produced run_t2v(const parity::Golden& g, const parity::Options& opt) { return run_pipeline(g, opt, false); }
parity::Produced run_i2v(const parity::Golden& g, const parity::Options& opt) { return run_pipeline(g, opt, true); }

}  // namespace

void register_pipeline_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] {
    parity::register_kind(kT2V, run_t2v);
    parity::register_kind(kI2V, run_i2v);
    parity::register_kind(kImageCond, run_image_conditioning);
  });
}

}  // namespace vidax::ltx2
