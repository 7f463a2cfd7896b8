// ConvVideoDecoder.forward (conv_video_decoder.py): [decode-time noise], un-normalize, conv_in, the
// up blocks (the config's decoder_blocks reversed), conv_norm_out, [adaLN from the last timestep
// embedding], SiLU, conv_out, unpatchify.
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
constexpr double kDecodeNoiseScale = 0.025;  // ConvVideoDecoder.decode_noise_scale (a Python float)
constexpr float kDecodeTimestep = 0.05f;     // ConvVideoDecoder.decode_timestep

struct UpBlock {
  std::vector<ResnetBlock3D> resnets;             // res_x: res_blocks.*; res_x_y: the block itself
  std::optional<TimestepEmbedder> time_embedder;  // res_x with timestep conditioning: [B] -> [B, 4 C]
  std::optional<DepthToSpaceUpsample> up;
  std::optional<AttnBlock3D> attn;
  // t: the scaled timestep (conditioned decoders).
  Tensor operator()(Tensor x, bool causal, const std::vector<float>& t, TorchGenerator* gen) const {
    if (up) return (*up)(x, causal);
    if (attn) return (*attn)(x);
    const std::optional<Tensor> temb = time_embedder ? std::optional((*time_embedder)(t)) : std::nullopt;
    for (const ResnetBlock3D& r : resnets) x = r(x, causal, temb, gen);
    return x;
  }
};

}  // namespace

struct VideoDecoder::Impl {
  PerChannelStatistics stats;
  CausalConv3d conv_in, conv_out;
  std::vector<UpBlock> up_blocks;
  Norm norm_out;
  // timestep_conditioning: timestep_scale_multiplier (a scalar parameter, 1000 at init),
  // last_time_embedder [B] -> [B, 2 C], last_scale_shift_table [2, C] as [1, 2, C, 1, 1, 1].
  float timestep_scale = 1.0f;
  std::optional<TimestepEmbedder> last_time_embedder;
  std::optional<Tensor> last_scale_shift_table;
};

VideoDecoder::VideoDecoder(const VideoVaeConfig& c, nn::ParamSource& params, const std::string& prefix, DType compute)
    : config_(c), compute_(compute), impl_(std::make_unique<Impl>()) {
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16,
              "LTX-2 video VAE decoder: compute dtype must be F32 or BF16, found " << dtype_name(compute));
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
      if (c.timestep_conditioning) u.time_embedder = TimestepEmbedder::load(l, p + ".time_embedder", 4 * ch);
      for (int64_t j = 0; j < b.num_layers; ++j)
        u.resnets.push_back(ResnetBlock3D::load(l, p + ".res_blocks." + std::to_string(j), ch, ch, c.norm_layer, pad,
                                                c.timestep_conditioning, b.inject_noise));
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
  if (c.timestep_conditioning) {
    const Tensor m = params.take(prefix + "timestep_scale_multiplier", {});
    VIDAX_CHECK(m.device() == Device::CPU, "LTX-2 video VAE decoder: timestep_scale_multiplier must be a host tensor");
    impl_->timestep_scale = m.to_f32_vector().at(0);
    impl_->last_time_embedder = TimestepEmbedder::load(l, "last_time_embedder", 2 * ch);
    impl_->last_scale_shift_table = l.get("last_scale_shift_table", {2, ch}).reshape({1, 2, ch, 1, 1, 1});
  }
}

bool VideoDecoder::uses_noise() const {
  if (config_.timestep_conditioning) return true;
  for (const VaeBlock& b : config_.decoder_blocks)
    if (b.inject_noise) return true;
  return false;
}

VideoDecoder::~VideoDecoder() = default;
VideoDecoder::VideoDecoder(VideoDecoder&&) noexcept = default;

void VideoDecoder::check_latent(const Shape& s) const {
  VIDAX_CHECK(s.size() == 5 && s[0] >= 1 && s[1] == config_.latent_channels && s[2] >= 1 && s[3] >= 1 && s[4] >= 1,
              "LTX-2 video VAE decoder: the latent must be [B, "
                  << config_.latent_channels << ", F', H', W'] (non-empty), found " << shape_str(s));
}

Shape VideoDecoder::output_shape(const Shape& s) const {
  check_latent(s);
  const int64_t t = config_.decoder_time_factor(), sp = config_.decoder_space_factor();
  return {s[0], config_.out_channels, 1 + t * (s[2] - 1), sp * s[3], sp * s[4]};
}

Tensor VideoDecoder::forward(const Tensor& sample, const VaeTap& tap, const DecoderConditioning& cond) const {
  check_latent(sample.shape());
  const auto tap_if = [&tap](const std::string& name, const Tensor& t) {
    if (tap) tap(name, t);
  };
  const bool causal = config_.causal_decoder, tc = config_.timestep_conditioning;
  const int64_t B = sample.size(0);
  VIDAX_CHECK(tc || !cond.timestep,
              "LTX-2 video VAE decoder: a timestep was given but the config has no "
              "timestep_conditioning (the reference would ignore it)");
  VIDAX_CHECK(!cond.timestep || static_cast<int64_t>(cond.timestep->size()) == B,
              "LTX-2 video VAE decoder: " << cond.timestep->size() << " timesteps for a batch of " << B);
  VIDAX_CHECK(!uses_noise() || cond.generator != nullptr,
              "LTX-2 video VAE decoder: this decoder draws noise (timestep_conditioning / inject_noise): pass a "
              "generator (DecoderConditioning::generator), as the pipeline passes its seeded torch.Generator");
  Tensor x = sample.to(compute_);
  if (tc) {  // noise + (1 - decode_noise_scale) * sample, the draw in the sample's dtype
    const Tensor noise = ops::scale(cond.generator->randn(x.shape(), x.dtype()), kDecodeNoiseScale);
    x = ops::add(noise, ops::scale(x, 1.0 - kDecodeNoiseScale));
  }
  x = impl_->stats.un_normalize(x);
  // timestep * timestep_scale_multiplier, in fp32 (the pipeline's default: decode_timestep per sample).
  std::vector<float> t;
  if (tc)
    for (int64_t b = 0; b < B; ++b)
      t.push_back((cond.timestep ? (*cond.timestep)[static_cast<size_t>(b)] : kDecodeTimestep) * impl_->timestep_scale);
  x = impl_->conv_in(x, causal);
  tap_if("conv_in", x);
  for (size_t i = 0; i < impl_->up_blocks.size(); ++i) {
    x = impl_->up_blocks[i](x, causal, t, cond.generator);
    tap_if("up_blocks." + std::to_string(i), x);
  }
  x = impl_->norm_out(x);
  if (tc) {  // shift, scale = last_scale_shift_table + last_time_embedder(t) viewed [B, 2, C]
    const int64_t C = x.size(1);
    const Tensor ada =
        ops::add(*impl_->last_scale_shift_table, (*impl_->last_time_embedder)(t).reshape({B, 2, C, 1, 1, 1}));
    x = ops::modulate(x, ada.select(1, 0), ada.select(1, 1));
  }
  x = impl_->conv_out(ops::silu(x), causal);
  tap_if("conv_out", x);
  return unpatchify(x, config_.patch_size).to(sample.dtype());
}

}  // namespace vidax::ltx2
