#include "models/hunyuan/final_layer.h"

#include "backend/ops.h"
#include "core/error.h"
#include "nn/cast.h"

namespace vidax::hunyuan {

std::array<int64_t, 3> patch_grid(const Shape& s, int64_t channels, const std::array<int64_t, 3>& patch,
                                  const std::string& who, const std::string& what, const std::string& channel_note) {
  VIDAX_CHECK(s.size() == 5, who << ": " << what << " must be [B, C, F, H, W], got " << shape_str(s));
  VIDAX_CHECK(s[1] == channels, who << ": " << what << " has " << s[1] << " channels, the model takes " << channels
                                    << channel_note);
  std::array<int64_t, 3> g{};
  const char* axis[3] = {"frames", "height", "width"};
  for (int i = 0; i < 3; ++i) {
    const int64_t n = s[static_cast<size_t>(2 + i)], p = patch[static_cast<size_t>(i)];
    VIDAX_CHECK(n > 0 && n % p == 0,
                who << ": " << what << " " << axis[i] << " " << n << " is not a multiple of the patch size " << p);
    g[static_cast<size_t>(i)] = n / p;
  }
  return g;
}

nn::Linear load_patch_embed(nn::ParamSource& params, int64_t hidden, int64_t channels,
                            const std::array<int64_t, 3>& patch, DType compute) {
  const auto [pt, ph, pw] = patch;
  const Tensor w = params.take("img_in.proj.weight", {hidden, channels, pt, ph, pw});
  const Tensor b = params.take("img_in.proj.bias", {hidden});
  // Conv3d with kernel == stride: a linear map of each patch, features in (c, kt, kh, kw) order.
  return nn::Linear::make(w.contiguous().view({hidden, channels * pt * ph * pw}), b, compute);
}

Tensor patchify(const Tensor& x, const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& patch) {
  const auto [Fp, Hp, Wp] = grid;
  const auto [pt, ph, pw] = patch;
  const int64_t B = x.size(0), C = x.size(1);
  const Tensor xc = x.is_contiguous() ? x : ops::copy(x);
  return ops::copy(xc.view({B, C, Fp, pt, Hp, ph, Wp, pw}).permute({0, 2, 4, 6, 1, 3, 5, 7}))
      .view({B, Fp * Hp * Wp, C * pt * ph * pw});
}

Tensor unpatchify(const Tensor& y, const std::array<int64_t, 3>& grid, const std::array<int64_t, 3>& patch,
                  int64_t out_channels) {
  const auto [Fp, Hp, Wp] = grid;
  const auto [pt, ph, pw] = patch;
  const int64_t B = y.size(0), Co = out_channels;
  return ops::copy(y.view({B, Fp, Hp, Wp, Co, pt, ph, pw}).permute({0, 4, 1, 5, 2, 6, 3, 7}))
      .view({B, Co, Fp * pt, Hp * ph, Wp * pw});
}

FinalLayer FinalLayer::load(nn::ParamSource& params, int64_t hidden, int64_t out_features, DType compute) {
  return FinalLayer{nn::Linear::load(params, "final_layer.adaLN_modulation.1", hidden, 2 * hidden, DType::F32),
                    nn::Linear::load(params, "final_layer.linear", hidden, out_features, compute)};
}

Tensor FinalLayer::operator()(const Tensor& img, const Tensor& vec_silu) const {
  constexpr double kEps = 1e-6;
  const int64_t d = img.size(2);
  const Tensor m = modulation(vec_silu);
  const Tensor shift = m.slice(1, 0, d).unsqueeze(1), scale = m.slice(1, d, 2 * d).unsqueeze(1);
  return nn::to_dtype(linear(ops::layer_norm_modulate(img, shift, scale, kEps, linear.compute)), DType::F32);
}

}  // namespace vidax::hunyuan
