// The LTX-2 variants `vidax generate` runs (pipeline/family.h), as data: each one's sampling defaults
// (the official ltx_pipelines defaults, Lightricks/LTX-2 400fd31: utils/constants.py LTX_2_3_PARAMS,
// DEFAULT_NEGATIVE_PROMPT, and the one-stage parser's args in utils/args.py), its two guiders'
// MultiModalGuiderParams, and for the demo the architecture `vidax make-demo` writes.
//
//   ltx2.3-22b-dev     ltx-2.3-22b-dev.safetensors + the Gemma-3 folder (MODELS-LTX-2.3.md), run as
//                      TI2VidOneStagePipeline runs it: 768 x 512 (width x height), 121 frames at 24
//                      fps, 30 steps, seed 10; video guider cfg 3, stg 1 on block 28, rescale 0.7,
//                      modality 3; audio guider cfg 7, stg 1 on block 28, rescale 0.7, modality 3;
//                      the default negative prompt. The architecture is the checkpoint's own config.
//   ltx2.3-tiny-demo   tiny random weights of the LTX-2.3 architecture (the audio-video DiT with the
//                      cross-attention AdaLN and gated attention, the V2 feature extractor, both
//                      connectors, the video and audio VAE decoders, the vocoder with its bandwidth
//                      extension, a 2-layer Gemma-3 and a tokenizer), in the same folder layout;
//                      the same guiders with STG on its last block (1); 9 frames of 64 x 64, 4 steps.
//   ltx2.3-22b-distilled  ltx-2.3-22b-distilled-1.1.safetensors + the Gemma-3 folder + the spatial x2
//                      upsampler, run as DistilledPipeline (always two stages, two_stage.h): 1536 x 1024,
//                      121 frames at 24 fps (default_2_stage_distilled_arg_parser), 8 + 3 steps, no
//                      guidance (no negative prompt is encoded), seed 10 as the reference's default.
//   ltx2.3-tiny-distilled-demo  the tiny demo's weights run as the distilled variant: 9 frames of
//                      128 x 128 (stage 1 64 x 64), 8 + 3 steps.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "models/ltx2/guidance.h"
#include "pipeline/family.h"

namespace vidax::ltx2 {

inline constexpr const char* k23Dev = "ltx2.3-22b-dev";
inline constexpr const char* k23TinyDemo = "ltx2.3-tiny-demo";
inline constexpr const char* k23Distilled = "ltx2.3-22b-distilled";
inline constexpr const char* k23TinyDistilledDemo = "ltx2.3-tiny-distilled-demo";
inline constexpr int64_t kDistilledSteps = 8;  // DISTILLED_SIGMAS: 8 steps (stage 2: 3 more)

struct Preset {
  pipeline::Variant variant;
  GuiderParams video_guider, audio_guider;  // the video guider's cfg_scale is Defaults::guidance
  // Demo variants: the checkpoint's metadata config ({"transformer", "vae", "audio_vae", "vocoder"})
  // and the Gemma folder's config.json; null for published variants (their files hold them).
  nlohmann::json config, gemma;
  // DistilledPipeline (two_stage.h): every run is two-stage, stage 1 on DISTILLED_SIGMAS without
  // guidance, no stage-2 LoRA.
  bool distilled = false;
  const std::string& name() const { return variant.name; }
};

const std::vector<Preset>& presets();
const Preset& preset(const std::string& name);  // throws listing the variants

// ltx_pipelines.utils.constants.DEFAULT_NEGATIVE_PROMPT.
const std::string& default_negative_prompt();

}  // namespace vidax::ltx2
