#include "models/hunyuan/pipeline_parity.h"

#include <map>

#include "backend/ops.h"
#include "core/error.h"
#include "models/hunyuan/checkpoint_keys.h"
#include "models/hunyuan/t2v.h"
#include "models/hunyuan/vae_keys.h"
#include "pipeline/generate.h"
#include "translate/component.h"
#include "translate/source.h"

namespace vidax::hunyuan {

namespace {

// The golden's embeddings, for the prompts it names (the prompt, and the negative prompt when it
// runs classifier-free guidance).
class GoldenPrompt final : public PromptEncoder {
 public:
  explicit GoldenPrompt(std::map<std::string, PromptEmbeds> e) : e_(std::move(e)) {}
  PromptEmbeds encode(const std::string& prompt) override {
    const auto it = e_.find(prompt);
    VIDAX_CHECK(it != e_.end(), "hunyuan.pipeline.t2v: the golden holds no embeddings for '" << prompt << "'");
    return it->second;
  }

 private:
  std::map<std::string, PromptEmbeds> e_;
};

Tensor first_of_batch(const parity::Golden& g, const std::string& name, int64_t dims) {
  VIDAX_CHECK(g.file.contains("input." + name), g.path << ": hunyuan.pipeline.t2v needs input." << name);
  const Tensor t = g.file.get("input." + name);
  VIDAX_CHECK(t.dim() == dims + 1 && t.size(0) == 1,
              g.path << ": input." << name << " " << t.str() << ": expected a batch of one, " << dims + 1 << " dims");
  return t.squeeze(0).contiguous();
}

}  // namespace

parity::Produced run_t2v_golden(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.mesh.empty(), g.path << ": hunyuan.pipeline.t2v runs on a single rank");
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("dit") && c.contains("vae"), g.path << ": config needs \"dit\" and \"vae\" (init args)");
  const DiTConfig dit_cfg = DiTConfig::from_json(c.at("dit"));
  const VAEConfig vae_cfg = VAEConfig::from_json(c.at("vae"));
  DType compute = DType::F32;
  if (opt.precision == "bf16") compute = DType::BF16;
  else VIDAX_CHECK(opt.precision == "fp32" || opt.precision.empty(), "hunyuan.pipeline.t2v: precision must be fp32 or bf16");

  // Parameters: transformer.* (the DiT's official names), vae.* (the "prefixed" VAE layout).
  translate::MemorySource dit_src(g.path + " transformer.*"), vae_src(g.path + " vae.*");
  for (const std::string& n : g.file.names()) {
    if (n.rfind("transformer.", 0) == 0) dit_src.add(n.substr(12), g.file.get(n));
    else if (n.rfind("vae.", 0) == 0) vae_src.add(n, g.file.get(n));
  }
  auto dit = std::make_shared<const HunyuanDiT>(
      HunyuanDiT::from_weights(dit_cfg, translate::load(dit_src, dit_component(), dit_cfg.to_json()), compute, g.path));
  nn::ParamSource vae_params =
      nn::ParamSource::from_map(translate::load(vae_src, vae_decoder_component(), vae_cfg.to_json()), g.path);
  auto vae = std::make_shared<const HunyuanVAE>(vae_cfg, vae_params, VAEParts{.encoder = false, .decoder = true},
                                                DType::F32);
  vae_params.expect_all_taken();

  pipeline::Request r = pipeline::request_from_json(c, "");
  // input.prompt_embeds, input.attention_mask, input.prompt_embeds_2, and with cfg_scale > 1 the
  // negative_* counterparts (the pipeline's negative_prompt_embeds / negative_attention_mask).
  auto embeds = [&](const std::string& p) {
    PromptEmbeds e;
    e.text_states = first_of_batch(g, p + "prompt_embeds", 2);
    e.text_mask = first_of_batch(g, p + "attention_mask", 1).to(DType::I64);
    e.text_states_2 = first_of_batch(g, p + "prompt_embeds_2", 1);
    return e;
  };
  std::map<std::string, PromptEmbeds> prompts{{r.prompt, embeds("")}};
  if (r.cfg_scale != 1.0) {
    VIDAX_CHECK(!r.negative_prompt.empty() && r.negative_prompt != r.prompt,
                g.path << ": cfg_scale " << r.cfg_scale << " needs a negative_prompt naming input.negative_*");
    prompts[r.negative_prompt] = embeds("negative_");
  }
  // The official default --vae-tiling (the decode tiles where the latent exceeds one tile).
  pipeline::Parts parts = make_t2v_parts(dit, vae, VAETiling{.spatial = true, .temporal = true},
                                         std::make_shared<GoldenPrompt>(std::move(prompts)));
  const pipeline::Result res = pipeline::run_generation(parts, r);

  parity::Produced out;
  out["output.latents"] = res.latents;
  // The pipeline's (image / 2 + 0.5).clamp(0, 1): the same values as this of the clamped video.
  out["output.video"] = ops::add_scalar(ops::scale(res.video, 0.5), 0.5);
  out["inter.noise"] = pipeline::draw_noise(r.seed, pipeline::latent_shape(parts.geometry, r));
  out["inter.timesteps"] = Tensor::from_f64(res.timesteps, {static_cast<int64_t>(res.timesteps.size())});
  return out;
}

}  // namespace vidax::hunyuan
