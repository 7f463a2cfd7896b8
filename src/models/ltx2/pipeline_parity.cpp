// Kind ltx2.pipeline.t2v (pipeline_parity.h).
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
#include "translate/inspect.h"

namespace vidax::ltx2 {
namespace {

constexpr const char* kKind = "ltx2.pipeline.t2v";

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

Tensor context(const parity::Golden& g, const std::string& name) {
  VIDAX_CHECK(g.has("input." + name), g.path << ": " << kKind << " needs input." << name);
  return g.input(name).to(DType::F32);
}

// VocoderConfigurator.from_metadata: a flat config (no "bwe") must say resblock "1" and stereo true;
// "stereo" is the configurator's, not Vocoder's init argument.
VocoderConfig vocoder_config(nlohmann::json j) {
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

parity::Produced run_t2v(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.precision.empty() || opt.precision == "fp32",
              kKind << " parity: only fp32 is supported, found '" << opt.precision << "'");
  VIDAX_CHECK(opt.mesh.empty(), kKind << " parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  VIDAX_CHECK(opt.loras.empty() && opt.quantize.empty() && (opt.device.empty() || opt.device == "cpu"),
              kKind << " parity: --lora, --quantize and --device are not supported");
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("transformer"), g.path << ": " << kKind << " config needs \"transformer\" (the DiT config)");
  const T2VRequest r = T2VRequest::from_json(c);
  const bool decode = c.contains("vae") || c.contains("audio_vae") || c.contains("vocoder");
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
    vocoder.emplace(vocoder_config(c.at("vocoder")), vocsrc);
    vocsrc.expect_all_taken();
  }
  for (const std::string& n : g.file.names())
    VIDAX_CHECK(translate::is_golden_io_key(n) || used.count(n),
                g.path << ": parameter '" << n << "' belongs to no part of " << kKind
                       << " (model.diffusion_model.*, vae.*, audio_vae.*, vocoder.*)");

  const PromptContexts ctx{context(g, "v_context_p"), context(g, "a_context_p"), context(g, "v_context_n"),
                           context(g, "a_context_n")};
  TorchGenerator gen(r.seed);  // torch.Generator(device).manual_seed(seed): the noiser's and the decode's
  const T2VLatents lat = denoise_t2v(dit, r, ctx, gen, /*keep_steps=*/true);

  parity::Produced out;
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

}  // namespace

void register_pipeline_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] { parity::register_kind(kKind, run_t2v); });
}

}  // namespace vidax::ltx2
