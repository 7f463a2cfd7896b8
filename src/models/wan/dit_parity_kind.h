// Registers parity kind `wan.dit`. Include only from the parity layer
// (src/parity/kinds.cpp): it is inline so that the call into vidax::parity is
// compiled there and the models layer never links against the parity layer.
#pragma once
#include "io/quant_policy.h"
#include <memory>

#include "dist/mesh.h"
#include "models/wan/dit_parity.h"
#include "parity/parity.h"

namespace vidax::wan {

inline void register_dit_parity_kinds() {
  parity::register_kind("wan.dit", [](const parity::Golden& g, const parity::Options& opt) {
    // --mesh: every rank runs its part (docs/parallelism.md) and returns the whole result.
    std::unique_ptr<dist::Mesh> mesh;
    if (!opt.mesh.empty()) mesh = std::make_unique<dist::Mesh>(dist::world(), dist::parse_mesh(opt.mesh));
    std::vector<translate::LoraSpec> loras;
    for (const auto& a : opt.loras) loras.push_back(translate::parse_lora_spec(a));
    const io::QuantTarget quantize = io::QuantTarget::parse(opt.quantize);  // "" is none
    return run_dit_golden(g.file, g.config, opt.precision, g.path, mesh.get(), loras,
                          translate::LoraOptions{opt.lora_allow_unmatched, translate::parse_lora_mode(opt.lora_mode)}, quantize,
                          opt.device == "pjrt" ? opt.pjrt_plugin : "");
  }, /*takes_loras=*/true, /*takes_quantize=*/true, /*takes_pjrt=*/true);
}

}  // namespace vidax::wan
