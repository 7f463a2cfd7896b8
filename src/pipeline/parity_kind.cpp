#include "pipeline/parity_kind.h"

#include <filesystem>

#include "core/error.h"
#include "parity/parity.h"
#include "pipeline/wan_t2v.h"
#include "pipeline/wan_t2v_load.h"

namespace vidax::pipeline {

parity::Produced run_t2v_golden(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.mesh.empty(), g.path << ": wan.pipeline.t2v runs on a single rank (no --mesh yet)");
  const nlohmann::json& c = g.config;
  VIDAX_CHECK(c.contains("weights"), g.path << ": config has no \"weights\" (the checkpoint directory)");
  WanT2VLoadOptions lo;
  lo.weights_dir = (std::filesystem::path(g.path).parent_path() / c["weights"].get<std::string>()).string();
  lo.model = c.value("model", std::string());
  lo.precision = opt.precision;
  LoadedWanT2V m = load_wan_t2v(lo);

  const T2VRequest r = t2v_request_from_json(c, m.preset.negative_prompt);
  T2VResult res = run_wan_t2v(m.parts, r);

  parity::Produced out;
  out["output.latents"] = res.latents;
  out["output.video"] = res.video;
  out["inter.noise"] = draw_noise(r.seed, latent_shape(m.parts.geometry, r));
  out["inter.timesteps"] = Tensor::from_f64(res.timesteps, {static_cast<int64_t>(res.timesteps.size())});
  return out;
}

}  // namespace vidax::pipeline
