// Parity kinds wan.vae.decode / wan.vae.encode (DESIGN.md §4): rebuild the VAE half a golden file
// exercises from its own parameters (official or diffusers names, via the translator), run it as
// the WanVAE wrapper does, and hand back output and inter.<official module path> tensors.
#include <map>
#include <mutex>
#include <set>

#include "backend/ops.h"
#include "models/wan/vae.h"
#include "models/wan/vae_parity_run.h"
#include "parity/parity.h"
#include "translate/component.h"
#include "translate/source.h"
#include "models/wan/checkpoint_keys.h"

namespace vidax::wan {
namespace {

bool is_golden_data(const std::string& name) {
  return name.rfind("input.", 0) == 0 || name == "output" || name.rfind("output.", 0) == 0 ||
         name.rfind("inter.", 0) == 0 || name.rfind("scale.", 0) == 0;
}

// The parameters of the half a golden file exercises, under official names, through the
// translator (any layout it knows: original, diffusers, comfyui). The file may hold that half only
// or the whole VAE state dict as published (Wan2.1_VAE.pth holds encoder and decoder): it is
// matched against the whole VAE, so every key of the file must belong to some part of the VAE
// (a stray key fails, named by the translator) and every parameter of the half run must be found
// with its shape; the other half's parameters may be absent, and are left out when present.
std::map<std::string, Tensor> golden_parameters(const parity::Golden& g, const WanVAEConfig& cfg, bool decode) {
  auto file = std::make_shared<translate::CheckpointSource>(g.file, g.path);
  const translate::SubsetSource params(file, [](const std::string& n) { return !is_golden_data(n); }, g.path);
  translate::Match m = translate::match(params, translate::wan::vae_component(), cfg.to_json());
  // The half run, as the translator's own component for it defines it.
  std::set<std::string> half;
  const auto& part = decode ? translate::wan::vae_decoder_component() : translate::wan::vae_encoder_component();
  for (const auto& p : part.params(cfg.to_json()).params) half.insert(p.name);
  const auto other_half = [&](const std::string& name) { return half.count(name) == 0; };
  std::erase_if(m.plan.missing, [&](const translate::Missing& x) { return other_half(x.param.name); });
  VIDAX_CHECK(m.plan.complete(), g.path << ": the parameters do not match the Wan VAE "
                                        << (decode ? "decoder" : "encoder") << " (layout '" << m.layout
                                        << "'):\n" << m.plan.problems());
  std::erase_if(m.plan.bound, [&](const translate::Binding& b) { return other_half(b.param.name); });
  return translate::materialize(params, m.plan, {});
}

}  // namespace

std::map<std::string, Tensor> vae_golden_parameters(const parity::Golden& g, const WanVAEConfig& cfg, bool decode) {
  return golden_parameters(g, cfg, decode);
}

namespace {

// ---- runner ---------------------------------------------------------------------------------

DType compute_dtype(const parity::Options& opt) {
  if (opt.precision == "fp32") return DType::F32;
  if (opt.precision == "bf16") return DType::BF16;
  throw Error(msg() << "wan.vae parity: precision must be fp32 or bf16, found '" << opt.precision << "'");
}

parity::Produced run_vae(const parity::Golden& g, const parity::Options& opt, bool decode) {
  VIDAX_CHECK(opt.mesh.empty(), "wan.vae parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  const WanVAEConfig cfg = WanVAEConfig::from_json(g.config);

  const std::map<std::string, Tensor> params = golden_parameters(g, cfg, decode);
  WanVAE::Parts parts{.encoder = !decode, .decoder = decode};
  const WeightLookup lookup = [&](const std::string& name) {
    auto it = params.find(name);
    VIDAX_CHECK(it != params.end(), g.path << ": the Wan VAE parameter " << name << " is not in the file");
    return it->second;
  };
  WanVAE vae(cfg, lookup, parts, compute_dtype(opt));

  // Strict coverage the other way: every translated parameter is one the model read.
  const std::set<std::string> used(vae.parameter_names().begin(), vae.parameter_names().end());
  for (const auto& [name, t] : params)
    VIDAX_CHECK(used.count(name), g.path << ": the Wan VAE " << (decode ? "decoder" : "encoder")
                                         << " does not use the parameter " << name);

  return run_vae_golden(vae, g, decode);
}

}  // namespace

void register_vae_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] {
    parity::register_kind("wan.vae.decode",
                          [](const parity::Golden& g, const parity::Options& o) { return run_vae(g, o, true); });
    parity::register_kind("wan.vae.encode",
                          [](const parity::Golden& g, const parity::Options& o) { return run_vae(g, o, false); });
  });
}

}  // namespace vidax::wan
