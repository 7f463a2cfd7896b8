// The HunyuanVideo 1.0 family as the engine registers it (pipeline/family.h): the text-to-video
// variants (presets.h), weight discovery (weights.h), the loader (t2v.h), and the parity kinds
// hunyuan.dit, hunyuan.vae.decode / .encode and hunyuan.pipeline.t2v, and the translator's
// components (the DiT, the VAE and its halves).
#pragma once
#include "pipeline/family.h"

namespace vidax::hunyuan {

const pipeline::Family& family();

}  // namespace vidax::hunyuan
