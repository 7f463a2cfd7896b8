// The image encoder of Wan 2.1 I2V / FLF2V: the visual tower of the official
// open-clip XLM-RoBERTa ViT-H/14 (wan/modules/clip.py, XLMRobertaCLIP.visual, a
// VisionTransformer) as CLIPModel.visual calls it:
//   preprocess: each [3, 1, H, W] frame in [-1, 1] -> bicubic resize to image_size
//     (F.interpolate, align_corners=False), x * 0.5 + 0.5, Normalize(mean, std); fp32;
//   patch embedding (Conv2d, no bias under pre_norm), [cls] token, + pos_embedding,
//     pre_norm LayerNorm, then the transformer blocks but the last (use_31_block=True):
//     x + attn(norm1(x)), x + mlp(norm2(x)) (Linear, GELU (erf), Linear);
//   output [N, 1 + (image_size/patch)^2, vision_dim]: the features the DiT's img_emb takes.
// The checkpoint (models_clip_open-clip-xlm-roberta-large-vit-huge-14.pth) also holds the text
// tower, the last block, post_norm and the head, which this use never reads: the key map ignores
// them by name (translate::KeyMap::ignored), everything else is strict.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "nn/linear.h"
#include "nn/params.h"
#include "translate/component.h"

namespace vidax::wan {

// XLMRobertaCLIP's init args (the vision ones; the text ones are accepted and unused).
struct ClipVisionConfig {
  int64_t image_size = 224, patch_size = 14, vision_dim = 1280, vision_heads = 16, vision_layers = 32;
  double vision_mlp_ratio = 4;
  std::string vision_pool = "token";
  bool vision_pre_norm = true, vision_post_norm = false;
  std::string activation = "gelu";
  double norm_eps = 1e-5;
  int64_t embed_dim = 1024;

  static ClipVisionConfig vit_h_14();  // clip_xlm_roberta_vit_h_14's
  static ClipVisionConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
  int64_t grid() const { return image_size / patch_size; }
  int64_t tokens() const { return grid() * grid() + 1; }  // + the class token
  int64_t mlp_dim() const { return static_cast<int64_t>(static_cast<double>(vision_dim) * vision_mlp_ratio); }
  int64_t blocks_run() const { return vision_layers - 1; }  // use_31_block: all but the last
};

// The visual tower's parameters (official names) that the I2V use reads.
translate::ParamSpec clip_visual_params(const ClipVisionConfig& c);
// "original": the published .pth's names (visual.*), with the unread keys ignored by pattern.
translate::KeyMap clip_visual_keymap(const std::string& layout, const ClipVisionConfig& c);
const translate::Component& clip_visual_component();  // "wan2.1-clip-visual"

// The CLIP preprocessing of CLIPModel.visual: frames [N, 3, H, W] F32 in [-1, 1] -> [N, 3, S, S]
// normalised (S = image_size), in fp32.
Tensor clip_preprocess(const Tensor& frames, const ClipVisionConfig& c);

class ClipVision {
 public:
  // compute: F32, or BF16 (GEMM inputs in bf16, fp32 accumulation, the residual stream and the
  // norms in fp32; the reference runs fp16 weights under fp16 autocast on CUDA).
  ClipVision(const ClipVisionConfig& cfg, nn::ParamSource& params, DType compute);
  const ClipVisionConfig& config() const { return cfg_; }
  // Normalised pixels [N, 3, S, S] -> [N, tokens, vision_dim] F32 (model.visual(x, use_31_block=True)).
  Tensor forward(const Tensor& pixels) const;
  // CLIPModel.visual: frames [N, 3, H, W] in [-1, 1] at any size -> features [N, tokens, vision_dim].
  Tensor encode(const Tensor& frames) const { return forward(clip_preprocess(frames, cfg_)); }

 private:
  struct Block {
    Tensor norm1_w, norm1_b, norm2_w, norm2_b;
    nn::Linear qkv, proj, fc1, fc2;
  };
  ClipVisionConfig cfg_;
  DType compute_;
  Tensor patch_w_;  // [dim, 3, p, p]
  Tensor cls_, pos_;
  Tensor pre_norm_w_, pre_norm_b_;
  std::vector<Block> blocks_;
};

// Parity kind wan.clip.visual (docs/parity.md).
void register_clip_parity_kind();

}  // namespace vidax::wan
