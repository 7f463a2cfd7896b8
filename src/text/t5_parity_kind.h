// Registers parity kind `t5.encoder`. Include only from the parity layer
// (src/parity/kinds.cpp): it is inline so that the call into vidax::parity is
// compiled there and the text layer never links against the parity layer.
#pragma once
#include "core/error.h"
#include "parity/parity.h"
#include "text/t5_parity.h"

namespace vidax::text {

inline void register_parity_kinds() {
  parity::register_kind("t5.encoder", [](const parity::Golden& g, const parity::Options& opt) {
    VIDAX_CHECK(opt.mesh.empty(), g.path << ": t5.encoder parity runs on a single rank (no --mesh)");
    return run_t5_golden(g.file, g.config, opt.precision, g.path);
  }, /*takes_loras=*/false, /*takes_quantize=*/true);  // its parameters come from g.file
}

}  // namespace vidax::text
