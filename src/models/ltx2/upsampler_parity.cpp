// Kind ltx2.upsampler (docs/parity.md): the golden's LatentUpsampler built from __metadata__.config
// (the checkpoint metadata's `config`, as LatentUpsamplerConfigurator.from_metadata reads it) and
// its parameters under the official names, strictly; input.latent -> output, inter.<module path>
// (initial_conv, res_blocks.<i>, upsampler, post_upsample_res_blocks.<i>, final_conv). fp32 only.
#include <mutex>

#include "core/error.h"
#include "models/ltx2/upsampler.h"
#include "parity/parity.h"
#include "translate/inspect.h"

namespace vidax::ltx2 {
namespace {

parity::Produced run_upsampler(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.precision.empty() || opt.precision == "fp32",
              "ltx2.upsampler parity: only fp32 is verified, found '" << opt.precision << "'");
  VIDAX_CHECK(opt.mesh.empty(), "ltx2.upsampler parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  VIDAX_CHECK(opt.loras.empty() && opt.quantize.empty() && (opt.device.empty() || opt.device == "cpu"),
              "ltx2.upsampler parity: --lora, --quantize and --device are not supported for the latent upsampler");
  const UpsamplerConfig cfg = UpsamplerConfig::from_json(g.config);
  std::map<std::string, Tensor> params;
  for (const std::string& n : g.file.names())
    if (!translate::is_golden_io_key(n)) params.emplace(n, g.file.get(n));
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), g.path);
  const LatentUpsampler up(cfg, src);
  src.expect_all_taken();
  parity::Produced out;
  const UpsamplerTap tap = [&out](const std::string& module, const Tensor& t) { out["inter." + module] = t; };
  out["output"] = up.forward(g.input("latent").to(DType::F32), tap);
  return out;
}

}  // namespace

void register_upsampler_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] { parity::register_kind("ltx2.upsampler", run_upsampler); });
}

}  // namespace vidax::ltx2
