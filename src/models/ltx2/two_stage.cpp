// The LTX-2 two-stage pipelines (two_stage.h).
#include "models/ltx2/two_stage.h"

#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "backend/ops.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "models/ltx2/video_vae_config.h"
#include "models/ltx2/checkpoint_keys.h"
#include "sched/ltx2_schedule.h"
#include "translate/source.h"

namespace vidax::ltx2 {

namespace {
constexpr int64_t kTwoStageDivisor = 64;  // assert_resolution(is_two_stage=True)
}  // namespace

const char* two_stage_kind_name(TwoStageKind k) { return k == TwoStageKind::TwoStage ? "two-stage" : "distilled"; }

void check_two_stage_request(const T2VRequest& r) {
  if (r.height < kTwoStageDivisor || r.width < kTwoStageDivisor || r.height % kTwoStageDivisor != 0 ||
      r.width % kTwoStageDivisor != 0) {
    auto near = [](int64_t v) {
      const int64_t lo = std::max<int64_t>(kTwoStageDivisor, v / kTwoStageDivisor * kTwoStageDivisor);
      const int64_t hi = std::max<int64_t>(kTwoStageDivisor, (v + kTwoStageDivisor - 1) / kTwoStageDivisor * kTwoStageDivisor);
      return lo == hi ? std::to_string(lo) : std::to_string(lo) + " or " + std::to_string(hi);
    };
    throw Error(msg() << "LTX-2 two-stage: resolution (" << r.height << "x" << r.width
                      << ") is not divisible by 64: for two-stage pipelines height and width must be multiples of 64"
                      << " (stage 1 runs at half size; nearest valid: height " << near(r.height) << ", width "
                      << near(r.width) << ")");
  }
  check_t2v_request(r);
}

T2VRequest stage1_request(const T2VRequest& r) {
  T2VRequest s = r;
  s.height = r.height / 2;
  s.width = r.width / 2;
  return s;
}

std::vector<float> distilled_stage1_sigmas() { return sched::ltx2_distilled_sigmas("distilled"); }
std::vector<float> stage2_sigmas() { return sched::ltx2_distilled_sigmas("distilled_stage2"); }

std::vector<std::string> linear_weight_names(LTXModel& dit) {
  std::vector<std::string> names;
  dit.for_each_linear([&](const std::string& n, nn::Linear&) { names.push_back(n); });
  return names;
}

nn::Adapters lora_as_adapters(const std::map<std::string, Tensor>& dit_params, const translate::Json& dit_config,
                              const translate::LoraSpec& lora, const std::vector<std::string>& linear_names) {
  const std::shared_ptr<translate::CheckpointSource> src = translate::CheckpointSource::open(lora.path);
  return lora_as_adapters(dit_params, dit_config, *src, lora.scale, linear_names);
}

nn::Adapters lora_as_adapters(const std::map<std::string, Tensor>& dit_params, const translate::Json& dit_config,
                              const translate::TensorSource& src, double strength,
                              const std::vector<std::string>& linear_names) {
  const std::string label = src.label();
  VIDAX_CHECK(std::isfinite(strength), "LoRA " << label << ": strength " << strength << " is not a number");
  const translate::LoraPlan plan = translate::plan_lora(src, dit_component(), dit_config);
  translate::check_lora(plan, {});  // unmatched keys and shape problems are errors
  const std::set<std::string> linears(linear_names.begin(), linear_names.end());
  std::string off;
  size_t n_off = 0;
  for (const translate::LoraTarget& t : plan.targets)
    if (!linears.count(t.param) && ++n_off <= 8) off += "\n  " + t.param + " (from " + t.module + ")";
  VIDAX_CHECK(n_off == 0, "LoRA " << label << ": " << n_off
                                  << " of its targets are no Linear's weight of the DiT (norm gains, biases, tables); "
                                     "the stage-2 LoRA is patched into the resident DiT as run-time adapters, which "
                                     "only a Linear takes:"
                                  << off << (n_off > 8 ? "\n  ..." : ""));
  // What translate::apply_loras keeps at run time (--lora-mode runtime): up carries strength * factor
  // (ltx-core: W + strength * B @ A; factor 1 without an alpha key).
  nn::Adapters out;
  for (const translate::LoraTarget& t : plan.targets) {
    auto it = dit_params.find(t.param);
    VIDAX_CHECK(it != dit_params.end(), "LoRA " << label << ": the DiT has no parameter " << t.param);
    const int64_t rows = it->second.size(0);
    const double s = strength * t.factor();
    nn::LowRankAdapter a;
    a.label = label;
    if (t.kind == translate::LoraTarget::Kind::LowRank) {
      a.up = ops::scale(src.get(t.up_key).to(DType::F32).reshape({rows, t.rank}), s).contiguous();
      a.down = src.get(t.down_key).to(DType::F32).reshape({t.rank, -1}).contiguous();
    } else {
      a.up = ops::scale(src.get(t.diff_key).to(DType::F32).reshape({rows, -1}), s).contiguous();
    }
    out[t.param].push_back(std::move(a));
  }
  VIDAX_CHECK(!out.empty(), "LoRA " << label << " changes no weight of the DiT");
  return out;
}

StageLora::StageLora(LTXModel& dit, const nn::Adapters& adapters) : dit_(dit) {
  // Check every adapter against its Linear first: nothing is patched when one does not fit.
  std::set<std::string> found;
  dit.for_each_linear([&](const std::string& name, nn::Linear& l) {
    auto it = adapters.find(name);
    if (it == adapters.end()) return;
    found.insert(name);
    for (const nn::LowRankAdapter& a : it->second) {
      const bool low_rank = a.down.defined();
      const int64_t in = low_rank ? a.down.numel() / std::max<int64_t>(1, a.down.size(0)) : a.up.size(1);
      VIDAX_CHECK(a.up.defined() && a.up.size(0) == l.out_features() && in == l.in_features() &&
                      (!low_rank || a.up.size(1) == a.down.size(0)),
                  "the stage-2 LoRA " << a.label << " on " << name << ": up " << a.up.str() << " / down "
                                      << (low_rank ? a.down.str() : std::string("none")) << " does not fit the Linear ["
                                      << l.out_features() << ", " << l.in_features() << "]");
    }
  });
  std::string missing;
  for (const auto& [name, list] : adapters)
    if (!found.count(name)) missing += "\n  " + name;
  VIDAX_CHECK(missing.empty(), "the stage-2 LoRA names weights no Linear of the DiT reads:" << missing);
  dit.for_each_linear([&](const std::string& name, nn::Linear& l) {
    auto it = adapters.find(name);
    if (it == adapters.end()) return;
    sizes_[name] = l.adapters.size();
    l.adapters.insert(l.adapters.end(), it->second.begin(), it->second.end());
  });
}

StageLora::~StageLora() {
  dit_.for_each_linear([&](const std::string& name, nn::Linear& l) {
    auto it = sizes_.find(name);
    if (it != sizes_.end() && l.adapters.size() >= it->second)
      l.adapters.erase(l.adapters.begin() + static_cast<std::ptrdiff_t>(it->second), l.adapters.end());
  });
}

std::shared_ptr<const LatentUpsampler> load_upsampler_file(const std::string& path) {
  const io::Checkpoint ck = io::Checkpoint::open(path);
  const auto& meta = ck.metadata();
  auto it = meta.find("config");
  VIDAX_CHECK(it != meta.end(), path << ": no __metadata__.config: a spatial upsampler file carries its "
                                        "LatentUpsamplerConfigurator config there (as the published "
                                        "ltx-2.3-spatial-upscaler-x2-*.safetensors)");
  nlohmann::json cfg;
  try {
    cfg = nlohmann::json::parse(it->second);
  } catch (const std::exception& e) {
    throw Error(msg() << path << ": __metadata__.config is not JSON: " << e.what());
  }
  std::map<std::string, Tensor> params;
  for (const std::string& n : ck.names()) params.emplace(n, ck.get(n));
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), path);
  auto up = std::make_shared<const LatentUpsampler>(UpsamplerConfig::from_json(cfg), src);
  src.expect_all_taken();
  return up;
}

vae::PerChannelStatistics latent_statistics(const std::map<std::string, Tensor>& params, const std::string& origin) {
  std::map<std::string, Tensor> stats;
  for (const auto& [n, t] : params)
    if (n.rfind("per_channel_statistics.", 0) == 0 && !is_unused_checkpoint_buffer(n)) stats.emplace(n, t);
  nn::ParamSource src = nn::ParamSource::from_map(std::move(stats), origin + " (the video VAE's per_channel_statistics)");
  const vae::Loader l{src, "", DType::F32};
  vae::PerChannelStatistics s = vae::PerChannelStatistics::load(l, "", 128);
  src.expect_all_taken();
  return s;
}

TwoStageLatents denoise_two_stage(const TwoStageParts& parts, TwoStageKind kind, const T2VRequest& r,
                                  const PromptContexts& c, TorchGenerator& gen,
                                  const std::vector<ImageConditioning>& stage1_images,
                                  const std::vector<ImageConditioning>& stage2_images, bool keep_steps,
                                  const AfterStep& after_step) {
  VIDAX_CHECK(parts.dit && parts.upsampler && parts.stats,
              "LTX-2 " << two_stage_kind_name(kind) << ": the DiT, the spatial upsampler and the VAE statistics are "
                                                       "required");
  VIDAX_CHECK(kind == TwoStageKind::Distilled || parts.stage2_lora,
              "LTX-2 two-stage: stage 2 runs the DiT with the distilled LoRA, none given");
  VIDAX_CHECK(parts.upsampler->config().spatial_upsample && !parts.upsampler->config().temporal_upsample &&
                  !parts.upsampler->config().rational_resampler && parts.upsampler->config().spatial_scale == 2.0,
              "LTX-2 " << two_stage_kind_name(kind)
                       << ": the spatial upsampler must be the x2 one (spatial_upsample, scale 2, no temporal, no "
                          "rational resampler): stage 2 runs at twice stage 1's size");
  check_two_stage_request(r);
  const T2VRequest r1 = stage1_request(r);
  const LatentGrid g1 = latent_grid(r1);
  const std::vector<float> s2 = stage2_sigmas();
  StageOptions o1;
  if (kind == TwoStageKind::Distilled) {
    o1.sigmas = distilled_stage1_sigmas();
    o1.guided = false;
  } else {
    sched::Ltx2ScheduleOptions so;
    so.steps = r.num_inference_steps;
    o1.sigmas = sched::ltx2_sigmas(so);
  }
  const int64_t n1 = static_cast<int64_t>(o1.sigmas.size()) - 1, n2 = static_cast<int64_t>(s2.size()) - 1;
  auto report = [&](int64_t offset) -> AfterStep {
    if (!after_step) return {};
    return [&, offset](int64_t done, int64_t) { after_step(offset + done, n1 + n2); };
  };

  TwoStageLatents out;
  out.stage1 = denoise_stage(*parts.dit, r1, c, gen, o1, keep_steps, stage1_images, report(0));
  // VideoUpsampler(video_state.latent[:1]).
  out.upsampled = upsample_video(out.stage1.video, *parts.stats, *parts.upsampler);
  const LatentGrid g2 = latent_grid(r);
  VIDAX_CHECK(out.upsampled.dim() == 5 && out.upsampled.size(2) == g2.video_frames &&
                  out.upsampled.size(3) == g2.video_height && out.upsampled.size(4) == g2.video_width,
              "LTX-2 " << two_stage_kind_name(kind) << ": the upsampled latent " << out.upsampled.str()
                       << " does not match the full-size grid " << g2.video_frames << "x" << g2.video_height << "x"
                       << g2.video_width << " (stage 1: " << g1.video_frames << "x" << g1.video_height << "x"
                       << g1.video_width << ")");
  StageOptions o2;
  o2.sigmas = s2;
  o2.guided = false;
  o2.initial_video = out.upsampled;
  o2.initial_audio = out.stage1.audio;
  o2.video_noise_scale = o2.audio_noise_scale = static_cast<double>(s2.front());  // stage_2_sigmas[0].item()
  {
    std::optional<StageLora> lora;
    if (kind == TwoStageKind::TwoStage) lora.emplace(*parts.dit, *parts.stage2_lora);
    out.stage2 = denoise_stage(*parts.dit, r, c, gen, o2, keep_steps, stage2_images, report(n1));
  }  // the LoRA patched out: the DiT is stage 1's again
  out.video = out.stage2.video;
  out.audio = kind == TwoStageKind::TwoStage ? out.stage1.audio : out.stage2.audio;
  return out;
}

}  // namespace vidax::ltx2
