// Registers every golden-file kind the engine ships with parity::register_kind (DESIGN.md §4).
// Call it before parity::run / parity::registered_kinds; calling it again does nothing.
#pragma once

namespace vidax::engine {

void register_builtin_kinds();

}  // namespace vidax::engine
