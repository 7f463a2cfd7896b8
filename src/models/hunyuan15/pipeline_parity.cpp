#include "models/hunyuan15/pipeline_parity.h"

#include <map>

#include "backend/ops.h"
#include "core/error.h"
#include "models/hunyuan15/checkpoint_keys.h"
#include "models/hunyuan15/t2v.h"
#include "models/hunyuan15/vae_keys.h"
#include "nn/synthetic_init.h"
#include "pipeline/generate.h"
#include "translate/component.h"
#include "translate/source.h"

namespace vidax::hunyuan15 {

namespace {

constexpr const char* kKind = "hunyuan1.5.pipeline.t2v";

// The golden's embeddings, for the prompts it names (the prompt, and the negative prompt when it
// runs classifier-free guidance).
class GoldenPrompt final : public PromptEncoder {
 public:
  explicit GoldenPrompt(std::map<std::string, PromptEmbeds> e) : e_(std::move(e)) {}
  PromptEmbeds encode(const std::string& prompt) override {
    const auto it = e_.find(prompt);
    VIDAX_CHECK(it != e_.end(), kKind << ": the golden holds no embeddings for '" << prompt << "'");
    return it->second;
  }

 private:
  std::map<std::string, PromptEmbeds> e_;
};

// The input's name in the file: `name`, or the pipeline's own spelling of it (__call__'s
// prompt_embeds / prompt_mask for text_states / text_mask).
std::string input_name(const parity::Golden& g, const std::string& name) {
  static const std::pair<const char*, const char*> kAliases[] = {{"text_states", "prompt_embeds"},
                                                                 {"text_mask", "prompt_mask"}};
  if (g.file.contains("input." + name)) return "input." + name;
  for (const auto& [ours, theirs] : kAliases) {
    const size_t at = name.rfind(ours);
    if (at != std::string::npos && at + std::string(ours).size() == name.size()) {
      const std::string alt = "input." + name.substr(0, at) + theirs;
      if (g.file.contains(alt)) return alt;
    }
  }
  throw Error(msg() << g.path << ": " << kKind << " needs input." << name);
}

Tensor first_of_batch(const parity::Golden& g, const std::string& name, int64_t dims) {
  const Tensor t = g.file.get(input_name(g, name));
  VIDAX_CHECK(t.dim() == dims + 1 && t.size(0) == 1,
              g.path << ": input." << name << " " << t.str() << ": expected a batch of one, " << dims + 1 << " dims");
  return t.squeeze(0).contiguous();
}

PromptEmbeds embeds_of(const parity::Golden& g, const std::string& p, bool glyphs) {
  PromptEmbeds e;
  e.text_states = first_of_batch(g, p + "text_states", 2);
  e.text_mask = first_of_batch(g, p + "text_mask", 1).to(DType::I64);
  if (glyphs) {
    e.byt5_states = first_of_batch(g, p + "byt5_text_states", 2);
    e.byt5_mask = first_of_batch(g, p + "byt5_text_mask", 1).to(DType::I64);
  }
  return e;
}

// The DiT: __metadata__.synthetic_params (official names) and transformer.* tensors, strictly.
std::shared_ptr<const HunyuanVideo15DiT> golden_dit(const parity::Golden& g, const nlohmann::json& config,
                                                    DType compute) {
  translate::MemorySource src(g.path + " transformer.*");
  for (const std::string& n : g.file.names())
    if (n.rfind("transformer.", 0) == 0) src.add(n.substr(12), g.file.get(n));
  if (auto it = g.file.metadata().find("synthetic_params"); it != g.file.metadata().end())
    for (const auto& [n, t] : nn::synthetic_from_description(it->second, g.path)) {
      VIDAX_CHECK(!src.find(n), g.path << ": DiT parameter '" << n << "' is both stored and synthetic");
      src.add(n, t);
    }
  const DiTConfig cfg = DiTConfig::from_json(config);
  return std::make_shared<const HunyuanVideo15DiT>(
      HunyuanVideo15DiT::from_weights(cfg, translate::load(src, dit_component(), config), compute, g.path));
}

// The VAE decoder: vae.* tensors (official names), strictly.
std::shared_ptr<const HunyuanVideo15VAE> golden_vae(const parity::Golden& g, const VAEConfig& cfg) {
  translate::MemorySource src(g.path + " vae.*");
  for (const std::string& n : g.file.names())
    if (n.rfind("vae.", 0) == 0) src.add(n.substr(4), g.file.get(n));
  nn::ParamSource params =
      nn::ParamSource::from_map(translate::load(src, vae_decoder_component(), cfg.to_json()), g.path);
  auto vae = std::make_shared<const HunyuanVideo15VAE>(cfg, params, VAEParts{.encoder = false, .decoder = true},
                                                       DType::F32);
  params.expect_all_taken();
  return vae;
}

}  // namespace

parity::Produced run_t2v_golden(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.mesh.empty(), g.path << ": " << kKind << " runs on a single rank");
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("dit") && c.contains("vae"), g.path << ": config needs \"dit\" and \"vae\" (init args)");
  DType compute = DType::F32;
  if (opt.precision == "bf16") compute = DType::BF16;
  else VIDAX_CHECK(opt.precision == "fp32" || opt.precision.empty(), kKind << ": precision must be fp32 or bf16");

  auto dit = golden_dit(g, c.at("dit"), compute);
  auto vae = golden_vae(g, VAEConfig::from_json(c.at("vae")));

  T2VOptions t2v;
  t2v.vision_tokens = c.value("vision_num_semantic_tokens", t2v.vision_tokens);
  // The decode runs in vae.memory_efficient_context() (spatial tiling on) with the tile the VAE
  // instance holds: "vae_tiling" (what set_tile_sample_min_size set), else the constructor's
  // (the config's sample_size, overlap 0.25).
  t2v.tiling = VAETiling{true, 0, 0.25};
  if (c.contains("vae_tiling")) {
    const nlohmann::json& t = c.at("vae_tiling");
    t2v.tiling = VAETiling{true, t.at("sample_size").get<int64_t>(), t.at("overlap").get<double>()};
  }
  // The request under request_from_json's names, or __call__'s (guidance_scale, flow_shift,
  // video_length, num_inference_steps); the sampler is the pipeline's flow_match_euler by default.
  nlohmann::json rc = c;
  for (const auto& [ours, theirs] : {std::pair<const char*, const char*>{"guidance", "guidance_scale"},
                                     {"shift", "flow_shift"}, {"frames", "video_length"},
                                     {"steps", "num_inference_steps"}})
    if (!rc.contains(ours) && rc.contains(theirs)) rc[ours] = rc.at(theirs);
  if (!rc.contains("sampler")) rc["sampler"] = "flow_match_euler";
  pipeline::Request r = pipeline::request_from_json(rc, "");
  // do_classifier_free_guidance is guidance_scale > 1: a smaller scale runs the prompt alone, which
  // the loop's classifier-free guidance does at exactly 1.
  if (r.guidance < 1.0) r.guidance = 1.0;
  const bool glyphs = dit->config().glyph_byT5_v2;
  std::map<std::string, PromptEmbeds> prompts{{r.prompt, embeds_of(g, "", glyphs)}};
  if (r.guidance > 1.0) {
    VIDAX_CHECK(!r.negative_prompt.empty() && r.negative_prompt != r.prompt,
                g.path << ": guidance " << r.guidance << " needs a negative_prompt naming input.negative_*");
    prompts[r.negative_prompt] = embeds_of(g, "negative_", glyphs);
  }
  const pipeline::Parts parts = make_t2v_parts(dit, vae, std::make_shared<GoldenPrompt>(std::move(prompts)), t2v);

  Tensor first, last;
  pipeline::Events ev;
  ev.on_latent = [&](int step, const Tensor& latent) {
    if (step == 1) first = latent.clone();
    if (step == r.steps) last = latent.clone();
  };
  const pipeline::Result res = pipeline::run_generation(parts, r, ev);

  parity::Produced out;
  out["output.latents"] = res.latents;
  // The pipeline's (video / 2 + 0.5).clamp(0, 1): the same values as this of the clamped video.
  out["output.video"] = ops::add_scalar(ops::scale(res.video, 0.5), 0.5);
  out["inter.noise"] = pipeline::draw_noise(r.seed, pipeline::latent_shape(parts.geometry, r));
  out["inter.timesteps"] = Tensor::from_f64(res.timesteps, {static_cast<int64_t>(res.timesteps.size())});
  out["inter.latents_step0"] = first;
  out["inter.latents_last"] = last;
  return out;
}

void register_pipeline_parity_kinds() { parity::register_kind(kKind, run_t2v_golden); }

}  // namespace vidax::hunyuan15
