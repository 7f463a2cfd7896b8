// Registers parity kind `wan.dit`. Include only from the parity layer
// (src/parity/kinds.cpp): it is inline so that the call into vidax::parity is
// compiled there and the models layer never links against the parity layer.
#pragma once
#include "models/wan/dit_parity.h"
#include "parity/parity.h"

namespace vidax::wan {

inline void register_dit_parity_kinds() {
  parity::register_kind("wan.dit", [](const parity::Golden& g, const parity::Options& opt) {
    VIDAX_CHECK(opt.mesh.empty(), g.path << ": wan.dit parity runs on a single rank (no --mesh yet)");
    return run_dit_golden(g.file, g.config, opt.precision, g.path);
  });
}

}  // namespace vidax::wan
