// Named HunyuanVideo 1.5 models: the official t2v sampling defaults (Tencent-Hunyuan/HunyuanVideo-1.5
// 60783e7) as the engine's Variant, and the architecture of each part.
//
// Where each default comes from:
//   - guidance 6.0 and flow_shift 5.0 (480p) / 9.0 (720p): hyvideo/commons PIPELINE_CONFIGS['480p_t2v']
//     / ['720p_t2v'] (embedded_guidance_scale None: classifier-free guidance, a negative pass);
//   - steps 50: the pipeline's num_inference_steps (generate.py --num_inference_steps None keeps it);
//   - frames 121: generate.py --video_length; fps 24: generate.py save_video; bf16: --dtype;
//   - negative prompt "": generate.py --negative_prompt;
//   - size: the t2v bucket of generate.py's --aspect_ratio 16:9 at the transformer's
//     ideal_resolution (get_closest_resolution_given_original_size: generate_crop_size_list(640 /
//     960, 16)): 480x848 (480p), 720x1280 (720p);
//   - text_len 1000 (_load_text_encoders' TextEncoder max_length), vision tokens 729
//     (vision_num_semantic_tokens), the decode's tile (get_vae_inference_config: 256, 0.125).
// Image-to-video (PIPELINE_CONFIGS['480p_i2v'] / ['720p_i2v']: guidance 6, shift 5 / 7; the
// cfg-distilled '480p_i2v_distilled' / '720p_i2v_distilled': guidance 1, the same shifts;
// '480p_i2v_step_distilled': guidance 1, shift 7, num_inference_steps 12, the folder
// get_transformer_version names for --enable_step_distill): the size is the bucket of the image's
// aspect ratio (i2v.h) in the list of base sqrt(height * width): the defaults 640 x 640 (480p) and
// 960 x 960 (720p) are target_size_config's bucket_hw_base_size for the ideal_resolution.
// Not offered (refused by name): the t2v cfg-distilled, the sparse and the t2v step-distilled
// transformers and the super-resolution stage.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/family.h"

namespace vidax::hunyuan15 {

struct Preset {
  pipeline::Variant variant;
  const std::string& name() const { return variant.name; }
  std::string transformer_version;  // the folder under transformer/ ("480p_t2v")
  nlohmann::json dit;   // HunyuanVideo_1_5_DiffusionTransformer init args (dit_config.h)
  nlohmann::json vae;   // AutoencoderKLConv3D init args (vae.h)
  int64_t text_len = 1000;
  int64_t vision_tokens = 729;
  // The text encoders' configs (a Qwen2.5-VL text config, ByT5's T5Config): the published
  // Qwen2.5-VL-7B-Instruct and byt5-small (the memory plan's sizes; a folder's own configs are what
  // load), a demo's tiny ones (what make-demo writes).
  nlohmann::json llm, byt5;
  // Image-to-video variants: the SigLIP's configs (image_encoder/config.json, feature_extractor/
  // preprocessor_config.json; the published siglip-so400m-patch14-384, a demo's tiny one); null for t2v.
  nlohmann::json siglip, siglip_processor;
  bool i2v() const { return !siglip.is_null(); }
};

const std::vector<Preset>& presets();
// Throws listing the known names when `name` is not one (and naming what is not built).
const Preset& preset(const std::string& name);

inline constexpr const char* kT2V480p = "hunyuanvideo1.5-t2v-480p";
inline constexpr const char* kT2V720p = "hunyuanvideo1.5-t2v-720p";
inline constexpr const char* kT2VTinyDemo = "hunyuanvideo1.5-t2v-tiny-demo";  // `vidax make-demo` (demo.h)
inline constexpr const char* kI2V480p = "hunyuanvideo1.5-i2v-480p";
inline constexpr const char* kI2V720p = "hunyuanvideo1.5-i2v-720p";
inline constexpr const char* kI2V480pDistilled = "hunyuanvideo1.5-i2v-480p-distilled";
inline constexpr const char* kI2V720pDistilled = "hunyuanvideo1.5-i2v-720p-distilled";
inline constexpr const char* kI2V480pStepDistilled = "hunyuanvideo1.5-i2v-480p-step-distilled";
inline constexpr const char* kI2VTinyDemo = "hunyuanvideo1.5-i2v-tiny-demo";  // `vidax make-demo` (demo.h)

// The t2v variant of the same resolution for an i2v one and the reverse ("" when none).
std::string sibling_variant(const std::string& name);

}  // namespace vidax::hunyuan15
