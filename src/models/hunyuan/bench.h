// `vidax bench` for HunyuanVideo 1.0 (pipeline/bench.h has what is measured and how), on random
// weights of the preset's real shapes:
//   text encoder (optional, --text-encoder)  the LLM (LLaVA-Llama-3-8B for the published variants)
//                  on one text_len-row batch (the prompt's tokens valid) up to hidden_states[-3]
//                  (the reference's skip 2)
//   DiT step       one forward per context (two with --cfg) at the requested video's latent, with
//                  the rotary tables of its patch grid, the pooled CLIP vector and the embedded
//                  guidance (6.0) as the pipeline gives them
//   VAE decode (optional)  decode_tiled with spatial and temporal tiling (the --vae-tiling default)
// --weights-dtype makes the DiT's matrices in a GGUF / scaled type (the loader computes on them).
// Not offered (refused): --offload, --mesh, --device pjrt, --lora, weight files, --vae-tile.
#pragma once
#include <nlohmann/json.hpp>

#include "pipeline/bench.h"

namespace vidax::hunyuan {

nlohmann::json run_bench(const pipeline::BenchOptions& opt, const pipeline::BenchLog& log);

}  // namespace vidax::hunyuan
