// Parity kind wan.vace.conditioning (docs/parity.md): the VACE context WanVace.generate builds
// (vace_encode_frames, vace_encode_masks, vace_latent, prepare_source's reference canvas) from a
// golden file's frames, mask and reference images, with the file's Wan VAE encoder.
#include <set>
#include <string>
#include <vector>

#include "models/wan/vace_conditioning.h"
#include "models/wan/vace_parity.h"
#include "models/wan/vae.h"
#include "models/wan/vae_parity_run.h"
#include "parity/parity.h"

namespace vidax::wan {
namespace {

parity::Produced run_vace_conditioning(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.mesh.empty(), "wan.vace.conditioning parity: runs on a single rank");
  VIDAX_CHECK(opt.precision == "fp32", "wan.vace.conditioning parity: fp32 only (the reference's VAE runs in fp32)");
  VIDAX_CHECK(g.config.contains("vae"), g.path << ": config has no 'vae' (the WanVAE_ init args)");
  const WanVAEConfig cfg = WanVAEConfig::from_json(g.config.at("vae"));
  const auto stride = g.config.value("vae_stride", std::vector<int64_t>{4, 8, 8});
  VIDAX_CHECK(stride.size() == 3 && stride[1] == stride[2], g.path << ": vae_stride must be [t, s, s]");
  const std::map<std::string, Tensor> params = vae_golden_parameters(g, cfg, /*decode=*/false);
  const WeightLookup lookup = [&](const std::string& name) {
    auto it = params.find(name);
    VIDAX_CHECK(it != params.end(), g.path << ": the Wan VAE parameter " << name << " is not in the file");
    return it->second;
  };
  const WanVAE vae(cfg, lookup, WanVAE::Parts{.encoder = true, .decoder = false}, DType::F32);
  const std::set<std::string> used(vae.parameter_names().begin(), vae.parameter_names().end());
  for (const auto& [name, t] : params)
    VIDAX_CHECK(used.count(name), g.path << ": the Wan VAE encoder does not use the parameter " << name);
  const VaeEncode encode = [&vae](const Tensor& video) {
    return vae.encode_normalized(video, LatentScale::wan21()).squeeze(0);
  };

  const Tensor frames = g.input("frames"), mask = g.input("mask");
  parity::Produced out;
  std::vector<Tensor> refs;
  for (int j = 0; g.has("input.reference_image." + std::to_string(j)); ++j) {
    refs.push_back(vace_reference_image(g.input("reference_image." + std::to_string(j)), frames.size(2), frames.size(3)));
    out["inter.reference." + std::to_string(j)] = refs.back();
  }
  const Tensor z0 = vace_encode_frames(frames, mask, refs, encode);
  const Tensor m0 = vace_encode_masks(mask, static_cast<int64_t>(refs.size()), stride[0], stride[1]);
  out["output.z0"] = z0;
  out["output.m0"] = m0;
  out["output"] = vace_latent(z0, m0);
  return out;
}

}  // namespace

void register_vace_parity_kinds() { parity::register_kind("wan.vace.conditioning", run_vace_conditioning); }

}  // namespace vidax::wan
