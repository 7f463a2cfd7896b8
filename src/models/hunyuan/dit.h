// HunyuanVideo 1.0 DiT (official HYVideoDiffusionTransformer, hyvideo/modules/models.py), T2V 13B.
//
// One forward, as the reference's:
//   vec = time_in(sinusoid(t)) + vector_in(text_states_2) [+ guidance_in(sinusoid(guidance))]
//   img = img_in(x): the Conv3d patch embedding as a linear map of each patch, tokens (t, h, w) row-major
//   txt = txt_in(text_states, t, text_mask): the token refiner (SingleTokenRefiner: its own
//         timestep embedding plus the masked mean of the text states, two refiner blocks under the
//         refiner mask) or a two-layer projection (text_projection "linear")
//   double-stream blocks on (img, txt), then single-stream blocks on [img, txt] (dit_blocks.h),
//   final layer (LN, (shift, scale) from vec, linear) on the image tokens, unpatchify.
// RoPE: the caller's freqs_cos / freqs_sin (get_nd_rotary_pos_embed's [N, head_dim] tables, each
// angle repeated for its pair) on the image tokens' q and k.
// Parameters are taken by their official names (double_blocks.0.img_attn_qkv.weight, ...).
// Precision: F32 runs everything in fp32. BF16 runs every block linear (and the patch embedding,
// the refiner, the final linear) with bf16 inputs and fp32 accumulation, and keeps in fp32 the
// conditioning vector and its modulation linears, the norms' statistics, the attention softmax and
// the residual streams (a cast is explicit where one happens).
#pragma once
#include <array>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "models/hunyuan/dit_blocks.h"
#include "models/hunyuan/dit_config.h"
#include "models/hunyuan/embeddings.h"
#include "models/hunyuan/final_layer.h"
#include "models/hunyuan/text_in.h"
#include "nn/linear.h"
#include "nn/params.h"

namespace vidax::hunyuan {

// Intermediate activations by official module path, filled when a map is passed: img_in [B, N, D],
// txt_in [B, L, D], time_in / vector_in / guidance_in [B, D], double_blocks.<i> [B, N, D] (image
// stream), single_blocks.<i> [B, N, D] (image tokens), final_layer [B, N, prod(patch) * out_channels].
using Taps = std::map<std::string, Tensor>;

// The inputs of one forward, named after the official forward's arguments.
struct DiTInputs {
  Tensor x;                       // [B, C, F, H, W]
  std::vector<double> t;          // [B], in [0, 1000]
  Tensor text_states;             // [B, L, text_states_dim]
  Tensor text_mask;               // [B, L], 1 = token (I64 or any integer / float 0/1)
  Tensor text_states_2;           // [B, text_states_dim_2]
  Tensor freqs_cos, freqs_sin;    // [N, head_dim], N = the patch grid's tokens
  std::vector<double> guidance;   // [B], the embedded scale * 1000; required with guidance_embed
};

class HunyuanDiT {
 public:
  // compute: F32 or BF16 (the class comment). Takes every parameter by its official name; call
  // params.expect_all_taken() afterwards for a strict load (from_weights does).
  HunyuanDiT(const DiTConfig& cfg, nn::ParamSource& params, DType compute);
  static HunyuanDiT from_weights(const DiTConfig& cfg, std::map<std::string, Tensor> weights, DType compute,
                                 const std::string& origin = "weights");

  const DiTConfig& config() const { return cfg_; }
  DType compute_dtype() const { return compute_; }

  // -> [B, out_channels, F, H, W] F32.
  Tensor forward(const DiTInputs& in, Taps* taps = nullptr) const;

  // (F', H', W') of a latent [B, C, F, H, W]; throws naming the channel count or the size that is
  // not a multiple of the patch.
  std::array<int64_t, 3> patch_grid(const Shape& x) const;

 private:
  DiTConfig cfg_;
  DType compute_;
  nn::Linear img_in_;  // Conv3d weight viewed [D, C * pt * ph * pw]
  SiluMlp time_in_, vector_in_;
  std::optional<SiluMlp> guidance_in_;
  TextInput txt_in_;  // SingleTokenRefiner or TextProjection (text_in.h, shared with 1.5)
  std::vector<DoubleStreamBlock> double_blocks_;
  std::vector<SingleStreamBlock> single_blocks_;
  FinalLayer final_layer_;
};

}  // namespace vidax::hunyuan
