// Parity kinds hunyuan1.5.vae.decode / hunyuan1.5.vae.encode (docs/parity.md): the HunyuanVideo 1.5
// VAE half a golden file holds (the whole VAE when it holds both), official or diffusers names,
// loaded through the translator, strictly; run as the official forward (AutoencoderKLConv3D
// .decode(z).sample and .encode(x).latent_dist), raw: no latent scaling, no clamp; spatially tiled
// when __metadata__.tiling is "spatial" (tile_sample_size, tile_overlap_factor: the
// set_tile_sample_min_size arguments); output (+ output.mean / output.logvar) and inter.<official
// module path> tensors.
#include "models/hunyuan15/vae_parity.h"

#include <mutex>
#include <optional>
#include <string>

#include "backend/ops.h"
#include "models/hunyuan/vae_golden.h"
#include "models/hunyuan15/vae.h"
#include "models/hunyuan15/vae_keys.h"
#include "parity/parity.h"
#include "translate/inspect.h"
#include "translate/source.h"

namespace vidax::hunyuan15 {
namespace {

bool in_half(const std::string& name, bool decoder) { return name.rfind(decoder ? "decoder." : "encoder.", 0) == 0; }

std::string meta_or(const parity::Golden& g, const char* key, const std::string& fallback) {
  auto it = g.file.metadata().find(key);
  return it == g.file.metadata().end() ? fallback : it->second;
}

VAETiling tiling_of(const parity::Golden& g) {
  VAETiling t;
  const std::string mode = meta_or(g, "tiling", "");
  if (mode.empty()) return t;
  VIDAX_CHECK(mode == "spatial", g.path << ": __metadata__.tiling '" << mode
                                        << "' (spatial; the reference's temporal tiling raises)");
  t.spatial = true;
  try {
    t.sample_size = std::stoll(meta_or(g, "tile_sample_size", "0"));
    t.overlap = std::stod(meta_or(g, "tile_overlap_factor", "0.25"));
  } catch (const std::exception&) {
    throw Error(msg() << g.path << ": __metadata__.tile_sample_size / tile_overlap_factor must be numbers");
  }
  return t;
}

parity::Produced run_vae(const parity::Golden& g, const parity::Options& opt, bool decode) {
  VIDAX_CHECK(opt.mesh.empty(), "hunyuan1.5.vae parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  const VAEConfig cfg = VAEConfig::from_json(g.config);
  // The whole state dict is accepted too: then both halves are built and checked.
  bool both = false;
  nn::ParamSource params = hunyuan::vae_golden::golden_params(g, cfg.to_json(), decode, in_half, vae_component(),
                                                              vae_encoder_component(), vae_decoder_component(), both);
  const HunyuanVideo15VAE vae(cfg, params, {.encoder = both || !decode, .decoder = both || decode},
                              hunyuan::vae_golden::compute_of(opt, "hunyuan1.5.vae"));
  params.expect_all_taken();

  const char* input = decode ? "input.z" : "input.x";
  VIDAX_CHECK(g.file.contains(input), g.path << ": a " << g.kind << " golden file needs '" << input << "'");
  const VAETiling tiling = tiling_of(g);
  return hunyuan::vae_golden::run(vae, g, g.file.get(input), decode, tiling.spatial ? &tiling : nullptr);
}

}  // namespace

void register_vae_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] {
    parity::register_kind("hunyuan1.5.vae.decode",
                          [](const parity::Golden& g, const parity::Options& o) { return run_vae(g, o, true); });
    parity::register_kind("hunyuan1.5.vae.encode",
                          [](const parity::Golden& g, const parity::Options& o) { return run_vae(g, o, false); });
  });
}

}  // namespace vidax::hunyuan15
