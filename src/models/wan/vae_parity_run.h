// The run both Wan VAE parity kinds share (wan.vae.* and wan2.2.vae.*, docs/parity.md): the
// golden's latent scale, the wrapper's normalised decode or encode with the modules' outputs
// tapped, and the taps of each chunk joined along time as the golden's inter.* tensors (F32).
#pragma once
#include <map>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "models/wan/vae.h"
#include "parity/parity.h"

namespace vidax::wan {

// The Wan 2.1 VAE half (encoder + conv1, or conv2 + decoder) of a golden file's parameters, under
// official names through the translator; strict (models/wan/vae_parity.cpp).
std::map<std::string, Tensor> vae_golden_parameters(const parity::Golden& g, const WanVAEConfig& cfg, bool decode);

template <class VAE>
parity::Produced run_vae_golden(const VAE& vae, const parity::Golden& g, bool decode) {
  const LatentScale scale = LatentScale::from_tensors(g.file.get("scale.mean"), g.file.get("scale.std"));
  std::map<std::string, std::vector<Tensor>> taps;
  const Tap tap = [&](const std::string& module, const Tensor& out) { taps[module].push_back(out); };
  parity::Produced produced;
  produced["output"] = decode ? vae.decode_normalized(g.input("z"), scale, tap)
                              : vae.encode_normalized(g.input("video"), scale, tap);
  for (auto& [module, pieces] : taps) {
    Tensor t = pieces.size() == 1 ? pieces[0] : ops::concat(pieces, 2);  // chunks along time
    produced["inter." + module] = t.dtype() == DType::F32 ? t : ops::cast(t, DType::F32);
  }
  return produced;
}

}  // namespace vidax::wan
