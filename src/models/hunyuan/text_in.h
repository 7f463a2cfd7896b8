// txt_in of the HunyuanVideo DiTs, 1.0's and 1.5's (one module, the same parameter names):
// TextProjection (text_projection "linear": linear_1, SiLU, linear_2) or SingleTokenRefiner
// (hyvideo/modules/token_refiner.py in both repositories):
//   c = t_embedder(sinusoid(t)) + c_embedder(the masked mean of the raw text states)
//   x = input_embedder(text_states), then the refiner blocks (dit_blocks.h) under the refiner mask.
// The two references differ in one place, the refiner mask's guard against an all-masked row
// (RefinerMask); the rest is one code path.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "models/hunyuan/dit_blocks.h"
#include "models/hunyuan/dit_config.h"
#include "models/hunyuan/embeddings.h"
#include "nn/linear.h"
#include "nn/params.h"

namespace vidax::hunyuan {

// How IndividualTokenRefiner keeps a padded row from attending to nothing.
enum class RefinerMask {
  // 1.0 (Tencent/HunyuanVideo): self_attn_mask[:, :, :, 0] = True: row i sees key j when both are
  // tokens, and every row sees key 0.
  EveryRowSeesKeyZero,
  // 1.5 (HunyuanVideo-1.5): mask[:, 0] = True, then row i sees key j when both are tokens; a
  // padded row sees no key and the attention gives it zeros (torch's scaled_dot_product_attention).
  TokenZeroIsAToken,
};

// A [B, L] 0/1 mask (any integer or float dtype) as B * L values, row-major; throws
// "<who>: <name> ..." on another shape, an undefined tensor or a value other than 0 and 1.
std::vector<int64_t> read_mask(const Tensor& mask, int64_t B, int64_t L, const std::string& who,
                               const std::string& name);

// The refiner mask of a [B, L] 0/1 mask (row-major) as an additive score bias [B, 1, L, L] (0 / -inf).
Tensor refiner_bias(const std::vector<int64_t>& mask, int64_t B, int64_t L, RefinerMask rule);

class TextInput {
 public:
  // "txt_in.*" by the official names; cfg: text_projection, text_states_dim, hidden_size,
  // refiner_depth, use_attention_mask and the blocks' fields. The embedders run in fp32, the
  // input embedder, the projection and the blocks at `compute`.
  static TextInput load(nn::ParamSource& params, const DiTConfig& cfg, RefinerMask rule, DType compute);

  // text_states [B, L, text_states_dim], t [B], mask [B * L] 0/1 (the caller checked it) ->
  // [B, L, hidden] F32. The refiner's masked mean needs a token in every row (the caller checks).
  Tensor operator()(const Tensor& text_states, const std::vector<double>& t, const std::vector<int64_t>& mask) const;

  bool refines() const { return !projection_.has_value(); }

 private:
  bool use_attention_mask_ = true;
  RefinerMask rule_ = RefinerMask::EveryRowSeesKeyZero;
  std::optional<SiluMlp> projection_;  // TextProjection
  std::optional<nn::Linear> input_embedder_;
  std::optional<SiluMlp> t_embedder_, c_embedder_;
  std::vector<RefinerBlock> refiner_;
};

}  // namespace vidax::hunyuan
