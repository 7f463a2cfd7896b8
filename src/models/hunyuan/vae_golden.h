// What the two HunyuanVideo VAEs' parity kinds share (hunyuan.vae.* in vae_parity.cpp here,
// hunyuan1.5.vae.* in src/models/hunyuan15/vae_parity.cpp): the compute dtype of --precision, the
// golden file's parameters loaded strictly through the half's component (the whole VAE's when the
// file holds both halves), and the official forward's outputs: decode(z).sample, or
// encode(x).latent_dist's mode() (+ its mean / logvar when the file has them), each module's output
// as inter.<official module path> when untiled. Internal to the two families' parity kinds.
#pragma once
#include <string>

#include "backend/ops.h"
#include "models/hunyuan/vae.h"
#include "nn/params.h"
#include "parity/parity.h"
#include "translate/inspect.h"
#include "translate/source.h"

namespace vidax::hunyuan::vae_golden {

// kind: "hunyuan.vae", "hunyuan1.5.vae" (named in the error).
inline DType compute_of(const parity::Options& opt, const char* kind) {
  if (opt.precision == "fp32") return DType::F32;
  if (opt.precision == "bf16") return DType::BF16;
  throw Error(msg() << kind << " parity: precision must be fp32 or bf16, found '" << opt.precision << "'");
}

// The golden file's parameters (every key but its input / output / inter ones) for the half
// `decode` names, loaded through that half's component or, when in_half(name, !decode) says the file
// holds the other half's too, through `whole` (both_halves is then set: build and check both).
template <class InHalf>
nn::ParamSource golden_params(const parity::Golden& g, const translate::Json& config, bool decode,
                              const InHalf& in_half, const translate::Component& whole,
                              const translate::Component& encoder, const translate::Component& decoder,
                              bool& both_halves) {
  translate::MemorySource src(g.path);
  both_halves = false;
  for (const std::string& n : g.file.names()) {
    if (translate::is_golden_io_key(n)) continue;
    src.add(n, g.file.get(n));
    both_halves = both_halves || in_half(n, !decode);
  }
  const translate::Component& comp = both_halves ? whole : decode ? decoder : encoder;
  return nn::ParamSource::from_map(translate::load(src, comp, config), g.path);
}

// The official forward on x: tiled when `tiling` is given (the tiles have no single module output),
// else with the module outputs tapped.
template <class VAE, class Tiling>
parity::Produced run(const VAE& vae, const parity::Golden& g, const Tensor& x, bool decode, const Tiling* tiling) {
  parity::Produced out;
  const auto f32 = [](const Tensor& t) { return t.dtype() == DType::F32 ? t : ops::cast(t, DType::F32); };
  const VAETap tap = [&out, &f32](const std::string& module, const Tensor& t) { out["inter." + module] = f32(t); };
  if (decode) {
    out["output"] = f32(tiling ? vae.decode_tiled(x, *tiling) : vae.decode(x, tap));  // decode(z).sample
    return out;
  }
  // encode(x).latent_dist: output = mode(); the distribution's parameters when the file has them.
  const VAEPosterior post = posterior_of(tiling ? vae.encode_moments_tiled(x, *tiling) : vae.encode_moments(x, tap));
  out["output"] = f32(post.mean);
  if (g.file.contains("output.mean")) out["output.mean"] = f32(post.mean);
  if (g.file.contains("output.logvar")) out["output.logvar"] = f32(post.logvar);
  return out;
}

}  // namespace vidax::hunyuan::vae_golden
