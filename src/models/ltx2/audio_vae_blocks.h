// The LTX-2 audio VAE's 2-D building blocks (ltx_core.model.audio_vae: causal_conv_2d.py CausalConv2d,
// resnet.py ResnetBlock, attention.py AttnBlock, upsample.py Upsample, common/normalization.py PixelNorm /
// GroupNorm), each loaded from official parameter names under a prefix through vae::Loader, computing in the
// loader's dtype. Activations are [B, C, time, mel].
#pragma once
#include <optional>
#include <string>

#include "core/tensor.h"
#include "models/ltx2/video_vae_blocks.h"

namespace vidax::ltx2::audio_vae {

// CausalityAxis: which axis the convolutions are causal along (none: centred padding). WidthCompatibility
// pads as Width but the upsample keeps every column.
enum class Causality { None, Width, Height, WidthCompatibility };

// CausalConv2d(kernel k, stride 1): (k - 1) zeros before the causal axis (none after), centred (floor before,
// the rest after) along the other, then an unpadded Conv2d at <prefix>.conv.
struct CausalConv2d {
  Tensor w, b;
  Causality axis = Causality::Height;
  int64_t k = 3;
  static CausalConv2d load(const vae::Loader& l, const std::string& prefix, int64_t in, int64_t out, int64_t k,
                           Causality axis);
  Tensor operator()(const Tensor& x) const;
};

// build_normalization_layer: PixelNorm(dim 1, eps 1e-6) (x / sqrt(mean_c(x^2) + eps)), or GroupNorm(32, eps
// 1e-6, affine) at <prefix>.
struct Norm {
  enum class Kind { Pixel, Group };
  Kind kind = Kind::Pixel;
  Tensor w, b;  // group only
  static Norm load(const vae::Loader& l, const std::string& prefix, Kind kind, int64_t channels);
  Tensor operator()(const Tensor& x) const;
};

// ResnetBlock (temb_channels 0, dropout off): norm1, SiLU, conv1, norm2, SiLU, conv2, plus the input (through
// the 1x1 causal nin_shortcut when the width changes).
struct ResnetBlock {
  Norm norm1, norm2;
  CausalConv2d conv1, conv2;
  std::optional<CausalConv2d> nin_shortcut;
  static ResnetBlock load(const vae::Loader& l, const std::string& prefix, int64_t in, int64_t out, Norm::Kind norm,
                          Causality axis);
  Tensor operator()(const Tensor& x) const;
};

// AttnBlock: norm, 1x1 q / k / v (plain Conv2d), single-head softmax attention over the time x mel positions
// (scale C^-1/2), 1x1 proj_out, plus the input.
struct AttnBlock {
  Norm norm;
  Tensor q_w, q_b, k_w, k_b, v_w, v_b, proj_w, proj_b;
  static AttnBlock load(const vae::Loader& l, const std::string& prefix, int64_t channels, Norm::Kind norm);
  Tensor operator()(const Tensor& x) const;
};

// Upsample(with_conv): nearest 2x along both axes, the 3x3 causal conv at <prefix>.conv, then the first row
// (Height) / column (Width) dropped, so a causal length n becomes 2 n - 1.
struct Upsample {
  CausalConv2d conv;
  static Upsample load(const vae::Loader& l, const std::string& prefix, int64_t channels, Causality axis);
  Tensor operator()(const Tensor& x) const;
};

// Downsample (the encoder's): with_conv, zero padding {W before, W after, H before, H after} = none (0, 1, 0,
// 1), height (0, 1, 2, 0), width (2, 0, 0, 1), width-compatibility (1, 0, 0, 1), then a plain stride-2 3x3
// Conv2d at <prefix>.conv; without, avg_pool2d(2, 2) (causality none only).
struct Downsample {
  std::optional<Tensor> w, b;
  Causality axis = Causality::Height;
  static Downsample load(const vae::Loader& l, const std::string& prefix, int64_t channels, bool with_conv,
                         Causality axis);
  Tensor operator()(const Tensor& x) const;
};

}  // namespace vidax::ltx2::audio_vae
