// Parity kinds hunyuan.vae.decode / hunyuan.vae.encode (docs/parity.md): the HunyuanVideo VAE half a
// golden file holds (the whole VAE when it holds both), loaded from the file's parameters through
// the translator, strictly; run as the official forward (AutoencoderKLCausal3D.decode(z).sample and
// .encode(x).latent_dist), raw: no latent scaling, no clamp (the pipeline's scaling is
// HunyuanVAE::decode_scaled / encode_scaled, not checked here); tiled when the file's
// __metadata__.tiling says so; output (+ output.mean / output.logvar) and inter.<official module
// path> tensors.
#include <algorithm>
#include <mutex>
#include <optional>
#include <sstream>

#include "backend/ops.h"
#include "models/hunyuan/vae.h"
#include "models/hunyuan/vae_keys.h"
#include "parity/parity.h"
#include "translate/inspect.h"
#include "translate/source.h"

namespace vidax::hunyuan {
namespace {

DType compute_of(const parity::Options& opt) {
  if (opt.precision == "fp32") return DType::F32;
  if (opt.precision == "bf16") return DType::BF16;
  throw Error(msg() << "hunyuan.vae parity: precision must be fp32 or bf16, found '" << opt.precision << "'");
}

bool in_half(const std::string& name, bool decoder) {
  return decoder ? name.rfind("decoder.", 0) == 0 || name.rfind("post_quant_conv.", 0) == 0
                 : name.rfind("encoder.", 0) == 0 || name.rfind("quant_conv.", 0) == 0;
}

parity::Produced run_vae(const parity::Golden& g, const parity::Options& opt, bool decode) {
  VIDAX_CHECK(opt.mesh.empty(), "hunyuan.vae parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  const VAEConfig cfg = VAEConfig::from_json(g.config);
  translate::MemorySource src(g.path);
  bool other_half = false;
  for (const std::string& n : g.file.names()) {
    if (translate::is_golden_io_key(n)) continue;
    src.add(n, g.file.get(n));
    other_half = other_half || in_half(n, !decode);
  }
  // The whole published state dict is accepted too: then both halves are built and checked.
  const translate::Component& comp =
      other_half ? vae_component() : decode ? vae_decoder_component() : vae_encoder_component();
  nn::ParamSource params = nn::ParamSource::from_map(translate::load(src, comp, cfg.to_json()), g.path);
  const HunyuanVAE vae(cfg, params, {.encoder = other_half || !decode, .decoder = other_half || decode},
                       compute_of(opt));
  params.expect_all_taken();

  // decode(z): input.z; encode(x): input.x, or input.video (the older name) when there is no input.x.
  const char* input = decode ? "input.z" : g.file.contains("input.x") ? "input.x" : "input.video";
  VIDAX_CHECK(g.file.contains(input), g.path << ": a " << g.kind << " golden file needs "
                                             << (decode ? "'input.z'" : "'input.x' (or its alias 'input.video')"));
  VIDAX_CHECK(decode || !(g.file.contains("input.x") && g.file.contains("input.video")),
              g.path << ": both 'input.x' and 'input.video' given; a " << g.kind << " file takes one");
  parity::Produced out;
  const auto f32 = [](const Tensor& t) { return t.dtype() == DType::F32 ? t : ops::cast(t, DType::F32); };
  const VAETap tap = [&out, &f32](const std::string& module, const Tensor& t) { out["inter." + module] = f32(t); };
  // __metadata__.tiling: "spatial", "temporal" or "spatial,temporal": the reference's tiled run
  // (enable_spatial_tiling / enable_temporal_tiling), whose tiles have no single module output.
  std::optional<VAETiling> tiling;
  if (auto it = g.file.metadata().find("tiling"); it != g.file.metadata().end()) {
    tiling.emplace();
    std::stringstream list(it->second);
    for (std::string w; std::getline(list, w, ',');) {
      VIDAX_CHECK(w == "spatial" || w == "temporal",
                  g.path << ": __metadata__.tiling entry '" << w << "' (spatial, temporal)");
      (w == "spatial" ? tiling->spatial : tiling->temporal) = true;
    }
  }
  const Tensor x = g.file.get(input);
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

}  // namespace

void register_vae_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] {
    parity::register_kind("hunyuan.vae.decode",
                          [](const parity::Golden& g, const parity::Options& o) { return run_vae(g, o, true); });
    parity::register_kind("hunyuan.vae.encode",
                          [](const parity::Golden& g, const parity::Options& o) { return run_vae(g, o, false); });
  });
}

}  // namespace vidax::hunyuan
