// The LTX-2 family as the engine registers it (pipeline/family.h): the LTX-2.3 variants
// (presets.h), discovery of the official single-folder layout (checkpoint.h), the loader whose
// parts own the whole audio-video run (t2v_run.h, Parts::run), and the tiny demo (demo.h). The
// parity kinds ltx2.* stay registered by engine/builtin_kinds.cpp.
#pragma once
#include "pipeline/family.h"

namespace vidax::ltx2 {

const pipeline::Family& family();

}  // namespace vidax::ltx2
