// VideoEncoder.forward (video_vae.py): patchify, conv_in, the down blocks, conv_norm_out, SiLU,
// conv_out, the means (the first latent_channels outputs in every latent_log_var mode), normalize.
#include <optional>

#include "backend/ops.h"
#include "core/error.h"
#include "models/ltx2/video_vae.h"
#include "models/ltx2/video_vae_blocks.h"

namespace vidax::ltx2 {

using namespace vae;

namespace {

// One down block: UNetMidBlock3D (res_x), ResnetBlock3D (res_x_y), a strided CausalConv3d
// (compress_time / _space / _all / compress_all_x_y), SpaceToDepthDownsample (compress_*_res) or
// AttnBlock3D (attn). The encoder calls each with causal=True (its default).
struct DownBlock {
  std::vector<ResnetBlock3D> resnets;
  std::optional<CausalConv3d> conv;
  std::optional<SpaceToDepthDownsample> down;
  std::optional<AttnBlock3D> attn;
  Tensor operator()(Tensor x) const {
    if (conv) return (*conv)(x, true);
    if (down) return (*down)(x, true);
    if (attn) return (*attn)(x);
    for (const ResnetBlock3D& r : resnets) x = r(x, true);
    return x;
  }
};

bool ends_with(const std::string& s, const char* suffix) {
  const std::string t(suffix);
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

}  // namespace

struct VideoEncoder::Impl {
  PerChannelStatistics stats;
  CausalConv3d conv_in, conv_out;
  std::vector<DownBlock> down_blocks;
  Norm norm_out;
};

VideoEncoder::VideoEncoder(const VideoVaeConfig& c, nn::ParamSource& params, const std::string& prefix, DType compute)
    : config_(c), compute_(compute), impl_(std::make_unique<Impl>()) {
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16,
              "LTX-2 video VAE encoder: compute dtype must be F32 or BF16, found " << dtype_name(compute));
  const Loader l{params, prefix, compute};
  const VaePadding pad = c.encoder_padding;
  impl_->stats = PerChannelStatistics::load(l, "", c.latent_channels);
  int64_t ch = c.latent_channels;  // conv_in widens the patches to latent_channels (feature_channels = out_channels)
  impl_->conv_in = CausalConv3d::load(l, "conv_in", c.in_channels * c.patch_size * c.patch_size, ch, pad);
  for (size_t i = 0; i < c.encoder_blocks.size(); ++i) {
    const VaeBlock& b = c.encoder_blocks[i];
    const std::string p = "down_blocks." + std::to_string(i);
    DownBlock d;
    if (b.name == "res_x") {
      for (int64_t j = 0; j < b.num_layers; ++j)
        d.resnets.push_back(ResnetBlock3D::load(l, p + ".res_blocks." + std::to_string(j), ch, ch, c.norm_layer, pad));
    } else if (b.name == "res_x_y") {
      const int64_t out = ch * b.multiplier.value_or(2);
      d.resnets.push_back(ResnetBlock3D::load(l, p, ch, out, c.norm_layer, pad));
      ch = out;
    } else if (b.name == "attn") {
      d.attn = AttnBlock3D::load(l, p, ch);
    } else if (ends_with(b.name, "_res")) {  // compress_all_res / compress_space_res / compress_time_res
      const int64_t out = ch * b.multiplier.value_or(2);
      d.down = SpaceToDepthDownsample::load(l, p, ch, out, b.stride(), pad);
      ch = out;
    } else {  // compress_time / compress_space / compress_all (same width), compress_all_x_y (wider)
      const int64_t out = b.name == "compress_all_x_y" ? ch * b.multiplier.value_or(2) : ch;
      d.conv = CausalConv3d::load(l, p, ch, out, pad, b.stride());
      ch = out;
    }
    impl_->down_blocks.push_back(std::move(d));
  }
  impl_->norm_out = Norm::load(l, "conv_norm_out", c.norm_layer, ch);
  const int64_t n = c.latent_channels;
  const int64_t out = c.latent_log_var == VaeLogVar::PerChannel ? 2 * n : n + 1;  // uniform / constant: + 1 logvar
  impl_->conv_out = CausalConv3d::load(l, "conv_out", ch, out, pad);
}

VideoEncoder::~VideoEncoder() = default;
VideoEncoder::VideoEncoder(VideoEncoder&&) noexcept = default;

void VideoEncoder::check_video(const Shape& s) const {
  const int64_t t = config_.encoder_time_factor(), sp = config_.encoder_space_factor();
  VIDAX_CHECK(
      s.size() == 5 && s[0] >= 1 && s[1] == config_.in_channels && s[2] >= 1 && s[3] >= 1 && s[4] >= 1,
      "LTX-2 video VAE encoder: the video must be [B, " << config_.in_channels << ", F, H, W], found " << shape_str(s));
  if ((s[2] - 1) % t != 0) {
    const int64_t lo = 1 + (s[2] - 1) / t * t;
    throw Error(msg() << "LTX-2 video VAE encoder: " << s[2] << " frames; the encoder takes 1 + " << t
                      << " k frames (nearest: " << lo << " or " << lo + t << ")");
  }
  VIDAX_CHECK(s[3] % sp == 0 && s[4] % sp == 0,
              "LTX-2 video VAE encoder: " << s[3] << " x " << s[4] << " pixels; height and width must be multiples of "
                                          << sp << " (nearest below: " << s[3] / sp * sp << " x " << s[4] / sp * sp
                                          << ")");
}

Shape VideoEncoder::output_shape(const Shape& s) const {
  check_video(s);
  const int64_t t = config_.encoder_time_factor(), sp = config_.encoder_space_factor();
  return {s[0], config_.latent_channels, 1 + (s[2] - 1) / t, s[3] / sp, s[4] / sp};
}

Tensor VideoEncoder::forward(const Tensor& sample, const VaeTap& tap) const {
  check_video(sample.shape());
  const auto tap_if = [&tap](const std::string& name, const Tensor& t) {
    if (tap) tap(name, t);
  };
  Tensor x = impl_->conv_in(patchify(sample.to(compute_), config_.patch_size), true);
  tap_if("conv_in", x);
  for (size_t i = 0; i < impl_->down_blocks.size(); ++i) {
    x = impl_->down_blocks[i](x);
    tap_if("down_blocks." + std::to_string(i), x);
  }
  x = impl_->conv_out(ops::silu(impl_->norm_out(x)), true);
  tap_if("conv_out", x);
  // uniform: [means, repeated logvar]; constant: [means, -30]; per_channel: [means, logvar]. The
  // chunk's first half is the means in all three.
  const Tensor means = x.slice(1, 0, config_.latent_channels);
  return impl_->stats.normalize(means).to(sample.dtype());
}

}  // namespace vidax::ltx2
