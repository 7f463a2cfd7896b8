// HunyuanVAE: AutoencoderKLCausal3D's encoder and decoder (hyvideo/vae/vae.py EncoderCausal3D /
// DecoderCausal3D, built from unet_causal_3d_blocks.py), run on the whole clip.
#include "models/hunyuan/vae.h"

#include <cmath>
#include <optional>
#include <sstream>

#include "backend/ops.h"
#include "core/error.h"
#include "models/hunyuan/vae_blocks.h"

namespace vidax::hunyuan {

namespace {

constexpr double kEps = 1e-6;  // every GroupNorm of the VAE (resnet_eps, conv_norm_out, attention)

using vae_blocks::Loader;

std::string idx(const std::string& prefix, int64_t i) { return prefix + "." + std::to_string(i); }

using vae_blocks::CausalConv;  // vae_blocks.h (the 1.5 VAE's too)

struct GroupNorm {
  Tensor w, b;
  int64_t groups = 1;
  static GroupNorm load(const Loader& l, const std::string& prefix, int64_t ch, int64_t groups) {
    return {l.get(prefix + ".weight", {ch}), l.get(prefix + ".bias", {ch}), groups};
  }
  Tensor operator()(const Tensor& x) const { return ops::group_norm(x, groups, w, b, kEps); }
};

// ResnetBlockCausal3D (temb None, output_scale_factor 1): GroupNorm, SiLU, conv1, GroupNorm, SiLU,
// (dropout), conv2, plus the input (through the 1x1x1 conv_shortcut when the width changes).
struct Resnet {
  GroupNorm norm1, norm2;
  CausalConv conv1, conv2;
  std::optional<CausalConv> shortcut;
  static Resnet load(const Loader& l, const std::string& p, int64_t in, int64_t out, int64_t groups) {
    Resnet r;
    r.norm1 = GroupNorm::load(l, p + ".norm1", in, groups);
    r.conv1 = CausalConv::load(l, p + ".conv1", in, out, 3);
    r.norm2 = GroupNorm::load(l, p + ".norm2", out, groups);
    r.conv2 = CausalConv::load(l, p + ".conv2", out, out, 3);
    if (in != out) r.shortcut = CausalConv::load(l, p + ".conv_shortcut", in, out, 1);
    return r;
  }
  Tensor operator()(const Tensor& x) const {
    Tensor h = conv1(ops::silu(norm1(x)));
    h = conv2(ops::silu(norm2(h)));
    return ops::add(shortcut ? (*shortcut)(x) : x, h);
  }
};

// The mid-block Attention (diffusers Attention, heads = 1, dim_head = C, residual_connection):
// GroupNorm over all positions, q/k/v linears over each position's channels, softmax(q k^T / sqrt(C))
// under prepare_causal_attention_mask (position i of frame i // HW sees keys [0, (i // HW + 1) HW)),
// to_out.0, plus the input. The mask is block-causal by frame, so frame f's queries attend to the
// keys of frames 0..f: one attention call per query frame, no [N, N] mask.
struct MidAttention {
  GroupNorm norm;
  Tensor q_w, q_b, k_w, k_b, v_w, v_b, o_w, o_b;
  static MidAttention load(const Loader& l, const std::string& p, int64_t c, int64_t groups) {
    MidAttention a;
    a.norm = GroupNorm::load(l, p + ".group_norm", c, groups);
    a.q_w = l.get(p + ".to_q.weight", {c, c});
    a.q_b = l.get(p + ".to_q.bias", {c});
    a.k_w = l.get(p + ".to_k.weight", {c, c});
    a.k_b = l.get(p + ".to_k.bias", {c});
    a.v_w = l.get(p + ".to_v.weight", {c, c});
    a.v_b = l.get(p + ".to_v.bias", {c});
    a.o_w = l.get(p + ".to_out.0.weight", {c, c});
    a.o_b = l.get(p + ".to_out.0.bias", {c});
    return a;
  }
  Tensor operator()(const Tensor& x) const {
    const int64_t B = x.size(0), C = x.size(1), T = x.size(2), H = x.size(3), W = x.size(4), hw = H * W;
    // "b c f h w -> b (f h w) c"
    Tensor tokens = norm(x).permute({0, 2, 3, 4, 1}).reshape({B, T * hw, C});
    Tensor q = ops::linear(tokens, q_w, q_b).unsqueeze(2);  // [B, N, 1 head, C]
    Tensor k = ops::linear(tokens, k_w, k_b).unsqueeze(2);
    Tensor v = ops::linear(tokens, v_w, v_b).unsqueeze(2);
    Tensor o = vae_blocks::frame_causal_attention(q, k, v, T, hw);
    o = ops::linear(o.reshape({B, T * hw, C}), o_w, o_b);
    return ops::add(o.reshape({B, T, H, W, C}).permute({0, 4, 1, 2, 3}), x);
  }
};

// UNetMidBlockCausal3D (num_layers 1): resnets.0, [attentions.0], resnets.1.
struct MidBlock {
  Resnet res0, res1;
  std::optional<MidAttention> attn;
  static MidBlock load(const Loader& l, const std::string& p, int64_t c, int64_t groups, bool attention) {
    MidBlock m;
    m.res0 = Resnet::load(l, p + ".resnets.0", c, c, groups);
    if (attention) m.attn = MidAttention::load(l, p + ".attentions.0", c, groups);
    m.res1 = Resnet::load(l, p + ".resnets.1", c, c, groups);
    return m;
  }
  Tensor operator()(const Tensor& x) const {
    Tensor h = res0(x);
    if (attn) h = (*attn)(h);
    return res1(h);
  }
};

// UpsampleCausal3D (interpolate, use_conv): the first frame nearest-upsampled in space only, the
// others in time and space by the level's factors, then a CausalConv3d(3).
struct Upsample {
  CausalConv conv;
  int64_t ft = 1, fs = 1;
  Tensor operator()(const Tensor& x) const {
    const int64_t T = x.size(2);
    Tensor first = ops::upsample_nearest(x.slice(2, 0, 1), {fs, fs});
    Tensor up = T == 1 ? first : ops::concat({first, ops::upsample_nearest(x.slice(2, 1, T), {ft, fs, fs})}, 2);
    return conv(up);
  }
};

void tap_if(const VAETap& tap, const std::string& name, const Tensor& t) {
  if (tap) tap(name, t);
}

}  // namespace

// EncoderCausal3D + quant_conv.
struct HunyuanVAE::Encoder {
  CausalConv conv_in, conv_out;
  struct Level {
    std::vector<Resnet> resnets;
    std::optional<CausalConv> down;  // downsamplers.0 (DownsampleCausal3D: a strided CausalConv3d(3))
  };
  std::vector<Level> levels;
  MidBlock mid;
  GroupNorm norm_out;
  Tensor quant_w, quant_b;

  Encoder(const VAEConfig& c, const Loader& l) {
    const auto& ch = c.block_out_channels;
    const int64_t g = c.norm_num_groups;
    conv_in = CausalConv::load(l, "encoder.conv_in", c.in_channels, ch[0], 3);
    int64_t in = ch[0];
    for (int64_t i = 0; i < c.levels(); ++i) {
      const std::string p = idx("encoder.down_blocks", i);
      const int64_t out = ch[static_cast<size_t>(i)];
      Level lv;
      for (int64_t j = 0; j < c.layers_per_block; ++j)
        lv.resnets.push_back(Resnet::load(l, idx(p + ".resnets", j), j == 0 ? in : out, out, g));
      const bool s = c.spatial_down(i), t = c.temporal_down(i);
      if (s || t)
        lv.down = CausalConv::load(l, p + ".downsamplers.0.conv", out, out, 3, {t ? 2 : 1, s ? 2 : 1, s ? 2 : 1});
      levels.push_back(std::move(lv));
      in = out;
    }
    mid = MidBlock::load(l, "encoder.mid_block", ch.back(), g, c.mid_block_add_attention);
    norm_out = GroupNorm::load(l, "encoder.conv_norm_out", ch.back(), g);
    conv_out = CausalConv::load(l, "encoder.conv_out", ch.back(), 2 * c.latent_channels, 3);
    const int64_t m = 2 * c.latent_channels;
    quant_w = l.get("quant_conv.weight", {m, m, 1, 1, 1});
    quant_b = l.get("quant_conv.bias", {m});
  }

  Tensor forward(Tensor x, const VAETap& tap) const {
    x = conv_in(x);
    tap_if(tap, "encoder.conv_in", x);
    for (size_t i = 0; i < levels.size(); ++i) {
      for (const Resnet& r : levels[i].resnets) x = r(x);
      if (levels[i].down) x = (*levels[i].down)(x);
      tap_if(tap, idx("encoder.down_blocks", static_cast<int64_t>(i)), x);
    }
    x = mid(x);
    tap_if(tap, "encoder.mid_block", x);
    x = conv_out(ops::silu(norm_out(x)));
    tap_if(tap, "encoder", x);
    x = ops::conv3d(x, quant_w, quant_b, {1, 1, 1}, {0, 0, 0});
    tap_if(tap, "quant_conv", x);
    return x;
  }
};

// post_quant_conv + DecoderCausal3D.
struct HunyuanVAE::Decoder {
  Tensor post_w, post_b;
  CausalConv conv_in, conv_out;
  MidBlock mid;
  struct Level {
    std::vector<Resnet> resnets;
    std::optional<Upsample> up;  // upsamplers.0
  };
  std::vector<Level> levels;
  GroupNorm norm_out;

  Decoder(const VAEConfig& c, const Loader& l) {
    const int64_t L = c.latent_channels, g = c.norm_num_groups;
    const std::vector<int64_t> ch(c.block_out_channels.rbegin(), c.block_out_channels.rend());
    post_w = l.get("post_quant_conv.weight", {L, L, 1, 1, 1});
    post_b = l.get("post_quant_conv.bias", {L});
    conv_in = CausalConv::load(l, "decoder.conv_in", L, ch[0], 3);
    mid = MidBlock::load(l, "decoder.mid_block", ch[0], g, c.mid_block_add_attention);
    int64_t in = ch[0];
    for (int64_t i = 0; i < c.levels(); ++i) {
      const std::string p = idx("decoder.up_blocks", i);
      const int64_t out = ch[static_cast<size_t>(i)];
      Level lv;
      for (int64_t j = 0; j < c.layers_per_block + 1; ++j)
        lv.resnets.push_back(Resnet::load(l, idx(p + ".resnets", j), j == 0 ? in : out, out, g));
      const bool s = c.spatial_down(i), t = c.temporal_down(i);
      if (s || t) lv.up = Upsample{CausalConv::load(l, p + ".upsamplers.0.conv", out, out, 3), t ? 2 : 1, s ? 2 : 1};
      levels.push_back(std::move(lv));
      in = out;
    }
    norm_out = GroupNorm::load(l, "decoder.conv_norm_out", ch.back(), g);
    conv_out = CausalConv::load(l, "decoder.conv_out", ch.back(), c.out_channels, 3);
  }

  Tensor forward(Tensor z, const VAETap& tap) const {
    z = ops::conv3d(z, post_w, post_b, {1, 1, 1}, {0, 0, 0});
    tap_if(tap, "post_quant_conv", z);
    z = conv_in(z);
    tap_if(tap, "decoder.conv_in", z);
    z = mid(z);
    tap_if(tap, "decoder.mid_block", z);
    for (size_t i = 0; i < levels.size(); ++i) {
      for (const Resnet& r : levels[i].resnets) z = r(z);
      if (levels[i].up) z = (*levels[i].up)(z);
      tap_if(tap, idx("decoder.up_blocks", static_cast<int64_t>(i)), z);
    }
    z = conv_out(ops::silu(norm_out(z)));
    tap_if(tap, "decoder", z);
    return z;
  }
};

HunyuanVAE::HunyuanVAE(const VAEConfig& config, nn::ParamSource& params, VAEParts parts, DType compute)
    : config_(config), compute_(compute) {
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16,
              "HunyuanVideo VAE: compute dtype must be F32 or BF16, found " << dtype_name(compute));
  VIDAX_CHECK(parts.encoder || parts.decoder, "HunyuanVideo VAE: neither the encoder nor the decoder is selected");
  const Loader l{params, compute};
  if (parts.encoder) encoder_ = std::make_unique<Encoder>(config_, l);
  if (parts.decoder) decoder_ = std::make_unique<Decoder>(config_, l);
}

HunyuanVAE::~HunyuanVAE() = default;
HunyuanVAE::HunyuanVAE(HunyuanVAE&&) noexcept = default;
HunyuanVAE& HunyuanVAE::operator=(HunyuanVAE&&) noexcept = default;

std::vector<std::pair<std::string, Shape>> HunyuanVAE::parameter_shapes(const VAEConfig& config, VAEParts parts) {
  return vae_blocks::recorded_shapes([&](nn::ParamSource& src) { HunyuanVAE probe(config, src, parts, DType::F32); });
}

void HunyuanVAE::check_video(const Shape& s) const {
  vae_blocks::check_video("HunyuanVideo VAE", s, config_.in_channels, config_.temporal_factor(),
                          config_.spatial_factor());
}

void HunyuanVAE::check_latent(const Shape& s) const {
  vae_blocks::check_latent("HunyuanVideo VAE", s, config_.latent_channels);
}

Tensor HunyuanVAE::run_encoder(const Tensor& video, const VAETap& tap) const {
  VIDAX_CHECK(encoder_, "HunyuanVideo VAE: the encoder was not loaded");
  return encoder_->forward(video.dtype() == compute_ ? video : ops::cast(video, compute_), tap);
}

Tensor HunyuanVAE::run_decoder(const Tensor& latent, const VAETap& tap) const {
  VIDAX_CHECK(decoder_, "HunyuanVideo VAE: the decoder was not loaded");
  return decoder_->forward(latent.dtype() == compute_ ? latent : ops::cast(latent, compute_), tap);
}

Tensor HunyuanVAE::encode_moments(const Tensor& video, const VAETap& tap) const {
  VIDAX_CHECK(encoder_, "HunyuanVideo VAE: the encoder was not loaded");
  check_video(video.shape());
  return run_encoder(video, tap);
}

// DiagonalGaussianDistribution: torch.chunk(moments, 2, dim=1), logvar clamped to [-30, 20];
// mode() = mean (the clamp and std do not enter it).
VAEPosterior posterior_of(const Tensor& moments) {
  VIDAX_CHECK(moments.dim() == 5 && moments.size(1) % 2 == 0,
              "HunyuanVideo VAE: moments must be [B, 2C, F, H, W], found " << shape_str(moments.shape()));
  const int64_t c = moments.size(1) / 2;
  return {ops::copy(moments.slice(1, 0, c)), ops::clamp(ops::copy(moments.slice(1, c, 2 * c)), -30.0, 20.0)};
}

Tensor HunyuanVAE::mode_scaled(const Tensor& moments) const {
  return ops::scale(posterior_of(moments).mean, config_.scaling_factor);
}

Tensor HunyuanVAE::encode_scaled(const Tensor& video, const VAETap& tap) const {
  return mode_scaled(encode_moments(video, tap));
}

Tensor HunyuanVAE::decode(const Tensor& latent, const VAETap& tap) const {
  VIDAX_CHECK(decoder_, "HunyuanVideo VAE: the decoder was not loaded");
  check_latent(latent.shape());
  return run_decoder(latent, tap);
}

Tensor HunyuanVAE::to_unit_range(const Tensor& image) const {
  Tensor video = ops::clamp(ops::add_scalar(ops::scale(image, 0.5), 0.5), 0.0, 1.0);
  return video.dtype() == DType::F32 ? video : ops::cast(video, DType::F32);  // the pipeline's .float()
}

Tensor HunyuanVAE::decode_scaled(const Tensor& z, const VAETap& tap) const {
  check_latent(z.shape());
  // latents = latents / scaling_factor (a division, as the pipeline's: not a multiply by 1/f).
  return to_unit_range(decode(ops::div(z, Tensor::full({1}, config_.scaling_factor, z.dtype())), tap));
}

}  // namespace vidax::hunyuan
