// HunyuanVAE's tiled encode and decode: AutoencoderKLCausal3D.spatial_tiled_encode / _decode and
// temporal_tiled_encode / _decode (hyvideo/vae/autoencoder_kl_causal_3d.py), with its tile sizes
// (the config's sample_size and sample_tsize), its integer truncations and its blending order; the
// spatial tiles and the blend are vae_blocks.h's (shared with the 1.5 VAE).
#include <algorithm>
#include <vector>

#include "backend/ops.h"
#include "core/error.h"
#include "models/hunyuan/vae.h"
#include "models/hunyuan/vae_blocks.h"

namespace vidax::hunyuan {

namespace {

constexpr double kOverlap = VAETiling::kOverlap;

using vae_blocks::blend;
using vae_blocks::crop;
using vae_blocks::join;
using vae_blocks::spatial_tiles;

// Tiles of tile + 1 input frames stepping by `step`; every tile but the first drops its first
// output frame; blended over `extent` output frames with the previous tile, cropped to `limit`
// (the first tile to limit + 1).
template <class Run>
Tensor temporal_tiles(const Tensor& x, int64_t tile, int64_t step, int64_t extent, int64_t limit, const Run& run) {
  VIDAX_CHECK(step >= 1, "HunyuanVideo VAE tiling: a temporal tile of " << tile << " steps by " << step
                                                                        << " (sample_tsize too small)");
  const int64_t T = x.size(2);
  std::vector<Tensor> row;
  for (int64_t i = 0; i < T; i += step) {
    Tensor t = run(ops::copy(x.slice(2, i, std::min(i + tile + 1, T))));
    row.push_back(i > 0 ? t.slice(2, 1, t.size(2)) : t);
  }
  std::vector<Tensor> out;
  for (size_t i = 0; i < row.size(); ++i) {
    if (i == 0) {
      out.push_back(crop(row[0], 2, limit + 1));
      continue;
    }
    row[i] = blend(row[i - 1], row[i], extent, 2);
    out.push_back(crop(row[i], 2, limit));
  }
  return join(out, 2);
}

}  // namespace

// The reference's tile sizes: tile_sample_min_size = sample_size, tile_latent_min_size =
// int(sample_size / 2^(levels - 1)); tile_sample_min_tsize = sample_tsize, tile_latent_min_tsize =
// sample_tsize // time_compression_ratio.
namespace {
struct Tiles {
  int64_t sample, latent, sample_t, latent_t;
};
Tiles tiles_of(const VAEConfig& c) {
  return {c.sample_size,
          static_cast<int64_t>(static_cast<double>(c.sample_size) / static_cast<double>(int64_t{1} << (c.levels() - 1))),
          c.sample_tsize, c.sample_tsize / c.time_compression_ratio};
}
int64_t trunc(double v) { return static_cast<int64_t>(v); }
}  // namespace

Tensor HunyuanVAE::spatial_tiled_encode(const Tensor& x) const {
  const Tiles t = tiles_of(config_);
  const int64_t extent = trunc(static_cast<double>(t.latent) * kOverlap);
  return spatial_tiles(x, t.sample, trunc(static_cast<double>(t.sample) * (1 - kOverlap)), extent, t.latent - extent,
                       [&](const Tensor& tile) { return run_encoder(tile, {}); });
}

Tensor HunyuanVAE::temporal_tiled_encode(const Tensor& x, bool spatial) const {
  const Tiles t = tiles_of(config_);
  const int64_t extent = trunc(static_cast<double>(t.latent_t) * kOverlap);
  return temporal_tiles(x, t.sample_t, trunc(static_cast<double>(t.sample_t) * (1 - kOverlap)), extent,
                        t.latent_t - extent, [&](const Tensor& tile) {
                          if (spatial && (tile.size(4) > t.sample || tile.size(3) > t.sample))
                            return spatial_tiled_encode(tile);
                          return run_encoder(tile, {});
                        });
}

Tensor HunyuanVAE::spatial_tiled_decode(const Tensor& z) const {
  const Tiles t = tiles_of(config_);
  const int64_t extent = trunc(static_cast<double>(t.sample) * kOverlap);
  return spatial_tiles(z, t.latent, trunc(static_cast<double>(t.latent) * (1 - kOverlap)), extent, t.sample - extent,
                       [&](const Tensor& tile) { return run_decoder(tile, {}); });
}

Tensor HunyuanVAE::temporal_tiled_decode(const Tensor& z, bool spatial) const {
  const Tiles t = tiles_of(config_);
  const int64_t extent = trunc(static_cast<double>(t.sample_t) * kOverlap);
  return temporal_tiles(z, t.latent_t, trunc(static_cast<double>(t.latent_t) * (1 - kOverlap)), extent,
                        t.sample_t - extent, [&](const Tensor& tile) {
                          if (spatial && (tile.size(4) > t.latent || tile.size(3) > t.latent))
                            return spatial_tiled_decode(tile);
                          return run_decoder(tile, {});
                        });
}

namespace {

// The reference's truncations can make tiles that do not add up to the untiled size (a latent tile
// of 2 steps by int(1.5) = 1 but is cropped to 3/4 of its pixels): it would return a clip of
// another size; this is an error instead.
Tensor check_tiled(const Tensor& got, const Shape& want, const VAEConfig& c) {
  VIDAX_CHECK(got.shape() == want, "HunyuanVideo VAE tiling: tiles of sample_size " << c.sample_size << " / sample_tsize "
                                                                               << c.sample_tsize << " make "
                                                                               << shape_str(got.shape()) << ", not "
                                                                               << shape_str(want)
                                                                               << " (the reference's tile steps are "
                                                                                  "truncated: use larger tiles)");
  return got;
}

}  // namespace

Tensor HunyuanVAE::encode_moments_tiled(const Tensor& video, const VAETiling& tiling) const {
  VIDAX_CHECK(encoder_, "HunyuanVideo VAE: the encoder was not loaded");
  check_video(video.shape());
  const Tiles t = tiles_of(config_);
  const int64_t tf = config_.temporal_factor(), sf = config_.spatial_factor();
  const Shape want{video.size(0), 2 * config_.latent_channels, 1 + (video.size(2) - 1) / tf, video.size(3) / sf,
                   video.size(4) / sf};
  if (tiling.temporal && video.size(2) > t.sample_t)
    return check_tiled(temporal_tiled_encode(video, tiling.spatial), want, config_);
  if (tiling.spatial && (video.size(4) > t.sample || video.size(3) > t.sample))
    return check_tiled(spatial_tiled_encode(video), want, config_);
  return run_encoder(video, {});
}

Tensor HunyuanVAE::encode_scaled_tiled(const Tensor& video, const VAETiling& tiling) const {
  return mode_scaled(encode_moments_tiled(video, tiling));
}

Tensor HunyuanVAE::decode_tiled(const Tensor& z, const VAETiling& tiling) const {
  VIDAX_CHECK(decoder_, "HunyuanVideo VAE: the decoder was not loaded");
  check_latent(z.shape());
  const Tiles t = tiles_of(config_);
  const int64_t tf = config_.temporal_factor(), sf = config_.spatial_factor();
  const Shape want{z.size(0), config_.out_channels, 1 + tf * (z.size(2) - 1), z.size(3) * sf, z.size(4) * sf};
  if (tiling.temporal && z.size(2) > t.latent_t) return check_tiled(temporal_tiled_decode(z, tiling.spatial), want, config_);
  if (tiling.spatial && (z.size(4) > t.latent || z.size(3) > t.latent))
    return check_tiled(spatial_tiled_decode(z), want, config_);
  return run_decoder(z, {});
}

Tensor HunyuanVAE::decode_scaled_tiled(const Tensor& z, const VAETiling& tiling) const {
  check_latent(z.shape());
  return to_unit_range(decode_tiled(ops::div(z, Tensor::full({1}, config_.scaling_factor, z.dtype())), tiling));
}

}  // namespace vidax::hunyuan
