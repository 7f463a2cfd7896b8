// What the engine registers from the top (no static initializers in the layers
// below): every golden-file kind (parity::register_kind, DESIGN.md §4) and every
// translator component (translate::register_component: what `vidax inspect`,
// `convert` and weight detection match checkpoints against), each family's
// through the registry (engine/families.h). Calling them again does nothing.
#pragma once

namespace vidax::engine {

void register_builtin_kinds();
void register_builtin_components();
// Both: what the CLI does at start-up.
void register_builtins();

}  // namespace vidax::engine
