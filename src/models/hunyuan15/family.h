// The HunyuanVideo 1.5 family as the engine registers it (pipeline/family.h): the text-to-video
// variants (presets.h), weight discovery (weights.h), the loader (load.h) and the tiny demo
// (demo.h). Its parity kinds (hunyuan1.5.*) are registered by engine/builtin_kinds.cpp.
#pragma once
#include "pipeline/family.h"

namespace vidax::hunyuan15 {

const pipeline::Family& family();

}  // namespace vidax::hunyuan15
