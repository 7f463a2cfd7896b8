// Wan 2.1 VAE, read top to bottom like wan/modules/vae.py: primitives (CausalConv3d with its
// feature cache, RMS_norm), blocks (ResidualBlock, AttentionBlock, Resample), Encoder3d, Decoder3d,
// then WanVAE_'s chunked encode/decode and the wrapper's latent normalization.
#include "models/wan/vae.h"

#include <map>

#include "backend/ops.h"
#include "core/host_memory.h"
#include "models/wan/checkpoint_keys.h"
#include "models/wan/vae_blocks.h"

namespace vidax::wan {

// ============================================================================ config

namespace {
WanVAEConfig parse_config(const nlohmann::json& j) {
  // The model-defining fields, as the one config parser (models/wan/checkpoint_keys.h) reads them
  // in either spelling; this adds what the engine checks on top.
  const translate::wan::VaeConfig m = translate::wan::VaeConfig::from_json(j);
  WanVAEConfig c;
  c.dim = m.dim;
  c.z_dim = m.z_dim;
  c.dim_mult = m.dim_mult;
  c.num_res_blocks = m.num_res_blocks;
  c.attn_scales = m.attn_scales;
  c.temperal_downsample = m.temperal_downsample;
  if (j.contains("base_dim")) {
    // diffusers AutoencoderKLWan: only the Wan 2.1 architecture is this class.
    if (j.contains("decoder_base_dim") && !j.at("decoder_base_dim").is_null())
      VIDAX_CHECK(j.at("decoder_base_dim").get<int64_t>() == c.dim,
                  "Wan VAE config: decoder_base_dim " << j.at("decoder_base_dim") << " != base_dim " << c.dim
                                                      << " is not the Wan 2.1 VAE");
    VIDAX_CHECK(!j.value("is_residual", false),
                "Wan VAE config: is_residual=true is the Wan 2.2 VAE, not supported by the Wan 2.1 VAE");
    VIDAX_CHECK(!j.contains("patch_size") || j.at("patch_size").is_null(),
                "Wan VAE config: patch_size " << j.at("patch_size") << " (Wan 2.2 VAE) is not supported");
    VIDAX_CHECK(j.value("in_channels", 3) == 3 && j.value("out_channels", 3) == 3,
                "Wan VAE config: in_channels/out_channels must be 3");
  }
  // dropout is the identity at inference, whatever its value.

  VIDAX_CHECK(c.dim > 0 && c.z_dim > 0 && c.num_res_blocks > 0,
              "Wan VAE config: dim, z_dim, num_res_blocks must be positive: " << j.dump());
  VIDAX_CHECK(c.dim_mult.size() >= 2 && c.dim_mult.size() <= 4,
              "Wan VAE config: dim_mult needs 2..4 levels (the reference halves the decoder's input "
              "channels at levels 1..3), found " << c.dim_mult.size());
  VIDAX_CHECK(c.temperal_downsample.size() + 1 == c.dim_mult.size(),
              "Wan VAE config: temperal_downsample needs len(dim_mult) - 1 = " << c.dim_mult.size() - 1
                                                                              << " entries, found "
                                                                              << c.temperal_downsample.size());
  // The reference's cached path calls attention blocks with the cache arguments and fails; the
  // published models have none.
  VIDAX_CHECK(c.attn_scales.empty(), "Wan VAE config: attn_scales must be empty (found "
                                         << j.at("attn_scales").dump() << ")");
  return c;
}
}  // namespace

WanVAEConfig WanVAEConfig::from_json(const nlohmann::json& j) {
  VIDAX_CHECK(j.is_object(), "Wan VAE config: expected a JSON object, found " << j.dump());
  try {
    return parse_config(j);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    throw Error(msg() << "Wan VAE config: " << e.what() << " in " << j.dump());
  }
}

nlohmann::json WanVAEConfig::to_json() const {
  return {{"dim", dim},
          {"z_dim", z_dim},
          {"dim_mult", dim_mult},
          {"num_res_blocks", num_res_blocks},
          {"attn_scales", attn_scales},
          {"temperal_downsample", temperal_downsample},
          {"dropout", 0.0}};
}

int64_t WanVAEConfig::temporal_factor() const {
  int64_t f = 1;
  for (bool t : temperal_downsample) f *= t ? 2 : 1;
  return f;
}

int64_t WanVAEConfig::spatial_factor() const { return int64_t{1} << (dim_mult.size() - 1); }

LatentScale LatentScale::wan21() {
  // wan/modules/vae.py, class WanVAE.
  return {{-0.7571f, -0.7089f, -0.9113f, 0.1075f, -0.1745f, 0.9653f, -0.1517f, 1.5508f, 0.4134f, -0.0715f,
           0.5517f, -0.3632f, -0.1922f, -0.9497f, 0.2503f, -0.2921f},
          {2.8184f, 1.4541f, 2.3275f, 2.6558f, 1.2196f, 1.7708f, 2.6052f, 2.0743f, 3.2687f, 2.1526f, 2.8652f,
           1.5579f, 1.6382f, 1.1253f, 2.8251f, 1.9160f}};
}

LatentScale LatentScale::from_tensors(const Tensor& mean, const Tensor& std) {
  VIDAX_CHECK(mean.dim() == 1 && std.shape() == mean.shape(),
              "Wan VAE latent scale: mean and std must be vectors of one length, found "
                  << shape_str(mean.shape()) << " and " << shape_str(std.shape()));
  return {mean.to_f32_vector(), std.to_f32_vector()};
}

using namespace vae_blocks;  // the shared blocks (vae_blocks.h)

// ============================================================================ Encoder3d

struct WanVAE::Encoder {
  CausalConv3d conv1;
  size_t conv1_slot = 0;
  std::vector<Block> downsamples;
  Middle middle;
  Head head;
  size_t num_slots = 0;

  Encoder(ParamReader& p, const WanVAEConfig& c) {
    size_t slot = 0;
    std::vector<int64_t> dims{c.dim};
    for (int64_t m : c.dim_mult) dims.push_back(c.dim * m);
    conv1 = CausalConv3d::load(p, "encoder.conv1", 3, dims[0], {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
    conv1_slot = slot++;
    const size_t levels = c.dim_mult.size();
    int64_t out_dim = dims[0];
    for (size_t i = 0; i < levels; ++i) {
      int64_t in_dim = dims[i];
      out_dim = dims[i + 1];
      for (int64_t r = 0; r < c.num_res_blocks; ++r) {
        downsamples.emplace_back(ResidualBlock::load(p, name(downsamples.size()), in_dim, out_dim, slot));
        in_dim = out_dim;
      }
      if (i + 1 != levels) {
        auto mode = c.temperal_downsample[i] ? Resample::Mode::Downsample3d : Resample::Mode::Downsample2d;
        downsamples.emplace_back(Resample::load(p, name(downsamples.size()), out_dim, mode, slot));
      }
    }
    middle = Middle::load(p, "encoder.middle", out_dim, slot);
    head = Head::load(p, "encoder.head", out_dim, 2 * c.z_dim, slot);
    num_slots = slot;
  }

  static std::string name(size_t i) { return "encoder.downsamples." + std::to_string(i); }

  Frames forward(Frames chunk, FeatCache& cache, const Tap& tap) const {
    Frames x = cached_conv(conv1, cache, conv1_slot, static_cast<int64_t>(chunk.size()),
                           [&](int64_t i) { return std::move(chunk[static_cast<size_t>(i)]); });
    tap_if(tap, "encoder.conv1", x);
    for (size_t i = 0; i < downsamples.size(); ++i) {
      x = run_block(downsamples[i], std::move(x), cache);
      tap_if(tap, name(i), x);
    }
    x = middle.forward(std::move(x), cache, "encoder.middle", tap);
    x = head.forward(std::move(x), cache);
    tap_if(tap, "encoder.head.2", x);
    return x;
  }
};

// ============================================================================ Decoder3d

struct WanVAE::Decoder {
  CausalConv3d conv1;
  size_t conv1_slot = 0;
  Middle middle;
  std::vector<Block> upsamples;
  Head head;
  size_t num_slots = 0;

  Decoder(ParamReader& p, const WanVAEConfig& c) {
    size_t slot = 0;
    // dims = dim * [dim_mult[-1]] + reversed(dim_mult); temporal upsampling = reversed downsampling.
    std::vector<int64_t> dims{c.dim * c.dim_mult.back()};
    for (auto it = c.dim_mult.rbegin(); it != c.dim_mult.rend(); ++it) dims.push_back(c.dim * *it);
    std::vector<bool> temperal_upsample(c.temperal_downsample.rbegin(), c.temperal_downsample.rend());
    conv1 = CausalConv3d::load(p, "decoder.conv1", c.z_dim, dims[0], {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
    conv1_slot = slot++;
    middle = Middle::load(p, "decoder.middle", dims[0], slot);
    const size_t levels = c.dim_mult.size();
    int64_t out_dim = dims[0];
    for (size_t i = 0; i < levels; ++i) {
      // Every level after the first starts from the previous Resample's C/2 output channels.
      int64_t in_dim = i > 0 ? dims[i] / 2 : dims[i];
      out_dim = dims[i + 1];
      for (int64_t r = 0; r < c.num_res_blocks + 1; ++r) {
        upsamples.emplace_back(ResidualBlock::load(p, name(upsamples.size()), in_dim, out_dim, slot));
        in_dim = out_dim;
      }
      if (i + 1 != levels) {
        auto mode = temperal_upsample[i] ? Resample::Mode::Upsample3d : Resample::Mode::Upsample2d;
        upsamples.emplace_back(Resample::load(p, name(upsamples.size()), out_dim, mode, slot));
      }
    }
    head = Head::load(p, "decoder.head", out_dim, 3, slot);
    num_slots = slot;
  }

  static std::string name(size_t i) { return "decoder.upsamples." + std::to_string(i); }

  Frames forward(Frames chunk, FeatCache& cache, const Tap& tap) const {
    Frames x = cached_conv(conv1, cache, conv1_slot, static_cast<int64_t>(chunk.size()),
                           [&](int64_t i) { return std::move(chunk[static_cast<size_t>(i)]); });
    tap_if(tap, "decoder.conv1", x);
    x = middle.forward(std::move(x), cache, "decoder.middle", tap);
    for (size_t i = 0; i < upsamples.size(); ++i) {
      x = run_block(upsamples[i], std::move(x), cache);
      tap_if(tap, name(i), x);
      if (std::holds_alternative<Resample>(upsamples[i])) release_free_heap();
    }
    x = head.forward(std::move(x), cache);
    tap_if(tap, "decoder.head.2", x);
    return x;
  }
};

// ============================================================================ WanVAE_

WanVAE::WanVAE(const WanVAEConfig& config, const WeightLookup& weights, Parts parts, DType compute)
    : config_(config), compute_(compute) {
  VIDAX_CHECK(parts.encoder || parts.decoder, "Wan VAE: build at least the encoder or the decoder");
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16 || compute == DType::F16,
              "Wan VAE: compute dtype must be a float type, found " << dtype_name(compute));
  ParamReader p(weights, compute, names_);
  if (parts.encoder) {
    encoder_ = std::make_unique<Encoder>(p, config_);
    auto c = CausalConv3d::load(p, "conv1", 2 * config_.z_dim, 2 * config_.z_dim, {1, 1, 1});
    conv1_w_ = c.weight;
    conv1_b_ = c.bias;
  }
  if (parts.decoder) {
    decoder_ = std::make_unique<Decoder>(p, config_);
    auto c = CausalConv3d::load(p, "conv2", config_.z_dim, config_.z_dim, {1, 1, 1});
    conv2_w_ = c.weight;
    conv2_b_ = c.bias;
  }
}

WanVAE::~WanVAE() = default;
WanVAE::WanVAE(WanVAE&&) noexcept = default;
WanVAE& WanVAE::operator=(WanVAE&&) noexcept = default;

Tensor WanVAE::encode(const Tensor& video_in, const Tap& tap) const {
  VIDAX_CHECK(encoder_, "Wan VAE: encode called on an instance built without the encoder");
  const host_memory::ScopedLimit no_block_cache(0);  // as in decode()
  VIDAX_CHECK(video_in.dim() == 5 && video_in.size(1) == 3,
              "Wan VAE encode: expected a video [B, 3, F, H, W], found " << video_in.str());
  const int64_t frames = video_in.size(2);
  // The reference encodes chunks of 1, 4, 4, ... frames and silently drops any remainder.
  VIDAX_CHECK(frames >= 1 && (frames - 1) % 4 == 0,
              "Wan VAE encode: the frame count must be 4k+1 (1, 5, 9, ...), found " << frames);
  Tensor video = video_in.dtype() == compute_ ? video_in : ops::cast(video_in, compute_);

  Tensor out = join_frames(encode_chunks(video, encoder_->num_slots, [&](Frames chunk, FeatCache& cache, int64_t) {
    return encoder_->forward(std::move(chunk), cache, tap);
  }));
  Tensor h = ops::conv3d(out, conv1_w_, conv1_b_, {1, 1, 1}, {0, 0, 0});  // conv1
  if (tap) tap("conv1", h);
  return ops::copy(h.slice(1, 0, config_.z_dim));  // mu; log_var = the other half, unused
}

Tensor WanVAE::decode(const Tensor& mu_in, const Tap& tap) const {
  VIDAX_CHECK(decoder_, "Wan VAE: decode called on an instance built without the decoder");
  // The frames are freed and re-made per chunk at many sizes; cached blocks would add to the
  // decode's peak memory (issue 5 budget: <= 3 GB at 832x480x5), so the block cache is emptied
  // (the DiT's activations go back to the system) and kept off while the VAE runs.
  const host_memory::ScopedLimit no_block_cache(0);
  VIDAX_CHECK(mu_in.dim() == 5 && mu_in.size(1) == config_.z_dim,
              "Wan VAE decode: expected a latent [B, " << config_.z_dim << ", F, H, W], found " << mu_in.str());
  Tensor mu = mu_in.dtype() == compute_ ? mu_in : ops::cast(mu_in, compute_);
  Tensor x = ops::conv3d(mu, conv2_w_, conv2_b_, {1, 1, 1}, {0, 0, 0});  // conv2, all frames
  if (tap) tap("conv2", x);
  // One latent frame per chunk, as the reference.
  return join_frames(decode_chunks(x, decoder_->num_slots, [&](Frames chunk, FeatCache& cache, int64_t) {
    return decoder_->forward(std::move(chunk), cache, tap);
  }));
}

namespace {
// mean and 1/std as [1, z, 1, 1, 1] tensors; 1/std is rounded to fp32 like torch's `1.0 / std`.
std::pair<Tensor, Tensor> scale_tensors(const LatentScale& s, int64_t z_dim, DType dtype) {
  VIDAX_CHECK(static_cast<int64_t>(s.mean.size()) == z_dim && s.std.size() == s.mean.size(),
              "Wan VAE latent scale: " << s.mean.size() << " means / " << s.std.size()
                                       << " stds for z_dim " << z_dim);
  std::vector<float> inv(s.std.size());
  for (size_t i = 0; i < inv.size(); ++i) inv[i] = 1.0f / s.std[i];
  return {Tensor::from_f32(s.mean, {1, z_dim, 1, 1, 1}, dtype), Tensor::from_f32(inv, {1, z_dim, 1, 1, 1}, dtype)};
}
}  // namespace

Tensor normalize_latent(const Tensor& mu, const LatentScale& scale) {
  auto [mean, inv_std] = scale_tensors(scale, mu.size(1), mu.dtype());
  return ops::mul(ops::sub(mu, mean), inv_std);  // (mu - mean) * (1/std)
}

Tensor denormalize_latent(const Tensor& z, const LatentScale& scale) {
  auto [mean, inv_std] = scale_tensors(scale, z.size(1), z.dtype());
  return ops::add(ops::div(z, inv_std), mean);  // z / (1/std) + mean
}

Tensor WanVAE::encode_normalized(const Tensor& video, const LatentScale& scale, const Tap& tap) const {
  Tensor z = normalize_latent(encode(video, tap), scale);
  return z.dtype() == DType::F32 ? z : ops::cast(z, DType::F32);  // the wrapper's .float()
}

Tensor WanVAE::decode_normalized(const Tensor& z, const LatentScale& scale, const Tap& tap) const {
  Tensor zc = z.dtype() == compute_ ? z : ops::cast(z, compute_);
  Tensor video = decode(denormalize_latent(zc, scale), tap);
  if (video.dtype() != DType::F32) video = ops::cast(video, DType::F32);  // .float()
  return ops::clamp(video, -1.0, 1.0);                                     // .clamp_(-1, 1)
}

// ---- tiled decode (diffusers AutoencoderKLWan.tiled_decode) ------------------------------

VaeTiling VaeTiling::for_tile(int64_t pixels) {
  VIDAX_CHECK(pixels >= 64 && pixels % 32 == 0,
              "--vae-tile " << pixels << ": the tile must be a multiple of 32 pixels, at least 64 (e.g. 256, "
                            "diffusers' default)");
  return VaeTiling{pixels, pixels / 4 * 3};
}

namespace {

// b with its first rows (dim 3) or columns (dim 4) blended from a's last ones:
// b[y] = a[-e + y] * (1 - y / e) + b[y] * (y / e), e = min(a's, b's size, extent).
Tensor blend(const Tensor& a, const Tensor& b, int64_t extent, int64_t dim) {
  const int64_t e = std::min({a.size(dim), b.size(dim), extent});
  if (e <= 0) return b;
  std::vector<float> wb(static_cast<size_t>(e)), wa(static_cast<size_t>(e));
  for (int64_t y = 0; y < e; ++y) {
    wb[static_cast<size_t>(y)] = static_cast<float>(static_cast<double>(y) / static_cast<double>(e));
    wa[static_cast<size_t>(y)] = static_cast<float>(1.0 - static_cast<double>(y) / static_cast<double>(e));
  }
  Shape ws(5, 1);
  ws[static_cast<size_t>(dim)] = e;
  const Tensor tb = Tensor::from_f32(wb, ws, b.dtype()), ta = Tensor::from_f32(wa, ws, b.dtype());
  const Tensor head = ops::add(ops::mul(ops::copy(a.slice(dim, a.size(dim) - e, a.size(dim))), ta),
                               ops::mul(ops::copy(b.slice(dim, 0, e)), tb));
  if (e == b.size(dim)) return head;
  return ops::concat({head, ops::copy(b.slice(dim, e, b.size(dim)))}, dim);
}

}  // namespace

int64_t WanVAE::tile_count(int64_t latent_h, int64_t latent_w, const VaeTiling* tiling) const {
  const int64_t sf = config_.spatial_factor();
  if (!tiling || (latent_h * sf <= tiling->tile && latent_w * sf <= tiling->tile)) return 1;
  const int64_t step = tiling->stride / sf;
  return ((latent_h + step - 1) / step) * ((latent_w + step - 1) / step);
}

Tensor WanVAE::decode_tiled(const Tensor& mu, const VaeTiling& t, const Tap& tap) const {
  VIDAX_CHECK(mu.dim() == 5 && mu.size(1) == config_.z_dim,
              "Wan VAE decode: expected a latent [B, " << config_.z_dim << ", F, H, W], found " << mu.str());
  const int64_t sf = config_.spatial_factor(), h = mu.size(3), w = mu.size(4);
  // diffusers tiles only when the latent is larger than one tile.
  if (tile_count(h, w, &t) == 1) return decode(mu, tap);
  const int64_t tl = t.tile / sf, step = t.stride / sf, blend_px = t.overlap();
  std::vector<Tensor> prev_row, out_rows;
  for (int64_t i = 0; i < h; i += step) {
    std::vector<Tensor> row, cropped;
    for (int64_t j = 0; j < w; j += step) {
      const Tensor part = ops::copy(mu.slice(3, i, std::min(h, i + tl)).slice(4, j, std::min(w, j + tl)));
      Tensor tile = decode(part, tap);
      if (!prev_row.empty()) tile = blend(prev_row[row.size()], tile, blend_px, 3);
      if (!row.empty()) tile = blend(row.back(), tile, blend_px, 4);
      cropped.push_back(ops::copy(tile.slice(3, 0, std::min(t.stride, tile.size(3)))
                                      .slice(4, 0, std::min(t.stride, tile.size(4)))));
      row.push_back(std::move(tile));
    }
    out_rows.push_back(ops::concat(cropped, 4));
    prev_row = std::move(row);  // row i + 1 blends with these (already blended) tiles
  }
  const Tensor video = ops::concat(out_rows, 3);
  return ops::copy(video.slice(3, 0, h * sf).slice(4, 0, w * sf));
}

Tensor WanVAE::decode_normalized(const Tensor& z, const LatentScale& scale, const VaeTiling* tiling,
                                 const Tap& tap) const {
  if (!tiling) return decode_normalized(z, scale, tap);
  Tensor zc = z.dtype() == compute_ ? z : ops::cast(z, compute_);
  Tensor video = decode_tiled(denormalize_latent(zc, scale), *tiling, tap);
  if (video.dtype() != DType::F32) video = ops::cast(video, DType::F32);
  return ops::clamp(video, -1.0, 1.0);
}

}  // namespace vidax::wan
