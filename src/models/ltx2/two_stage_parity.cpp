// Kinds ltx2.pipeline.two_stage and ltx2.pipeline.distilled (two_stage.h, docs/parity.md): the
// two-stage runs of TI2VidTwoStagesPipeline.__call__ / DistilledPipeline.__call__ (images=[]) from the
// prompt contexts on, against tools/golden/ltx2_two_stage.py.
//   config: __call__'s height, width, num_frames, frame_rate, num_inference_steps, seed,
//           video_guider_params / audio_guider_params (read by two_stage only), "transformer" (the DiT
//           config); the upsampler as "spatial_upsampler" (a file beside the golden, its
//           __metadata__.config the LatentUpsampler config) or "upsampler" (the config, parameters
//           upsampler.*); two_stage: "distilled_lora" {"strength"} with the LoRA's own keys under
//           distilled_lora.*, or {"file": beside the golden, "strength"};
//           optionally "vae" (the decoder's config: then the video is decoded)
//   parameters: model.diffusion_model.*, vae.per_channel_statistics.* (required: the upsampler's
//           statistics), vae.decoder.* with "vae", upsampler.*, distilled_lora.*; every one used
//   input.v_context_p, input.a_context_p (and _n: the guided stage 1 of two_stage)
//   -> output.video_latent, output.audio_latent (the pipeline's), output.stage1.{video,audio}_latent,
//      with "vae" output.video [F, H, W, 3] in [0, 1]; inter.upsampled, inter.stage<k>.sigmas,
//      inter.stage<k>.noise.{video,audio}, inter.stage<k>.step<i>.{video,audio,video_denoised,
//      audio_denoised}. fp32 only.
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>

#include "backend/ops.h"
#include "core/error.h"
#include "models/ltx2/checkpoint_keys.h"
#include "models/ltx2/two_stage.h"
#include "models/ltx2/video_vae.h"
#include "parity/parity.h"
#include "translate/config_fields.h"
#include "translate/inspect.h"

namespace vidax::ltx2 {
namespace {

constexpr const char* kTwoStage = "ltx2.pipeline.two_stage";
constexpr const char* kDistilled = "ltx2.pipeline.distilled";

// The file's tensors under `prefix`, prefix stripped; the names taken go to `used`.
std::map<std::string, Tensor> under(const parity::Golden& g, const std::string& prefix, std::set<std::string>& used) {
  std::map<std::string, Tensor> m;
  for (const std::string& n : g.file.names())
    if (!translate::is_golden_io_key(n) && n.rfind(prefix, 0) == 0) {
      used.insert(n);
      m.emplace(n.substr(prefix.size()), g.file.get(n));
    }
  return m;
}

std::string beside(const parity::Golden& g, const std::string& file) {
  const std::filesystem::path p(file);
  return p.is_absolute() ? file : (std::filesystem::path(g.path).parent_path() / p).string();
}

void add_stage(parity::Produced& out, const T2VLatents& s, int k) {
  const std::string p = "inter.stage" + std::to_string(k) + ".";
  out[p + "sigmas"] = Tensor::from_f32(s.sigmas, {static_cast<int64_t>(s.sigmas.size())});
  out[p + "noise.video"] = s.video_noise;
  out[p + "noise.audio"] = s.audio_noise;
  for (size_t i = 0; i < s.steps.size(); ++i) {
    const std::string q = p + "step" + std::to_string(i) + ".";
    out[q + "video"] = s.steps[i].video;
    out[q + "audio"] = s.steps[i].audio;
    out[q + "video_denoised"] = s.steps[i].video_denoised;
    out[q + "audio_denoised"] = s.steps[i].audio_denoised;
  }
}

parity::Produced run(const parity::Golden& g, const parity::Options& opt, TwoStageKind kind) {
  const char* kKind = kind == TwoStageKind::TwoStage ? kTwoStage : kDistilled;
  VIDAX_CHECK(opt.precision.empty() || opt.precision == "fp32",
              kKind << " parity: only fp32 is supported, found '" << opt.precision << "'");
  VIDAX_CHECK(opt.mesh.empty() && opt.loras.empty() && opt.quantize.empty() &&
                  (opt.device.empty() || opt.device == "cpu"),
              kKind << " parity: --mesh, --lora, --quantize and --device are not supported");
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("transformer"), g.path << ": " << kKind << " config needs \"transformer\" (the DiT config)");
  const T2VRequest r = T2VRequest::from_json(c);

  std::set<std::string> used;
  const DiTConfig dit_cfg = DiTConfig::from_json(c.at("transformer"));
  const std::map<std::string, Tensor> dit_params = under(g, "model.diffusion_model.", used);
  nn::ParamSource dit_src = nn::ParamSource::from_map(dit_params, g.path);
  LTXModel dit(dit_cfg, dit_src, DType::F32);
  dit_src.expect_all_taken();

  std::map<std::string, Tensor> stat_params;  // the bundled checkpoint's vae.per_channel_statistics.*
  for (const auto& [n, t] : under(g, "vae.per_channel_statistics.", used)) stat_params.emplace("per_channel_statistics." + n, t);
  const vae::PerChannelStatistics stats = latent_statistics(stat_params, g.path);
  std::shared_ptr<const LatentUpsampler> upsampler;
  if (c.contains("spatial_upsampler")) {
    upsampler = load_upsampler_file(beside(g, translate::required<std::string>(c, "spatial_upsampler")));
  } else {
    VIDAX_CHECK(c.contains("upsampler"), g.path << ": " << kKind
                                                << " config needs \"spatial_upsampler\" (a file beside the golden) or "
                                                   "\"upsampler\" (its config, parameters upsampler.*)");
    nn::ParamSource src = nn::ParamSource::from_map(under(g, "upsampler.", used), g.path + " (upsampler.*)");
    upsampler = std::make_shared<const LatentUpsampler>(UpsamplerConfig::from_json(c.at("upsampler")), src);
    src.expect_all_taken();
  }
  nn::Adapters lora;
  if (kind == TwoStageKind::TwoStage) {
    VIDAX_CHECK(c.contains("distilled_lora") && c.at("distilled_lora").is_object(),
                g.path << ": " << kKind
                       << " config needs \"distilled_lora\": {\"strength\"} (the LoRA's tensors under distilled_lora.*) "
                          "or {\"file\", \"strength\"} (a file beside the golden)");
    const nlohmann::json& l = c.at("distilled_lora");
    const double strength = translate::required<double>(l, "strength");
    if (l.contains("file")) {
      const translate::LoraSpec spec{beside(g, translate::required<std::string>(l, "file")), strength};
      lora = lora_as_adapters(dit_params, dit_config_json(dit_cfg), spec, linear_weight_names(dit));
    } else {
      translate::MemorySource src(g.path + " (distilled_lora.*)");
      for (const auto& [n, t] : under(g, "distilled_lora.", used)) src.add(n, t);
      lora = lora_as_adapters(dit_params, dit_config_json(dit_cfg), src, strength, linear_weight_names(dit));
    }
  }
  std::optional<VideoDecoder> vae;
  if (c.contains("vae")) {
    std::map<std::string, Tensor> vp = under(g, "vae.decoder.", used);
    for (auto it = vp.begin(); it != vp.end();) it = is_unused_checkpoint_buffer(it->first) ? vp.erase(it) : ++it;
    for (const auto& [n, t] : under(g, "vae.per_channel_statistics.", used))
      if (!is_unused_checkpoint_buffer("per_channel_statistics." + n)) vp.emplace("per_channel_statistics." + n, t);
    nn::ParamSource vsrc = nn::ParamSource::from_map(std::move(vp), g.path);
    vae.emplace(VideoVaeConfig::from_json(c.at("vae")), vsrc, "", DType::F32);
    vsrc.expect_all_taken();
  }
  for (const std::string& n : g.file.names())
    VIDAX_CHECK(translate::is_golden_io_key(n) || used.count(n),
                g.path << ": parameter '" << n << "' belongs to no part of " << kKind
                       << " (model.diffusion_model.*, vae.*, upsampler.*, distilled_lora.*)");

  auto ctx = [&](const std::string& name, bool required) {
    if (!required && !g.has("input." + name)) return Tensor();
    VIDAX_CHECK(g.has("input." + name), g.path << ": " << kKind << " needs input." << name);
    return g.input(name).to(DType::F32);
  };
  const PromptContexts contexts{ctx("v_context_p", true), ctx("a_context_p", true), ctx("v_context_n", false),
                                ctx("a_context_n", false)};
  TwoStageParts parts;
  parts.dit = &dit;
  parts.stage2_lora = kind == TwoStageKind::TwoStage ? &lora : nullptr;
  parts.upsampler = upsampler.get();
  parts.stats = &stats;
  TorchGenerator gen(r.seed);  // the pipeline's generator: both stages' noisers, then the decode
  const TwoStageLatents lat = denoise_two_stage(parts, kind, r, contexts, gen, {}, {}, /*keep_steps=*/true);

  parity::Produced out;
  out["output.video_latent"] = lat.video;
  out["output.audio_latent"] = lat.audio;
  out["output.stage1.video_latent"] = lat.stage1.video;
  out["output.stage1.audio_latent"] = lat.stage1.audio;
  out["inter.upsampled"] = lat.upsampled;
  add_stage(out, lat.stage1, 1);
  add_stage(out, lat.stage2, 2);
  if (vae) {
    DecoderConditioning cond;
    cond.generator = &gen;
    const Tensor v = vae->forward(lat.video, {}, cond);
    const Tensor fhwc = v.select(0, 0).permute({1, 2, 3, 0}).contiguous();
    out["output.video"] = ops::clamp(ops::scale(ops::add_scalar(fhwc, 1.0), 0.5), 0.0, 1.0);
  }
  return out;
}

parity::Produced run_two_stage(const parity::Golden& g, const parity::Options& o) {
  return run(g, o, TwoStageKind::TwoStage);
}
parity::Produced run_distilled(const parity::Golden& g, const parity::Options& o) {
  return run(g, o, TwoStageKind::Distilled);
}

}  // namespace

void register_two_stage_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] {
    parity::register_kind(kTwoStage, run_two_stage);
    parity::register_kind(kDistilled, run_distilled);
  });
}

}  // namespace vidax::ltx2
