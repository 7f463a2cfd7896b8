// HunyuanVideo 1.5 DiT (official HunyuanVideo_1_5_DiffusionTransformer,
// hyvideo/models/transformers/hunyuanvideo_1_5_transformer.py), T2V and I2V 8.3B.
//
// One forward, as the reference's (dense attention; the SSTA / flex-block-attn path is not built):
//   vec = time_in(sinusoid(timestep)) [+ vector_in(text_states_2)] [+ guidance_in(sinusoid(guidance))]
//         [+ time_r_in(sinusoid(timestep_r))]
//   img = img_in(hidden_states): [latent, condition latent, mask] channels, patches as a linear map
//   txt = txt_in(text_states, timestep, mask) (1.0's token refiner or linear projection) [+ cond type 0]
//   glyphs = byt5_in(byt5_text_states) [+ cond type 1]; vision = vision_in(vision_states) [+ cond type 2]
//         (T2V: vision_states all zero and mask_type "t2v" -> the vision tokens are padding)
//   the text stream = [valid vision, valid glyph, valid text, padding] per sample (reorder_txt_token)
//   double-stream blocks, single-stream blocks (1.0's modules), final layer on the image tokens.
// The joint attention masks every padded text token as a key and as a query (the torch mode's
// score_mod); here every row sees the keys [0, image + valid text), which is that exactly for the
// image rows and the valid text rows, the only rows that reach the output (dit_blocks.h of 1.0).
// Inputs absent (Tensor undefined, vector empty) are as the reference's None: text_states_2 (no
// pooled vector), timestep_r, vision_states (no vision tokens), freqs_cos / freqs_sin (computed from
// the patch grid with rope_theta), guidance (6016, the reference's default for a guidance-embedded model).
// Precision as 1.0's DiT: F32, or BF16 block linears with fp32 modulations, norms, softmax, residuals.
#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/hunyuan/dit_blocks.h"
#include "models/hunyuan/embeddings.h"
#include "models/hunyuan/final_layer.h"
#include "models/hunyuan/text_in.h"
#include "models/hunyuan15/dit_blocks.h"
#include "models/hunyuan15/dit_config.h"
#include "nn/linear.h"
#include "nn/params.h"

namespace vidax::hunyuan15 {

// Intermediate activations by official module path: img_in [B, N, D], txt_in [B, L, D] (the
// refiner's output, before the condition-type embedding), byt5_in [B, Lb, D], vision_in [B, Lv, D],
// time_in [B, D], double_blocks.<i> [B, N, D] (image stream), single_blocks.<i> [B, N, D] (image
// tokens), final_layer [B, N, prod(patch) * out_channels].
using Taps = std::map<std::string, Tensor>;

// The inputs of one forward, named after the official forward's arguments (the glyph states come
// in its extra_kwargs).
struct DiTInputs {
  Tensor hidden_states;               // [B, embed_channels, F, H, W]
  std::vector<double> timestep;       // [B]
  Tensor text_states;                 // [B, L, text_states_dim]
  Tensor encoder_attention_mask;      // [B, L], 0/1
  Tensor text_states_2;               // [B, text_states_dim_2] or undefined
  std::vector<double> timestep_r;     // [B] or empty
  Tensor vision_states;               // [B, Lv, vision_states_dim] or undefined
  Tensor freqs_cos, freqs_sin;        // [N, head_dim] or undefined
  std::vector<double> guidance;       // [B] or empty
  std::string mask_type = "t2v";      // t2v | i2v (the forward's default t2v)
  Tensor byt5_text_states;            // [B, Lb, 1472] (glyph_byT5_v2)
  Tensor byt5_text_mask;              // [B, Lb], 0/1
};

class HunyuanVideo15DiT {
 public:
  // Takes every parameter by its engine name (checkpoint_keys.h); call params.expect_all_taken()
  // afterwards for a strict load (from_weights does).
  HunyuanVideo15DiT(const DiTConfig& cfg, nn::ParamSource& params, DType compute);
  static HunyuanVideo15DiT from_weights(const DiTConfig& cfg, std::map<std::string, Tensor> weights, DType compute,
                                        const std::string& origin = "weights");

  const DiTConfig& config() const { return cfg_; }
  DType compute_dtype() const { return compute_; }

  // -> [B, out_channels, F, H, W] F32.
  Tensor forward(const DiTInputs& in, Taps* taps = nullptr) const;

  // (F', H', W') of hidden_states [B, C, F, H, W]; throws naming the channel count or the size that
  // is not a multiple of the patch.
  std::array<int64_t, 3> patch_grid(const Shape& x) const;

 private:
  Tensor cond_type(int64_t type) const;  // cond_type_embedding.weight[type] as [1, 1, D]

  DiTConfig cfg_;
  hunyuan::DiTConfig blocks_cfg_;
  DType compute_;
  nn::Linear img_in_;
  hunyuan::SiluMlp time_in_;
  std::optional<hunyuan::SiluMlp> vector_in_, guidance_in_, time_r_in_;
  hunyuan::TextInput txt_in_;  // 1.0's module (text_in.h) with 1.5's refiner mask
  std::optional<ByT5Mapper> byt5_in_;
  std::optional<VisionProjection> vision_in_;
  Tensor cond_type_embedding_;  // [3, D] or undefined
  std::vector<hunyuan::DoubleStreamBlock> double_blocks_;
  std::vector<hunyuan::SingleStreamBlock> single_blocks_;
  hunyuan::FinalLayer final_layer_;
};

}  // namespace vidax::hunyuan15
