// Parity kinds hunyuan1.5.vae.decode / hunyuan1.5.vae.encode (docs/parity.md).
#pragma once

namespace vidax::hunyuan15 {

// Registers both kinds with the parity registry (engine::register_builtin_kinds calls it).
void register_vae_parity_kinds();

}  // namespace vidax::hunyuan15
