// Finding the parts of a HunyuanVideo 1.5 checkpoint (the official ckpts/ folder, huggingface
// tencent/HunyuanVideo-1.5, checkpoints-download.md) as the official loader reads it
// (HunyuanVideo_1_5_Pipeline.create_pipeline, _load_text_encoders, _load_byt5); nothing is read
// but JSON:
//   transformer/<version>/   config.json + diffusion_pytorch_model*.safetensors (from_pretrained),
//                            <version> = get_transformer_version: "480p_t2v", "720p_t2v", ...
//   vae/                     config.json + diffusion_pytorch_model.safetensors
//   text_encoder/llm/        Qwen2.5-VL-7B-Instruct (config.json, tokenizer.json, its weights)
//   text_encoder/byt5-small/ google/byt5-small (config.json; the reference downloads it when
//                            absent, here it must be there)
//   text_encoder/Glyph-SDXL-v2/assets/color_idx.json, assets/multilingual_10-lang_idx.json,
//                            checkpoints/byt5_model.pt (or byt5_model.safetensors)
//   vision_encoder/siglip/   image_encoder/ (config.json + model.safetensors: SiglipVisionModel) and
//                            feature_extractor/preprocessor_config.json (_load_vision_encoder's);
//                            looked for when the transformer is an i2v one (a version with "_i2v")
// The scheduler/ folder the official loader also opens is not read: the scheduler is the flow-match
// one made from the preset's shift (as __call__ does); a t2v run gives the DiT zero vision states and
// reads no SigLIP.
// A `vidax make-demo` folder has this layout too (plus vidax_model.json naming its variant).
#pragma once
#include <string>
#include <vector>

namespace vidax::hunyuan15 {

struct WeightFiles {
  std::string root;
  std::string transformer_version;  // "480p_t2v"
  std::string dit;                  // transformer/<version>/ (a folder: config.json + weights)
  std::string vae;                  // vae/ (a folder: config.json + diffusion_pytorch_model.safetensors)
  std::string llm;                  // text_encoder/llm/
  std::string byt5_config;          // text_encoder/byt5-small/config.json
  std::string byt5_weights;         // text_encoder/Glyph-SDXL-v2/checkpoints/byt5_model.{pt,safetensors}
  std::string glyph_colors, glyph_fonts;  // the Glyph-SDXL-v2 assets
  std::string siglip;               // vision_encoder/siglip/ (i2v versions only; "" for t2v)
};

// True for an image-to-video transformer version ("480p_i2v", "480p_i2v_step_distilled", ...).
bool is_i2v_version(const std::string& version);

// The transformer versions under dir/transformer/ (sorted), empty when there is none.
std::vector<std::string> transformer_versions(const std::string& dir);
// True when `dir` looks like a HunyuanVideo 1.5 checkpoint (a transformer/<v>/ whose config.json is
// 1.5's, next to text_encoder/llm/).
bool is_checkpoint(const std::string& dir);
// Every part of `version`; throws naming the directory and every path it looked for when one is
// missing (and the versions present when transformer/<version>/ is not one of them).
WeightFiles find_weights(const std::string& dir, const std::string& version);

}  // namespace vidax::hunyuan15
