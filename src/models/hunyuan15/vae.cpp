// HunyuanVideo15VAE: AutoencoderKLConv3D's Encoder and Decoder
// (hyvideo/models/autoencoders/hunyuanvideo_15_vae.py), run on the whole clip or on the
// reference's spatial tiles.
#include "models/hunyuan15/vae.h"

#include <cmath>
#include <optional>

#include "backend/ops.h"
#include "core/error.h"
#include "models/hunyuan/vae_blocks.h"

namespace vidax::hunyuan15 {

namespace {

using hunyuan::vae_blocks::CausalConv;

using hunyuan::vae_blocks::Loader;

std::string idx(const std::string& prefix, int64_t i) { return prefix + "." + std::to_string(i); }

void tap_if(const VAETap& tap, const std::string& name, const Tensor& t) {
  if (tap) tap(name, t);
}

// RMS_norm(dim, images=False): F.normalize(x, dim=1) * sqrt(C) * gamma (+ 0.), gamma [C, 1, 1, 1].
struct RmsNorm {
  Tensor gamma;  // [C] (the stored [C, 1, 1, 1] viewed flat)
  static RmsNorm load(const Loader& l, const std::string& prefix, int64_t c) {
    return {l.get(prefix + ".gamma", {c, 1, 1, 1}).view({c})};
  }
  double scale() const { return std::sqrt(static_cast<double>(gamma.size(0))); }
  Tensor operator()(const Tensor& x) const {
    return ops::mul(ops::scale(ops::l2_normalize(x, 1), scale()), gamma.view({gamma.size(0), 1, 1, 1}));
  }
  // swish(norm(x)), in one pass rounding as the two do.
  Tensor silu(const Tensor& x) const { return ops::l2_norm_scale_silu(x, gamma, scale()); }
};

// A plain 1x1x1 Conv3d.
struct Conv1 {
  Tensor w, b;
  static Conv1 load(const Loader& l, const std::string& prefix, int64_t in, int64_t out) {
    return {l.get(prefix + ".weight", {out, in, 1, 1, 1}), l.get(prefix + ".bias", {out})};
  }
  Tensor operator()(const Tensor& x) const { return ops::conv3d(x, w, b, {1, 1, 1}, {0, 0, 0}); }
  Tensor w2d() const { return w.view({w.size(0), w.size(1)}); }
};

// ResnetBlock: norm1, swish, conv1, norm2, swish, conv2, plus x (through nin_shortcut when the width changes).
struct Resnet {
  RmsNorm norm1, norm2;
  CausalConv conv1, conv2;
  std::optional<Conv1> shortcut;
  static Resnet load(const Loader& l, const std::string& p, int64_t in, int64_t out) {
    Resnet r;
    r.norm1 = RmsNorm::load(l, p + ".norm1", in);
    r.conv1 = CausalConv::load(l, p + ".conv1", in, out, 3);
    r.norm2 = RmsNorm::load(l, p + ".norm2", out);
    r.conv2 = CausalConv::load(l, p + ".conv2", out, out, 3);
    if (in != out) r.shortcut = Conv1::load(l, p + ".nin_shortcut", in, out);
    return r;
  }
  Tensor operator()(const Tensor& x) const {
    Tensor h = conv1(norm1.silu(x));
    h = conv2(norm2.silu(h));
    return ops::add(shortcut ? (*shortcut)(x) : x, h);
  }
};

// AttnBlock: x + proj_out(attention(norm(x))), one head over all positions, q/k/v 1x1x1 convs, the
// frame-causal mask (prepare_causal_attention_mask).
struct Attention {
  RmsNorm norm;
  Conv1 q, k, v, proj_out;
  static Attention load(const Loader& l, const std::string& p, int64_t c) {
    return {RmsNorm::load(l, p + ".norm", c), Conv1::load(l, p + ".q", c, c), Conv1::load(l, p + ".k", c, c),
            Conv1::load(l, p + ".v", c, c), Conv1::load(l, p + ".proj_out", c, c)};
  }
  Tensor operator()(const Tensor& x) const {
    const int64_t B = x.size(0), C = x.size(1), T = x.size(2), H = x.size(3), W = x.size(4), hw = H * W;
    // "b c f h w -> b 1 (f h w) c"; a 1x1x1 conv is a linear over each position's channels.
    Tensor tokens = norm(x).permute({0, 2, 3, 4, 1}).reshape({B, T * hw, C});
    Tensor o = hunyuan::vae_blocks::frame_causal_attention(ops::linear(tokens, q.w2d(), q.b).unsqueeze(2),
                                                           ops::linear(tokens, k.w2d(), k.b).unsqueeze(2),
                                                           ops::linear(tokens, v.w2d(), v.b).unsqueeze(2), T, hw);
    o = ops::linear(o.reshape({B, T * hw, C}), proj_out.w2d(), proj_out.b);
    return ops::add(x, o.reshape({B, T, H, W, C}).permute({0, 4, 1, 2, 3}));
  }
};

// "b c (f r1) (h r2) (w r3) -> b (r1 r2 r3 c) f h w" (r2 = r3 = 2).
Tensor space_to_channels(const Tensor& x, int64_t r1) {
  const int64_t B = x.size(0), C = x.size(1), F = x.size(2) / r1, H = x.size(3) / 2, W = x.size(4) / 2;
  return ops::copy(x.contiguous().view({B, C, F, r1, H, 2, W, 2}).permute({0, 3, 5, 7, 1, 2, 4, 6}))
      .view({B, r1 * 4 * C, F, H, W});
}

// "b (r1 r2 r3 c) f h w -> b c (f r1) (h r2) (w r3)" (r2 = r3 = 2).
Tensor channels_to_space(const Tensor& x, int64_t r1) {
  const int64_t B = x.size(0), C = x.size(1) / (4 * r1), F = x.size(2), H = x.size(3), W = x.size(4);
  return ops::copy(x.contiguous().view({B, r1, 2, 2, C, F, H, W}).permute({0, 4, 5, 1, 6, 2, 7, 3}))
      .view({B, C, F * r1, 2 * H, 2 * W});
}

// x [B, C * group, ...] viewed [B, C, group, ...], mean over the group.
Tensor group_mean(const Tensor& x, int64_t channels) {
  const int64_t group = x.size(1) / channels;
  if (group == 1) return x;
  return ops::mean(x.contiguous().view({x.size(0), channels, group, x.size(2), x.size(3), x.size(4)}), 2);
}

// x.repeat_interleave(repeats, dim=1).
Tensor repeat_channels(const Tensor& x, int64_t repeats) {
  if (repeats == 1) return x;
  const Tensor u = x.contiguous().unsqueeze(2);  // [B, C, 1, T, H, W]
  return ops::concat(std::vector<Tensor>(static_cast<size_t>(repeats), u), 2)
      .view({x.size(0), x.size(1) * repeats, x.size(2), x.size(3), x.size(4)});
}

Tensor first_frame(const Tensor& x) { return x.slice(2, 0, 1); }
Tensor next_frames(const Tensor& x) { return x.slice(2, 1, x.size(2)); }
Tensor join_time(const Tensor& first, const Tensor& next, int64_t frames) {
  return frames == 1 ? ops::copy(first) : ops::concat({first, next}, 2);
}

// Downsample(in, out, add_temporal_downsample).
struct Downsample {
  CausalConv conv;
  int64_t in = 0, out = 0;
  bool temporal = false;
  Tensor operator()(const Tensor& x) const {
    const Tensor h = conv(x);
    if (!temporal) return ops::add(space_to_channels(h, 1), group_mean(space_to_channels(x, 1), out));
    const int64_t T = x.size(2);
    VIDAX_CHECK(T % 2 == 1, "HunyuanVideo 1.5 VAE: a temporal down-sampling of " << T << " frames (1 + 2k)");
    const Tensor hf = space_to_channels(first_frame(h), 1);
    const Tensor h_first = ops::concat({hf, hf}, 1);
    const Tensor x_first = group_mean(space_to_channels(first_frame(x), 1), out);
    if (T == 1) return ops::add(h_first, x_first);
    const Tensor h_next = space_to_channels(next_frames(h), 2);
    const Tensor x_next = group_mean(space_to_channels(next_frames(x), 2), out);
    return ops::add(join_time(h_first, h_next, T), join_time(x_first, x_next, T));
  }
};

// Upsample(in, out, add_temporal_upsample).
struct Upsample {
  CausalConv conv;
  int64_t in = 0, out = 0;
  bool temporal = false;
  Tensor operator()(const Tensor& x) const {
    const Tensor h = conv(x);
    const int64_t repeats = (temporal ? 8 : 4) * out / in;
    if (!temporal) return ops::add(channels_to_space(h, 1), channels_to_space(repeat_channels(x, repeats), 1));
    const int64_t T = x.size(2);
    const Tensor hf = channels_to_space(first_frame(h), 1);
    const Tensor h_first = hf.slice(1, 0, hf.size(1) / 2);
    const Tensor x_first = repeat_channels(channels_to_space(first_frame(x), 1), repeats / 2);
    if (T == 1) return ops::add(h_first, x_first);
    const Tensor h_next = channels_to_space(next_frames(h), 2);
    const Tensor x_next = repeat_channels(channels_to_space(next_frames(x), 2), repeats);
    return ops::add(join_time(h_first, h_next, T), join_time(x_first, x_next, T));
  }
};

struct Mid {
  Resnet block_1, block_2;
  Attention attn_1;
  static Mid load(const Loader& l, const std::string& p, int64_t c) {
    Mid m;
    m.block_1 = Resnet::load(l, p + ".block_1", c, c);
    m.attn_1 = Attention::load(l, p + ".attn_1", c);
    m.block_2 = Resnet::load(l, p + ".block_2", c, c);
    return m;
  }
  Tensor operator()(Tensor h, const std::string& p, const VAETap& tap) const {
    h = block_1(h);
    tap_if(tap, p + ".block_1", h);
    h = attn_1(h);
    tap_if(tap, p + ".attn_1", h);
    h = block_2(h);
    tap_if(tap, p + ".block_2", h);
    return h;
  }
};

}  // namespace

struct HunyuanVideo15VAE::Encoder {
  CausalConv conv_in, conv_out;
  struct Level {
    std::vector<Resnet> blocks;
    std::optional<Downsample> down;
  };
  std::vector<Level> levels;
  Mid mid;
  RmsNorm norm_out;
  int64_t z2 = 0;  // 2 * latent_channels

  Encoder(const VAEConfig& c, const Loader& l) {
    const auto& ch = c.block_out_channels;
    conv_in = CausalConv::load(l, "encoder.conv_in", c.in_channels, ch[0], 3);
    int64_t in = ch[0];
    for (int64_t i = 0; i < c.levels(); ++i) {
      const std::string p = idx("encoder.down", i);
      const int64_t out = ch[static_cast<size_t>(i)];
      Level lv;
      for (int64_t j = 0; j < c.layers_per_block; ++j) {
        lv.blocks.push_back(Resnet::load(l, idx(p + ".block", j), in, out));
        in = out;
      }
      if (c.spatial_down(i)) {
        const int64_t next = c.downsample_match_channel ? ch[static_cast<size_t>(i + 1)] : in;
        const bool t = c.encoder_temporal_down(i);
        lv.down = Downsample{CausalConv::load(l, p + ".downsample.conv", in, next / (t ? 8 : 4), 3), in, next, t};
        in = next;
      }
      levels.push_back(std::move(lv));
    }
    mid = Mid::load(l, "encoder.mid", in);
    norm_out = RmsNorm::load(l, "encoder.norm_out", in);
    z2 = 2 * c.latent_channels;
    conv_out = CausalConv::load(l, "encoder.conv_out", in, z2, 3);
  }

  Tensor forward(Tensor h, const VAETap& tap) const {
    h = conv_in(h);
    tap_if(tap, "encoder.conv_in", h);
    for (size_t i = 0; i < levels.size(); ++i) {
      const std::string p = idx("encoder.down", static_cast<int64_t>(i));
      for (size_t j = 0; j < levels[i].blocks.size(); ++j) {
        h = levels[i].blocks[j](h);
        tap_if(tap, idx(p + ".block", static_cast<int64_t>(j)), h);
      }
      if (levels[i].down) {
        h = (*levels[i].down)(h);
        tap_if(tap, p + ".downsample", h);
      }
    }
    h = mid(h, "encoder.mid", tap);
    // shortcut = rearrange(h, "b (c r) f h w -> b c r f h w").mean(2); h = conv_out(swish(norm_out(h))) + shortcut
    const Tensor shortcut = group_mean(h, z2);
    h = conv_out(norm_out.silu(h));
    tap_if(tap, "encoder.conv_out", h);
    h = ops::add(h, shortcut);
    tap_if(tap, "encoder", h);
    return h;
  }
};

struct HunyuanVideo15VAE::Decoder {
  CausalConv conv_in, conv_out;
  Mid mid;
  struct Level {
    std::vector<Resnet> blocks;
    std::optional<Upsample> up;
  };
  std::vector<Level> levels;
  RmsNorm norm_out;
  int64_t repeats = 1;  // block_out_channels[-1] / latent_channels: the input shortcut's

  Decoder(const VAEConfig& c, const Loader& l) {
    const std::vector<int64_t> ch(c.block_out_channels.rbegin(), c.block_out_channels.rend());
    int64_t in = ch[0];
    repeats = in / c.latent_channels;
    conv_in = CausalConv::load(l, "decoder.conv_in", c.latent_channels, in, 3);
    mid = Mid::load(l, "decoder.mid", in);
    for (int64_t i = 0; i < c.levels(); ++i) {
      const std::string p = idx("decoder.up", i);
      const int64_t out = ch[static_cast<size_t>(i)];
      Level lv;
      for (int64_t j = 0; j < c.layers_per_block + 1; ++j) {
        lv.blocks.push_back(Resnet::load(l, idx(p + ".block", j), in, out));
        in = out;
      }
      const bool t = c.decoder_temporal_up(i);
      if (c.spatial_down(i) || t) {
        const int64_t next = c.upsample_match_channel ? ch[static_cast<size_t>(i + 1)] : in;
        lv.up = Upsample{CausalConv::load(l, p + ".upsample.conv", in, next * (t ? 8 : 4), 3), in, next, t};
        in = next;
      }
      levels.push_back(std::move(lv));
    }
    norm_out = RmsNorm::load(l, "decoder.norm_out", in);
    conv_out = CausalConv::load(l, "decoder.conv_out", in, c.out_channels, 3);
  }

  Tensor forward(const Tensor& z, const VAETap& tap) const {
    Tensor h = conv_in(z);
    tap_if(tap, "decoder.conv_in", h);
    h = ops::add(h, repeat_channels(z, repeats));
    h = mid(h, "decoder.mid", tap);
    for (size_t i = 0; i < levels.size(); ++i) {
      const std::string p = idx("decoder.up", static_cast<int64_t>(i));
      for (size_t j = 0; j < levels[i].blocks.size(); ++j) {
        h = levels[i].blocks[j](h);
        tap_if(tap, idx(p + ".block", static_cast<int64_t>(j)), h);
      }
      if (levels[i].up) {
        h = (*levels[i].up)(h);
        tap_if(tap, p + ".upsample", h);
      }
    }
    h = conv_out(norm_out.silu(h));
    tap_if(tap, "decoder.conv_out", h);
    tap_if(tap, "decoder", h);
    return h;
  }
};

HunyuanVideo15VAE::HunyuanVideo15VAE(const VAEConfig& config, nn::ParamSource& params, VAEParts parts, DType compute)
    : config_(config), compute_(compute) {
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16,
              "HunyuanVideo 1.5 VAE: compute dtype must be F32 or BF16, found " << dtype_name(compute));
  VIDAX_CHECK(parts.encoder || parts.decoder, "HunyuanVideo 1.5 VAE: neither the encoder nor the decoder is selected");
  const Loader l{params, compute};
  if (parts.encoder) encoder_ = std::make_unique<Encoder>(config_, l);
  if (parts.decoder) decoder_ = std::make_unique<Decoder>(config_, l);
}

HunyuanVideo15VAE::~HunyuanVideo15VAE() = default;
HunyuanVideo15VAE::HunyuanVideo15VAE(HunyuanVideo15VAE&&) noexcept = default;
HunyuanVideo15VAE& HunyuanVideo15VAE::operator=(HunyuanVideo15VAE&&) noexcept = default;

std::vector<std::pair<std::string, Shape>> HunyuanVideo15VAE::parameter_shapes(const VAEConfig& config, VAEParts parts) {
  return hunyuan::vae_blocks::recorded_shapes(
      [&](nn::ParamSource& src) { HunyuanVideo15VAE probe(config, src, parts, DType::F32); });
}

void HunyuanVideo15VAE::check_video(const Shape& s) const {
  hunyuan::vae_blocks::check_video("HunyuanVideo 1.5 VAE", s, config_.in_channels, config_.ffactor_temporal,
                                   config_.ffactor_spatial);
}

void HunyuanVideo15VAE::check_latent(const Shape& s) const {
  hunyuan::vae_blocks::check_latent("HunyuanVideo 1.5 VAE", s, config_.latent_channels);
}

Tensor HunyuanVideo15VAE::run_encoder(const Tensor& video, const VAETap& tap) const {
  VIDAX_CHECK(encoder_, "HunyuanVideo 1.5 VAE: the encoder was not loaded");
  return encoder_->forward(video.dtype() == compute_ ? video : ops::cast(video, compute_), tap);
}

Tensor HunyuanVideo15VAE::run_decoder(const Tensor& latent, const VAETap& tap) const {
  VIDAX_CHECK(decoder_, "HunyuanVideo 1.5 VAE: the decoder was not loaded");
  return decoder_->forward(latent.dtype() == compute_ ? latent : ops::cast(latent, compute_), tap);
}

Tensor HunyuanVideo15VAE::encode_moments(const Tensor& video, const VAETap& tap) const {
  VIDAX_CHECK(encoder_, "HunyuanVideo 1.5 VAE: the encoder was not loaded");
  check_video(video.shape());
  return run_encoder(video, tap);
}

Tensor HunyuanVideo15VAE::decode(const Tensor& latent, const VAETap& tap) const {
  VIDAX_CHECK(decoder_, "HunyuanVideo 1.5 VAE: the decoder was not loaded");
  check_latent(latent.shape());
  return run_decoder(latent, tap);
}

// ---- tiling (spatial_tiled_encode / spatial_tiled_decode)

namespace {

struct Tiles {
  int64_t sample, latent;  // tile_sample_min_size, tile_latent_min_size
  double overlap;
};

Tiles tiles_of(const VAEConfig& c, const VAETiling& t) {
  const int64_t sample = t.sample_size > 0 ? t.sample_size : c.sample_size;
  VIDAX_CHECK(t.overlap > 0 && t.overlap < 1,
              "HunyuanVideo 1.5 VAE tiling: tile_overlap_factor " << t.overlap << " must be in (0, 1)");
  const int64_t latent = sample / c.ffactor_spatial;
  VIDAX_CHECK(latent >= 1, "HunyuanVideo 1.5 VAE tiling: a tile of " << sample << " pixels is smaller than "
                                                                     << c.ffactor_spatial << " (one latent pixel)");
  const double blend = static_cast<double>(latent) * t.overlap;
  // set_tile_sample_min_size asserts it.
  VIDAX_CHECK(std::floor(blend) == blend, "HunyuanVideo 1.5 VAE tiling: tile_latent_min_size "
                                              << latent << " * tile_overlap_factor " << t.overlap
                                              << " must be a whole number (sample_size " << sample << ")");
  return {sample, latent, t.overlap};
}

int64_t trunc(double v) { return static_cast<int64_t>(v); }

// The reference's truncations can make tiles that do not add up to the untiled size; it would
// return a clip of another size: an error here.
Tensor check_tiled(const Tensor& got, const Shape& want, const Tiles& t) {
  VIDAX_CHECK(got.shape() == want, "HunyuanVideo 1.5 VAE tiling: tiles of " << t.sample << " pixels with overlap "
                                                                           << t.overlap << " make "
                                                                           << shape_str(got.shape()) << ", not "
                                                                           << shape_str(want)
                                                                           << " (use larger tiles)");
  return got;
}

}  // namespace

Tensor HunyuanVideo15VAE::encode_moments_tiled(const Tensor& video, const VAETiling& tiling) const {
  VIDAX_CHECK(encoder_, "HunyuanVideo 1.5 VAE: the encoder was not loaded");
  check_video(video.shape());
  if (!tiling.spatial) return run_encoder(video, {});
  const Tiles t = tiles_of(config_, tiling);
  if (video.size(4) <= t.sample && video.size(3) <= t.sample) return run_encoder(video, {});
  const int64_t sf = config_.ffactor_spatial;
  const Shape want{video.size(0), 2 * config_.latent_channels, 1 + (video.size(2) - 1) / config_.ffactor_temporal,
                   video.size(3) / sf, video.size(4) / sf};
  const int64_t extent = trunc(static_cast<double>(t.latent) * t.overlap);
  return check_tiled(hunyuan::vae_blocks::spatial_tiles(
                         video, t.sample, trunc(static_cast<double>(t.sample) * (1 - t.overlap)), extent,
                         t.latent - extent, [&](const Tensor& tile) { return run_encoder(tile, {}); }),
                     want, t);
}

Tensor HunyuanVideo15VAE::decode_tiled(const Tensor& z, const VAETiling& tiling) const {
  VIDAX_CHECK(decoder_, "HunyuanVideo 1.5 VAE: the decoder was not loaded");
  check_latent(z.shape());
  if (!tiling.spatial) return run_decoder(z, {});
  const Tiles t = tiles_of(config_, tiling);
  if (z.size(4) <= t.latent && z.size(3) <= t.latent) return run_decoder(z, {});
  const int64_t sf = config_.ffactor_spatial;
  const Shape want{z.size(0), config_.out_channels, 1 + config_.ffactor_temporal * (z.size(2) - 1), z.size(3) * sf,
                   z.size(4) * sf};
  const int64_t extent = trunc(static_cast<double>(t.sample) * t.overlap);
  return check_tiled(hunyuan::vae_blocks::spatial_tiles(
                         z, t.latent, trunc(static_cast<double>(t.latent) * (1 - t.overlap)), extent,
                         t.sample - extent, [&](const Tensor& tile) { return run_decoder(tile, {}); }),
                     want, t);
}

// ---- the pipeline's scaling

Tensor HunyuanVideo15VAE::encode_scaled(const Tensor& video, const VAETiling& tiling) const {
  // cond_latents = vae.encode(x).latent_dist.mode(); cond_latents.mul_(scaling_factor)
  return ops::scale(posterior_of(encode_moments_tiled(video, tiling)).mean, config_.scaling_factor);
}

Tensor HunyuanVideo15VAE::decode_scaled(const Tensor& z, const VAETiling& tiling) const {
  check_latent(z.shape());
  // latents / scaling_factor (+ shift_factor when it is set and non-zero): a division, as the pipeline's.
  Tensor latent = ops::div(z, Tensor::full({1}, config_.scaling_factor, z.dtype()));
  if (config_.shift_factor && *config_.shift_factor != 0) latent = ops::add_scalar(latent, *config_.shift_factor);
  Tensor video = ops::clamp(ops::add_scalar(ops::scale(decode_tiled(latent, tiling), 0.5), 0.5), 0.0, 1.0);
  return video.dtype() == DType::F32 ? video : ops::cast(video, DType::F32);  // the pipeline's .float()
}

}  // namespace vidax::hunyuan15
