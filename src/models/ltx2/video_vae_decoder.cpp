// ConvVideoDecoder.forward (conv_video_decoder.py) without timestep conditioning: un-normalize,
// conv_in, the up blocks (the config's decoder_blocks reversed), conv_norm_out, SiLU, conv_out,
// unpatchify.
#include <optional>

#include "backend/ops.h"
#include "core/error.h"
#include "models/ltx2/video_vae.h"
#include "models/ltx2/video_vae_blocks.h"

namespace vidax::ltx2 {

using namespace vae;

namespace {

// One up block: a UNetMidBlock3D (res_x), a ResnetBlock3D (res_x_y), a DepthToSpaceUpsample
// (compress_*) or an AttnBlock3D (attn).
struct UpBlock {
  std::vector<ResnetBlock3D> resnets;  // res_x: res_blocks.*; res_x_y: the block itself
  std::optional<DepthToSpaceUpsample> up;
  std::optional<AttnBlock3D> attn;
  Tensor operator()(Tensor x, bool causal) const {
    if (up) return (*up)(x, causal);
    if (attn) return (*attn)(x);
    for (const ResnetBlock3D& r : resnets) x = r(x, causal);
    return x;
  }
};

}  // namespace

struct VideoDecoder::Impl {
  PerChannelStatistics stats;
  CausalConv3d conv_in, conv_out;
  std::vector<UpBlock> up_blocks;
  Norm norm_out;
};

VideoDecoder::VideoDecoder(const VideoVaeConfig& c, nn::ParamSource& params, const std::string& prefix, DType compute)
    : config_(c), compute_(compute), impl_(std::make_unique<Impl>()) {
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16,
              "LTX-2 video VAE decoder: compute dtype must be F32 or BF16, found " << dtype_name(compute));
  VIDAX_CHECK(!c.timestep_conditioning,
              "LTX-2 video VAE decoder: timestep_conditioning true is not supported yet (the decoder's timestep "
              "embedding, adaLN tables and decode-time noise are not built; LTX-2's VAE, diffusers' "
              "AutoencoderKLLTX2Video default, has it false). Note the configurator's default is true: a config "
              "without the key asks for it");
  const Loader l{params, prefix, compute};
  const VaePadding pad = c.decoder_padding;
  impl_->stats = PerChannelStatistics::load(l, "", c.latent_channels);
  int64_t ch = c.decoder_bottleneck_channels();
  impl_->conv_in = CausalConv3d::load(l, "conv_in", c.latent_channels, ch, pad);
  for (size_t n = c.decoder_blocks.size(), k = 0; k < n; ++k) {
    const VaeBlock& b = c.decoder_blocks[n - 1 - k];
    const std::string p = "up_blocks." + std::to_string(k);
    UpBlock u;
    if (b.name == "res_x") {
      for (int64_t j = 0; j < b.num_layers; ++j)
        u.resnets.push_back(
            ResnetBlock3D::load(l, p + ".res_blocks." + std::to_string(j), ch, ch, c.norm_layer, pad));
    } else if (b.name == "res_x_y") {
      const int64_t m = b.multiplier.value_or(2);
      VIDAX_CHECK(ch % m == 0, "LTX-2 video VAE decoder: " << p << " (res_x_y) divides " << ch << " channels by " << m);
      u.resnets.push_back(ResnetBlock3D::load(l, p, ch, ch / m, c.norm_layer, pad));
      ch /= m;
    } else if (b.name == "attn") {
      u.attn = AttnBlock3D::load(l, p, ch);
    } else {  // compress_time / compress_space / compress_all
      const int64_t m = b.multiplier.value_or(1);
      u.up = DepthToSpaceUpsample::load(l, p, ch, b.stride(), b.residual, m, pad);
      ch /= m;
    }
    impl_->up_blocks.push_back(std::move(u));
  }
  impl_->norm_out = Norm::load(l, "conv_norm_out", c.norm_layer, ch);
  impl_->conv_out = CausalConv3d::load(l, "conv_out", ch, c.out_channels * c.patch_size * c.patch_size, pad);
}

VideoDecoder::~VideoDecoder() = default;
VideoDecoder::VideoDecoder(VideoDecoder&&) noexcept = default;

void VideoDecoder::check_latent(const Shape& s) const {
  VIDAX_CHECK(s.size() == 5 && s[0] >= 1 && s[1] == config_.latent_channels && s[2] >= 1 && s[3] >= 1 && s[4] >= 1,
              "LTX-2 video VAE decoder: the latent must be [B, " << config_.latent_channels
                                                                 << ", F', H', W'] (non-empty), found "
                                                                 << shape_str(s));
}

Shape VideoDecoder::output_shape(const Shape& s) const {
  check_latent(s);
  const int64_t t = config_.decoder_time_factor(), sp = config_.decoder_space_factor();
  return {s[0], config_.out_channels, 1 + t * (s[2] - 1), sp * s[3], sp * s[4]};
}

Tensor VideoDecoder::forward(const Tensor& sample, const VaeTap& tap) const {
  check_latent(sample.shape());
  const auto tap_if = [&tap](const std::string& name, const Tensor& t) {
    if (tap) tap(name, t);
  };
  const bool causal = config_.causal_decoder;
  Tensor x = impl_->stats.un_normalize(sample.to(compute_));
  x = impl_->conv_in(x, causal);
  tap_if("conv_in", x);
  for (size_t i = 0; i < impl_->up_blocks.size(); ++i) {
    x = impl_->up_blocks[i](x, causal);
    tap_if("up_blocks." + std::to_string(i), x);
  }
  x = impl_->conv_out(ops::silu(impl_->norm_out(x)), causal);
  tap_if("conv_out", x);
  return unpatchify(x, config_.patch_size).to(sample.dtype());
}

}  // namespace vidax::ltx2
