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
#include "models/hunyuan/vae_golden.h"
#include "models/hunyuan/vae_keys.h"
#include "parity/parity.h"
#include "translate/inspect.h"
#include "translate/source.h"

namespace vidax::hunyuan {
namespace {

bool in_half(const std::string& name, bool decoder) {
  return decoder ? name.rfind("decoder.", 0) == 0 || name.rfind("post_quant_conv.", 0) == 0
                 : name.rfind("encoder.", 0) == 0 || name.rfind("quant_conv.", 0) == 0;
}

parity::Produced run_vae(const parity::Golden& g, const parity::Options& opt, bool decode) {
  VIDAX_CHECK(opt.mesh.empty(), "hunyuan.vae parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  const VAEConfig cfg = VAEConfig::from_json(g.config);
  // The whole published state dict is accepted too: then both halves are built and checked.
  bool both = false;
  nn::ParamSource params = vae_golden::golden_params(g, cfg.to_json(), decode, in_half, vae_component(),
                                                     vae_encoder_component(), vae_decoder_component(), both);
  const HunyuanVAE vae(cfg, params, {.encoder = both || !decode, .decoder = both || decode},
                       vae_golden::compute_of(opt, "hunyuan.vae"));
  params.expect_all_taken();

  // decode(z): input.z; encode(x): input.x, or input.video (the older name) when there is no input.x.
  const char* input = decode ? "input.z" : g.file.contains("input.x") ? "input.x" : "input.video";
  VIDAX_CHECK(g.file.contains(input), g.path << ": a " << g.kind << " golden file needs "
                                             << (decode ? "'input.z'" : "'input.x' (or its alias 'input.video')"));
  VIDAX_CHECK(decode || !(g.file.contains("input.x") && g.file.contains("input.video")),
              g.path << ": both 'input.x' and 'input.video' given; a " << g.kind << " file takes one");
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
  return vae_golden::run(vae, g, g.file.get(input), decode, tiling ? &*tiling : nullptr);
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
