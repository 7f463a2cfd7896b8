// The image side's ends of the HunyuanVideo DiTs, 1.0's and 1.5's (the same modules and names):
// the patch grid of a latent, patchify (PatchEmbed's Conv3d with kernel == stride, as a linear map
// of each patch), FinalLayer (LN, (shift, scale) from vec, linear) and unpatchify.
#pragma once
#include <array>
#include <string>

#include "core/tensor.h"
#include "nn/linear.h"
#include "nn/params.h"

namespace vidax::hunyuan {

// (F', H', W') of a latent [B, C, F, H, W] under `patch`; throws "<who>: <what> ..." naming the
// shape, the channel count (against `channels`, with `channel_note` after it) or the axis that is
// not a multiple of the patch.
std::array<int64_t, 3> patch_grid(const Shape& x, int64_t channels, const std::array<int64_t, 3>& patch,
                                  const std::string& who, const std::string& what,
                                  const std::string& channel_note = "");

// img_in: PatchEmbed's Conv3d (img_in.proj, kernel == stride) as a linear map of each patch, its
// weight [hidden, channels, pt, ph, pw] viewed [hidden, channels * pt * ph * pw].
nn::Linear load_patch_embed(nn::ParamSource& params, int64_t hidden, int64_t channels,
                            const std::array<int64_t, 3>& patch, DType compute);
// [B, C, F'pt, H'ph, W'pw] -> [B, N, C*pt*ph*pw], tokens (f, h, w) row-major, features (c, kt, kh, kw).
Tensor patchify(const Tensor& x, const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& patch);
// The inverse for y [B, N, Co*pt*ph*pw]: feature (c, kt, kh, kw) of token (f, h, w) ->
// out[c, f*pt+kt, h*ph+kh, w*pw+kw], [B, Co, F'pt, H'ph, W'pw].
Tensor unpatchify(const Tensor& y, const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& patch,
                  int64_t out_channels);

// FinalLayer: (shift, scale) = adaLN_modulation(vec).chunk(2); linear(LN(x)(1 + scale) + shift).
struct FinalLayer {
  nn::Linear modulation, linear;  // final_layer.adaLN_modulation.1 (fp32), final_layer.linear (compute)
  static FinalLayer load(nn::ParamSource& params, int64_t hidden, int64_t out_features, DType compute);
  // img [B, N, D] fp32, vec_silu = SiLU(vec) [B, D] -> [B, N, out_features] F32.
  Tensor operator()(const Tensor& img, const Tensor& vec_silu) const;
};

}  // namespace vidax::hunyuan
