// Named HunyuanVideo 1.0 models: the official sampling defaults (Tencent/HunyuanVideo
// hyvideo/config.py, sample_video.py and the README's commands) as the engine's Variant, and the
// architecture of the DiT and the VAE as their reference init args.
//
// Both variants are the one published checkpoint (hunyuan-video-t2v-720p, HYVideo-T/2-cfgdistill);
// the README's resolution table gives 720p (recommended, 720x1280) and 540p (544x960), each 129
// frames. Defaults shared by both: 50 steps (--infer-steps), flow shift 7.0 (--flow-shift) with
// --flow-reverse (what every published command passes), embedded guidance 6.0
// (--embedded-cfg-scale, the engine's --guidance for this family), no classifier-free pass
// (--cfg-scale 1.0: the model is CFG-distilled; the official negative prompt is then ""), bf16
// (--precision), 24 fps (save_videos_grid), the VAE tiled (--vae-tiling, on by default), text_len
// 256 (--text-len).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/family.h"

namespace vidax::hunyuan {

struct Preset {
  pipeline::Variant variant;
  const std::string& name() const { return variant.name; }
  nlohmann::json dit;  // HYVideoDiffusionTransformer init args + text_states_dim(_2) (dit_config.h)
  nlohmann::json vae;  // AutoencoderKLCausal3D init args (vae.h)
  int64_t text_len = 256;
  // The text encoders' transformers configs (LlamaConfig, CLIPTextConfig); null: the published
  // LLaVA-Llama-3-8B language model and CLIP-L/14 (their sizes in the memory plan). A demo's are
  // tiny; their vocabularies are the demo tokenizers' (demo.h).
  nlohmann::json llm, clip;
};

const std::vector<Preset>& presets();
// Throws listing the known names when `name` is not one.
const Preset& preset(const std::string& name);

inline constexpr const char* kT2V720p = "hunyuanvideo-t2v-720p";
inline constexpr const char* kT2V544p = "hunyuanvideo-t2v-544p";
inline constexpr const char* kT2VTinyDemo = "hunyuanvideo-t2v-tiny-demo";  // `vidax make-demo` (demo.h)

}  // namespace vidax::hunyuan
