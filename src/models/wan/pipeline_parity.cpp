#include "models/wan/pipeline_parity.h"

#include <filesystem>

#include "core/error.h"
#include "models/wan/t2v_load.h"
#include "parity/parity.h"
#include "pipeline/generate.h"
#include "translate/config_fields.h"

namespace vidax::wan {

parity::Produced run_t2v_golden(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.mesh.empty(), g.path << ": wan.pipeline.t2v runs on a single rank (no --mesh yet)");
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("weights"), g.path << ": config has no \"weights\" (the checkpoint directory)");
  pipeline::LoadOptions lo;
  try {
    lo.weights_dir = (std::filesystem::path(g.path).parent_path() / translate::required<std::string>(c, "weights")).string();
    lo.model = translate::value_or<std::string>(c, "model", "");
  } catch (const Error& e) {
    throw Error(msg() << g.path << ": __metadata__.config: " << e.what());
  }
  lo.precision = opt.precision;
  LoadedT2V m = load_t2v(lo);

  const pipeline::Request r = pipeline::request_from_json(c, m.preset.variant.defaults.negative_prompt);
  pipeline::Result res = pipeline::run_generation(m.parts, r);

  parity::Produced out;
  out["output.latents"] = res.latents;
  out["output.video"] = res.video;
  out["inter.noise"] = pipeline::draw_noise(r.seed, pipeline::latent_shape(m.parts.geometry, r));
  out["inter.timesteps"] = Tensor::from_f64(res.timesteps, {static_cast<int64_t>(res.timesteps.size())});
  return out;
}

}  // namespace vidax::wan
