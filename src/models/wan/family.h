// The Wan family as the engine registers it (pipeline/family.h): the Wan 2.1
// text-to-video variants (presets.h), weight discovery (weights.h), the loader
// (t2v_load.h), the demo checkpoint (demo_weights.h), the bench (bench.h) and
// the parity kinds wan.dit, wan.vae.decode, wan.vae.encode, wan.pipeline.t2v.
#pragma once
#include "pipeline/family.h"

namespace vidax::wan {

const pipeline::Family& family();

}  // namespace vidax::wan
