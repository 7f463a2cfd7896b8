// `vidax bench` for LTX-2 (pipeline/bench.h has what is measured and how), on random weights:
//   text encoder (optional, --text-encoder)  Gemma-3 (12B for the 22B) on one 1024-row batch (the
//                  prompt's tokens valid), every hidden state out (the feature extractor and the
//                  connectors, small beside it, are not timed)
//   DiT step       one audio-video forward of LTXModel at the requested video's latent (8x / 32x,
//                  patch 1) and the audio latent of as many seconds (25 latents a second), with
//                  the connectors' 1024-token contexts; --cfg: the step as the pipeline runs it,
//                  every guider pass of the variant (cond, uncond, STG, modality: 4 for the 22B)
//                  batched into one forward
//   VAE decode (optional, the demo only)  the video decoder on the whole latent, as the pipeline
//                  decodes (untiled)
// The 22B's shapes are not in a preset (its checkpoint carries its config): bench_dit_config has
// them, LTXModel's published widths with LTX-2.3's gated attention and cross-attention AdaLN.
// --weights-dtype makes the DiT's matrices in a GGUF / scaled type (the loader computes on them):
// at bf16 the 22B needs ~44 GB for its weights and their packed copy, q4_k ~13 GB.
// Not offered (refused): --vae on the 22B (its VAE config is in its checkpoint), --offload, --mesh,
// --device pjrt, --lora, weight files, --vae-tile.
#pragma once
#include <nlohmann/json.hpp>

#include "models/ltx2/dit_config.h"
#include "pipeline/bench.h"

namespace vidax::ltx2 {

// The transformer config bench times for `model` (the demo's own; the 22B's published widths).
nlohmann::json bench_dit_config(const std::string& model);

nlohmann::json run_bench(const pipeline::BenchOptions& opt, const pipeline::BenchLog& log);

}  // namespace vidax::ltx2
