// The LTX-2 video VAE's building blocks (ltx_core.model.video_vae: convolution.py CausalConv3d,
// resnet.py ResnetBlock3D / UNetMidBlock3D, sampling.py SpaceToDepthDownsample /
// DepthToSpaceUpsample, attention.py AttnBlock3D, ops.py patchify / PerChannelStatistics, PixelNorm),
// each loaded from official parameter names under a prefix, computing in the loader's dtype.
// Activations are [B, C, T, H, W].
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "models/ltx2/video_vae_config.h"
#include "nn/params.h"

namespace vidax::ltx2::vae {

// Takes parameters by official name (prefix + name) and casts them to the compute dtype.
struct Loader {
  nn::ParamSource& src;
  std::string prefix;
  DType compute = DType::F32;
  Tensor get(const std::string& name, const Shape& shape) const;
};

// CausalConv3d(kernel 3, stride): time padded by repeating frames (causal: 2 copies of the first
// frame in front; non-causal: one copy of the first in front and of the last behind), space padded by
// 1 on each side in the padding mode, then an unpadded Conv3d. Weight <prefix>.conv.weight / .bias.
struct CausalConv3d {
  Tensor w, b;
  std::array<int64_t, 3> stride{1, 1, 1};
  VaePadding padding = VaePadding::Zeros;
  static CausalConv3d load(const Loader& l, const std::string& prefix, int64_t in, int64_t out, VaePadding padding,
                           std::array<int64_t, 3> stride = {1, 1, 1});
  Tensor operator()(const Tensor& x, bool causal) const;
};

// PixelNorm (x / sqrt(mean_c(x^2) + 1e-8)) or GroupNorm(groups, eps 1e-6, affine) at <prefix>.
struct Norm {
  VaeNorm kind = VaeNorm::PixelNorm;
  int64_t groups = 32;
  Tensor w, b;  // group norm only
  static Norm load(const Loader& l, const std::string& prefix, VaeNorm kind, int64_t channels, int64_t groups = 32);
  Tensor operator()(const Tensor& x) const;
};

// ResnetBlock3D: norm1, [x (1 + scale1) + shift1], SiLU, conv1, [+ noise], norm2, [x (1 + scale2) +
// shift2], SiLU, conv2, [+ noise], plus the input (through norm3 = GroupNorm(1, eps 1e-6) and the
// 1x1x1 conv_shortcut when the width changes). With timestep conditioning, (shift1, scale1, shift2,
// scale2) = scale_shift_table [4, C] + the block's timestep embedding [B, 4 C] viewed [B, 4, C]; with
// noise injection each conv's output gets randn(H, W) (one draw per conv, shared by the batch and the
// frames) times per_channel_scale{1,2} [C, 1, 1].
struct ResnetBlock3D {
  Norm norm1, norm2;
  CausalConv3d conv1, conv2;
  std::optional<Norm> norm3;
  std::optional<Tensor> shortcut_w, shortcut_b;
  std::optional<Tensor> scale_shift_table;           // [1, 4, C, 1, 1, 1]
  std::optional<Tensor> noise_scale1, noise_scale2;  // [C, 1, 1]
  static ResnetBlock3D load(const Loader& l, const std::string& prefix, int64_t in, int64_t out, VaeNorm norm,
                            VaePadding padding, bool timestep_conditioning = false, bool inject_noise = false);
  // temb: [B, 4 C] (timestep conditioning); gen: the noise's generator (noise injection).
  Tensor operator()(const Tensor& x, bool causal, const std::optional<Tensor>& temb = std::nullopt,
                    TorchGenerator* gen = nullptr) const;
};

// PixArtAlphaCombinedTimestepSizeEmbeddings(dim, size_emb_dim 0) at <prefix>: the 256-wide sinusoid
// of t ([cos, sin]: flip_sin_to_cos, shift 0, max_period 10000, fp32), timestep_embedder.linear_1,
// SiLU, linear_2. t [B] (host values, already scaled) -> [B, dim] in the compute dtype.
struct TimestepEmbedder {
  Tensor w1, b1, w2, b2;
  DType compute = DType::F32;
  static TimestepEmbedder load(const Loader& l, const std::string& prefix, int64_t dim);
  Tensor operator()(const std::vector<float>& t) const;
};
// get_timestep_embedding(t, dim, flip_sin_to_cos=True, downscale_freq_shift=0) in fp32: [B, dim] F32.
Tensor timestep_sinusoid(const std::vector<float>& t, int64_t dim);

// SpaceToDepthDownsample(in, out, stride): a causal conv to out / prod(stride) channels then
// space-to-depth, plus the space-to-depth of the input averaged over groups of
// in * prod(stride) / out channels; a time stride repeats the first frame in front first.
struct SpaceToDepthDownsample {
  CausalConv3d conv;
  std::array<int64_t, 3> stride{1, 1, 1};
  int64_t out_channels = 0;
  static SpaceToDepthDownsample load(const Loader& l, const std::string& prefix, int64_t in, int64_t out,
                                     std::array<int64_t, 3> stride, VaePadding padding);
  Tensor operator()(const Tensor& x, bool causal) const;
};

// DepthToSpaceUpsample(in, stride, residual, reduction): a conv to prod(stride) * in / reduction
// channels then depth-to-space (the first frame dropped after a time stride); residual adds the
// depth-to-space of the input repeated prod(stride) / reduction times along the channels.
struct DepthToSpaceUpsample {
  CausalConv3d conv;
  std::array<int64_t, 3> stride{1, 1, 1};
  bool residual = false;
  int64_t reduction = 1;
  static DepthToSpaceUpsample load(const Loader& l, const std::string& prefix, int64_t in,
                                   std::array<int64_t, 3> stride, bool residual, int64_t reduction, VaePadding padding);
  Tensor operator()(const Tensor& x, bool causal) const;
};

// AttnBlock3D: per frame, single-head self-attention over H*W positions after a channel RMSNorm
// (F.normalize over C times sqrt(C) * gamma), 1x1 to_qkv and proj, plus the input.
struct AttnBlock3D {
  Tensor gamma, qkv_w, qkv_b, proj_w, proj_b;
  static AttnBlock3D load(const Loader& l, const std::string& prefix, int64_t channels);
  Tensor operator()(const Tensor& x) const;
};

// patchify(x, p, 1): [B, C, F, H, W] -> [B, C p p, F, H/p, W/p], channel c p^2 + iw p + ih (w before
// h); unpatchify is its inverse.
Tensor patchify(const Tensor& x, int64_t p);
Tensor unpatchify(const Tensor& x, int64_t p);

// PerChannelStatistics at <prefix>per_channel_statistics.: normalize (x - mean) / std,
// un_normalize x * std + mean, per channel.
struct PerChannelStatistics {
  Tensor mean, std;  // [1, C, 1, 1, 1]
  static PerChannelStatistics load(const Loader& l, const std::string& prefix, int64_t channels);
  Tensor normalize(const Tensor& x) const;
  Tensor un_normalize(const Tensor& x) const;
};

}  // namespace vidax::ltx2::vae
