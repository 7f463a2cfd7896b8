// The modules HunyuanVideo 1.5 adds to the 1.0 DiT (the double / single-stream blocks, the token
// refiner and the embedders are 1.0's: src/models/hunyuan/dit_blocks.h, embeddings.h).
//
// ByT5Mapper (hyvideo/models/text_encoders/byT5, use_residual=False), on the ByT5 glyph states:
//   fc3(GELU(fc2(GELU(fc1(LayerNorm(x))))))       LayerNorm affine, eps 1e-5; GELU exact (erf)
// VisionProjection (embed_layers.py), on the SigLIP image tokens:
//   LayerNorm(Linear(GELU(Linear(LayerNorm(x)))))   both LayerNorms affine, eps 1e-5; GELU exact
// The text tokens of the joint attention (reorder_txt_token, applied for the glyph tokens and then
// for the vision tokens): per sample [valid vision, valid glyph, valid text, then the padding],
// every padded row masked as a key. TextTokens builds that order as one row gather.
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"
#include "nn/linear.h"
#include "nn/params.h"

namespace vidax::hunyuan15 {

struct ByT5Mapper {
  Tensor norm_w, norm_b;
  nn::Linear fc1, fc2, fc3;
  static ByT5Mapper load(nn::ParamSource& params, const std::string& prefix, int64_t out_dim, DType compute);
  Tensor operator()(const Tensor& x) const;  // [B, L, 1472] -> [B, L, out_dim] F32
};

struct VisionProjection {
  Tensor norm_in_w, norm_in_b, norm_out_w, norm_out_b;
  nn::Linear linear_1, linear_2;
  static VisionProjection load(nn::ParamSource& params, const std::string& prefix, int64_t in_dim, int64_t out_dim,
                               DType compute);
  Tensor operator()(const Tensor& x) const;  // [B, L, in_dim] -> [B, L, out_dim] F32
};

// One source of text-stream tokens: x [B, L_s, D] and its 0/1 mask per sample (row-major B x L_s).
struct TokenSource {
  Tensor x;
  std::vector<int64_t> mask;
};

// The sources' tokens concatenated per sample, valid ones first (sources in the given order,
// each in its own order), then the padded ones as zero rows: [B, sum L_s, D] F32, and per sample
// the valid count.
struct TextTokens {
  Tensor x;
  std::vector<int64_t> valid;
};
TextTokens valid_first(const std::vector<TokenSource>& sources);

}  // namespace vidax::hunyuan15
