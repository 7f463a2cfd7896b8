// Parity kinds wan2.2.vae.decode / wan2.2.vae.encode (docs/parity.md): the Wan 2.2 VAE half a
// golden file exercises, built from the file's parameters under the official state_dict names, run
// as the Wan2_2_VAE wrapper runs it; output and inter.<official module path> tensors.
#include <map>
#include <mutex>
#include <set>
#include <sstream>

#include "backend/ops.h"
#include "models/wan/vae22.h"
#include "models/wan/vae_parity_run.h"
#include "parity/parity.h"

namespace vidax::wan {
namespace {

bool is_golden_data(const std::string& name) {
  return name.rfind("input.", 0) == 0 || name == "output" || name.rfind("output.", 0) == 0 ||
         name.rfind("inter.", 0) == 0 || name.rfind("scale.", 0) == 0;
}

bool in_half(const std::string& name, bool decoder) {
  return decoder ? name.rfind("decoder.", 0) == 0 || name.rfind("conv2.", 0) == 0
                 : name.rfind("encoder.", 0) == 0 || name.rfind("conv1.", 0) == 0;
}

DType compute_dtype(const parity::Options& opt) {
  if (opt.precision == "fp32") return DType::F32;
  if (opt.precision == "bf16") return DType::BF16;
  throw Error(msg() << "wan2.2.vae parity: precision must be fp32 or bf16, found '" << opt.precision << "'");
}

parity::Produced run_vae22(const parity::Golden& g, const parity::Options& opt, bool decode) {
  VIDAX_CHECK(opt.mesh.empty(), "wan2.2.vae parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  const Wan22VAEConfig cfg = Wan22VAEConfig::from_json(g.config);
  std::map<std::string, Tensor> params;
  for (auto& [name, t] : g.with_prefix(""))
    if (!is_golden_data(name)) params.emplace(name, t);
  const WeightLookup lookup = [&](const std::string& name) {
    auto it = params.find(name);
    VIDAX_CHECK(it != params.end(), g.path << ": the Wan 2.2 VAE parameter " << name << " is not in the file");
    return it->second;
  };
  const DType compute = compute_dtype(opt);
  Wan22VAE vae(cfg, lookup, {.encoder = !decode, .decoder = decode}, compute);
  std::set<std::string> used(vae.parameter_names().begin(), vae.parameter_names().end());
  // The whole published state dict is accepted: the other half, when the file holds any of it, is
  // built too (every one of its parameters present, with its shape), so that nothing goes unchecked.
  const bool other_present =
      std::any_of(params.begin(), params.end(), [&](const auto& kv) { return in_half(kv.first, !decode); });
  if (other_present) {
    const Wan22VAE other(cfg, lookup, {.encoder = decode, .decoder = !decode}, compute);
    used.insert(other.parameter_names().begin(), other.parameter_names().end());
  }
  std::ostringstream unused;
  for (const auto& [name, t] : params)
    if (!used.count(name)) unused << "\n  " << name << " " << shape_str(t.shape());
  VIDAX_CHECK(unused.str().empty(), g.path << ": tensors the Wan 2.2 VAE does not have:" << unused.str());

  return run_vae_golden(vae, g, decode);
}

}  // namespace

void register_vae22_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] {
    parity::register_kind("wan2.2.vae.decode",
                          [](const parity::Golden& g, const parity::Options& o) { return run_vae22(g, o, true); });
    parity::register_kind("wan2.2.vae.encode",
                          [](const parity::Golden& g, const parity::Options& o) { return run_vae22(g, o, false); });
  });
}

}  // namespace vidax::wan
