// HunyuanVideo 1.5's image encoder: SigLIP's vision tower as the official VisionEncoder runs it
// (hyvideo/models/vision_encoder/__init__.py, Tencent-Hunyuan/HunyuanVideo-1.5 60783e7):
// _load_vision_encoder reads vision_encoder/siglip/image_encoder/ (transformers SiglipVisionModel:
// the published one is siglip-so400m-patch14-384, 27 layers of width 1152, 384 x 384 pixels in 14 x 14
// patches, 729 tokens) and vision_encoder/siglip/feature_extractor/ (SiglipImageProcessor);
// encode_images(picture) runs
//   preprocess  the [H, W, 3] uint8 picture as a [3, H, W] uint8 tensor, resized to the processor's
//               size with torchvision's resize (bicubic, antialias=True: on a CPU uint8 tensor torch's
//               fixed-point antialiasing path, io::resize_bicubic_antialias_u8), then the fused
//               rescale + normalize of transformers' torchvision backend (transformers 5.x:
//               (x - mean / rescale_factor) / (std / rescale_factor) in fp32);
//   forward     the patch embedding (Conv2d with bias), + the position embedding, the encoder layers
//               (x + out_proj(attention(layer_norm1(x))), x + fc2(gelu_tanh(fc1(layer_norm2(x))))),
//               post_layernorm: last_hidden_state [1, (S / patch)^2, hidden_size], the DiT's
//               vision_states. The pooling head (SiglipMultiheadAttentionPoolingHead) is not read:
//               the pipeline takes last_hidden_state.
// The reference loads it in fp16 (vision_encoder_precision "fp16"); here fp32 or bf16 GEMMs.
// Weights by the transformers names, with or without the vision_model. prefix (the published
// model.safetensors has it; the in-memory state_dict of transformers 5 has not); the head's keys are
// ignored by name, everything else is strict.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nn/linear.h"
#include "nn/params.h"
#include "translate/component.h"

namespace vidax::hunyuan15 {

// SiglipVisionConfig's fields (image_encoder/config.json; a SiglipConfig's vision_config is read too).
struct SiglipVisionConfig {
  int64_t hidden_size = 1152, intermediate_size = 4304, num_hidden_layers = 27, num_attention_heads = 16;
  int64_t num_channels = 3, image_size = 384, patch_size = 14;
  std::string hidden_act = "gelu_pytorch_tanh";
  double layer_norm_eps = 1e-6;

  static SiglipVisionConfig so400m_patch14_384();  // the published image_encoder's
  static SiglipVisionConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
  int64_t grid() const { return image_size / patch_size; }
  int64_t tokens() const { return grid() * grid(); }
};

// SiglipImageProcessor's fields (feature_extractor/preprocessor_config.json).
struct SiglipProcessorConfig {
  bool do_resize = true, do_rescale = true, do_normalize = true;
  int64_t height = 384, width = 384;
  int resample = 3;  // PIL's BICUBIC: the only one built
  double rescale_factor = 1.0 / 255.0;
  std::vector<double> image_mean{0.5, 0.5, 0.5}, image_std{0.5, 0.5, 0.5};

  static SiglipProcessorConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
};

translate::ParamSpec siglip_params(const SiglipVisionConfig& c);
// "vision_model": the published file's names (vision_model.embeddings...); "plain": without the prefix.
translate::KeyMap siglip_keymap(const std::string& layout, const SiglipVisionConfig& c);
const translate::Component& siglip_component();  // "hunyuan1.5-siglip-vision"

// The processor's preprocess of one picture [H, W, 3] U8 -> pixel_values [1, 3, height, width] F32.
Tensor siglip_preprocess(const Tensor& picture, const SiglipProcessorConfig& p);

class SiglipVision {
 public:
  // compute: F32, or BF16 (GEMM inputs in bf16, fp32 accumulation; the residual stream and the norms fp32).
  SiglipVision(const SiglipVisionConfig& cfg, nn::ParamSource& params, DType compute);
  const SiglipVisionConfig& config() const { return cfg_; }
  // pixel_values [N, 3, S, S] -> last_hidden_state [N, tokens, hidden_size] F32.
  Tensor forward(const Tensor& pixels) const;

 private:
  struct Layer {
    Tensor ln1_w, ln1_b, ln2_w, ln2_b;
    nn::Linear q, k, v, out, fc1, fc2;
  };
  SiglipVisionConfig cfg_;
  Tensor patch_w_, patch_b_, pos_, post_w_, post_b_;
  std::vector<Layer> layers_;
};

// The image encoder of a vision_encoder/siglip/ folder: image_encoder/ (config.json + model.safetensors
// or the folder's tensor files) and feature_extractor/preprocessor_config.json; a missing one is an
// error naming its path. Strict load.
struct SiglipEncoder {
  SiglipProcessorConfig processor;
  std::shared_ptr<const SiglipVision> model;
  // encode_images(picture).last_hidden_state: [H, W, 3] U8 -> [1, tokens, hidden_size] F32.
  Tensor encode(const Tensor& picture) const { return model->forward(siglip_preprocess(picture, processor)); }
};
SiglipEncoder load_siglip(const std::string& siglip_dir, DType compute);

// Parity kind hunyuan1.5.image.siglip (docs/parity.md).
void register_siglip_parity_kind();

}  // namespace vidax::hunyuan15
