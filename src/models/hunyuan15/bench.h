// `vidax bench` for HunyuanVideo 1.5 (pipeline/bench.h has what is measured and how), on random
// weights of the preset's real shapes:
//   text encoder (optional, --text-encoder)  the Qwen2.5-VL language model on one text_len-row
//                  batch (the prompt's tokens valid) up to the layer the pipeline reads
//   DiT step       one forward per context (two with --cfg) at the requested video's latent, the
//                  T2V inputs the pipeline gives: [latent, zero condition, zero mask] channels, the
//                  text rows, zero vision states, the glyph rows of a prompt without quoted text
//   VAE decode (optional)  decode_tiled in the pipeline's tiles (256 pixels, overlap 0.125)
// --weights-dtype makes the DiT's matrices in a GGUF / scaled type (the loader computes on them).
// Not offered (refused): --offload, --mesh, --device pjrt, --lora, weight files, --vae-tile.
#pragma once
#include <nlohmann/json.hpp>

#include "pipeline/bench.h"

namespace vidax::hunyuan15 {

nlohmann::json run_bench(const pipeline::BenchOptions& opt, const pipeline::BenchLog& log);

}  // namespace vidax::hunyuan15
