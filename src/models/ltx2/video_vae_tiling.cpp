// ConvVideoDecoder.tiled_decode (conv_video_decoder.py) with a TileSizeConfig and the tile
// geometry it uses (ltx_core/tiling.py, video_vae.py's map_spatial_slice / map_temporal_slice).
#include "models/ltx2/video_vae_tiling.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <tuple>
#include <utility>

#include "backend/ops.h"
#include "core/error.h"
#include "models/ltx2/video_vae.h"
#include "sched/schedule.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

namespace vae {

std::vector<Interval> split_by_size(int64_t n, int64_t size, int64_t overlap) {
  VIDAX_CHECK(
      size > 0 && overlap >= 0 && overlap < size,
      "LTX-2 video VAE tiling: a split needs 0 <= overlap < size, found overlap " << overlap << ", size " << size);
  if (n <= size) return {{0, n, 0, 0}};
  const int64_t step = size - overlap, amount = (n + size - 2 * overlap - 1) / step;
  std::vector<Interval> out{{0, size, 0, overlap}};
  for (int64_t i = 1; i < amount - 1; ++i) out.push_back({i * step, i * step + size, overlap, overlap});
  out.push_back({(amount - 1) * step, n, overlap, 0});
  return out;
}

std::vector<Interval> split_temporal_causal(int64_t n, int64_t size, int64_t overlap) {
  std::vector<Interval> out = split_by_size(n, size, overlap);
  for (size_t i = 1; i < out.size(); ++i) {
    out[i].start -= 1;
    out[i].left_ramp += 1;
  }
  return out;
}

std::vector<float> trapezoid_mask(int64_t length, int64_t ramp_left, int64_t ramp_right, bool left_starts_from_0) {
  VIDAX_CHECK(length > 0, "LTX-2 video VAE tiling: a mask of length " << length);
  ramp_left = std::clamp<int64_t>(ramp_left, 0, length);
  ramp_right = std::clamp<int64_t>(ramp_right, 0, length);
  std::vector<float> mask(static_cast<size_t>(length), 1.0f);
  if (ramp_left > 0) {
    // linspace(0, 1, ramp + 1)[:-1] from 0, else linspace(0, 1, ramp + 2)[1:-1].
    const std::vector<float> f =
        sched::torch_linspace_f32(0.0f, 1.0f, left_starts_from_0 ? ramp_left + 1 : ramp_left + 2);
    const size_t first = left_starts_from_0 ? 0 : 1;
    for (int64_t i = 0; i < ramp_left; ++i) mask[static_cast<size_t>(i)] *= f[first + static_cast<size_t>(i)];
  }
  if (ramp_right > 0) {  // linspace(1, 0, ramp + 2)[1:-1] over the last ramp_right entries
    const std::vector<float> f = sched::torch_linspace_f32(1.0f, 0.0f, ramp_right + 2);
    for (int64_t i = 0; i < ramp_right; ++i)
      mask[static_cast<size_t>(length - ramp_right + i)] *= f[1 + static_cast<size_t>(i)];
  }
  for (float& m : mask) m = std::clamp(m, 0.0f, 1.0f);
  return mask;
}

std::vector<Interval> latent_intervals(int64_t latent_len, int64_t factor, int64_t tile_size, int64_t overlap,
                                       bool temporal, const char* axis) {
  if (tile_size == 0) {
    VIDAX_CHECK(overlap == 0,
                "LTX-2 video VAE tiling: untiled axis " << axis << " (tile_size 0) with overlap " << overlap);
    return {{0, latent_len, 0, 0}};
  }
  // DimensionSizeConfig and _validate_size_axis.
  VIDAX_CHECK(tile_size > 0 && overlap >= 0 && overlap < tile_size,
              "LTX-2 video VAE tiling: " << axis << " tile_size " << tile_size << " overlap " << overlap
                                         << " (0 <= overlap < tile_size)");
  VIDAX_CHECK(tile_size >= 2 * factor && tile_size % factor == 0 && overlap % factor == 0,
              "LTX-2 video VAE tiling: " << axis << " tile_size " << tile_size << " / overlap " << overlap
                                         << " must be multiples of " << factor << ", the tile at least " << 2 * factor);
  const int64_t size = tile_size / factor, ov = overlap / factor;
  const int64_t tile = std::max(std::max<int64_t>(2, ov + 1), size);
  return temporal ? split_temporal_causal(latent_len, tile, ov) : split_by_size(latent_len, tile, ov);
}

namespace {

// map_temporal_slice / map_spatial_slice: a latent interval's video slice.
std::pair<int64_t, int64_t> video_slice(const Interval& i, int64_t factor, bool temporal) {
  return {i.start * factor, temporal ? 1 + (i.end - 1) * factor : i.end * factor};
}

}  // namespace

std::vector<AxisTile> axis_tiles(int64_t latent_len, int64_t out_len, int64_t factor, int64_t tile_size,
                                 int64_t overlap, bool temporal, const char* axis) {
  const std::vector<Interval> iv = latent_intervals(latent_len, factor, tile_size, overlap, temporal, axis);
  if (tile_size == 0) return {{0, latent_len, 0, out_len, {1.0f}, true}};  // DEFAULT_MAPPING_OPERATION
  std::vector<AxisTile> out;
  for (const Interval& i : iv) {
    AxisTile t{i.start, i.end, 0, 0, {}, false};
    std::tie(t.out_start, t.out_end) = video_slice(i, factor, temporal);
    const int64_t left = temporal ? (i.left_ramp == 0 ? 0 : 1 + (i.left_ramp - 1) * factor) : i.left_ramp * factor;
    t.mask = trapezoid_mask(t.out_end - t.out_start, left, i.right_ramp * factor, temporal);
    out.push_back(std::move(t));
  }
  return out;
}

std::vector<AxisTile> encode_axis_tiles(int64_t latent_len, int64_t factor, int64_t tile_size, int64_t overlap,
                                        bool temporal, const char* axis) {
  // _validate_overlap(min_overlap_frames=16, min_overlap_pixels=64): a conv encoder needs that much
  // overlap to discard its edge artefacts.
  const int64_t min_overlap = temporal ? 16 : 64;
  VIDAX_CHECK(tile_size == 0 || overlap >= min_overlap,
              "LTX-2 video VAE tiled encode: " << axis << " overlap " << overlap << " is below the required "
                                               << min_overlap << (temporal ? " frames" : " px"));
  std::vector<AxisTile> out;
  for (const Interval& i : latent_intervals(latent_len, factor, tile_size, overlap, temporal, axis)) {
    AxisTile t{0, 0, i.start, i.end, trapezoid_mask(i.end - i.start, i.left_ramp, i.right_ramp, temporal), false};
    std::tie(t.in_start, t.in_end) = video_slice(i, factor, temporal);
    out.push_back(std::move(t));
  }
  return out;
}

bool complementary(const std::vector<AxisTile>& tiles, int64_t out_len) {
  std::vector<float> acc(static_cast<size_t>(out_len), 0.0f);
  std::set<std::pair<int64_t, int64_t>> seen;
  for (const AxisTile& t : tiles) {
    if (!seen.insert({t.out_start, t.out_end}).second) continue;
    for (int64_t p = t.out_start; p < std::min(t.out_end, out_len); ++p)
      acc[static_cast<size_t>(p)] += t.mask.size() == 1 ? t.mask[0] : t.mask[static_cast<size_t>(p - t.out_start)];
  }
  for (float a : acc)
    if (!(std::fabs(a - 1.0f) <= 1e-5f)) return false;  // torch.allclose(acc, 1, atol=1e-5, rtol=0)
  return true;
}

}  // namespace vae

using namespace vae;

VaeTiling VaeTiling::from_json(const nlohmann::json& j) {
  VIDAX_CHECK(j.is_object(), "LTX-2 video VAE tiling: expected {axis: [tile_size, overlap]}, found " << j.dump());
  VaeTiling t;
  for (const auto& [key, v] : j.items()) {
    VaeTileSize* axis = key == "frames" ? &t.frames : key == "height" ? &t.height : key == "width" ? &t.width : nullptr;
    VIDAX_CHECK(axis != nullptr, "LTX-2 video VAE tiling: unknown axis '" << key << "' (frames, height, width)");
    const auto pair = translate::strict_get<std::vector<int64_t>>(v, "tiling." + key);
    VIDAX_CHECK(pair.size() == 2,
                "LTX-2 video VAE tiling: " << key << " must be [tile_size, overlap], found " << v.dump());
    *axis = {pair[0], pair[1]};
  }
  return t;
}

namespace {

// A [1, 1, ..., n at dim, ...] F32 tensor of a 1-D mask, for a broadcast multiply.
Tensor mask_along(const std::vector<float>& m, int64_t dim, int64_t n) {
  Shape s(5, 1);
  s[static_cast<size_t>(dim)] = n;
  return Tensor::from_f32(std::vector<float>(m.begin(), m.begin() + n), s);
}

// x placed at [t0, h0, w0] of a zero tensor of (T, H, W): buffer[region] += x as buffer + pad(x).
Tensor placed(const Tensor& x, int64_t t0, int64_t h0, int64_t w0, int64_t T, int64_t H, int64_t W) {
  return ops::pad(x, {w0, W - w0 - x.size(4), h0, H - h0 - x.size(3), t0, T - t0 - x.size(2)});
}

Tensor clamp_min(const Tensor& w) { return ops::clamp(w, 1e-8, std::numeric_limits<double>::infinity()); }

}  // namespace

Tensor VideoEncoder::tiled_encode(const Tensor& video, const VaeTiling& tiling) const {
  const Shape out = output_shape(video.shape());
  const int64_t tf = config_.encoder_time_factor(), sf = config_.encoder_space_factor();
  const std::vector<AxisTile> ts =
      encode_axis_tiles(out[2], tf, tiling.frames.tile_size, tiling.frames.overlap, true, "frames");
  const std::vector<AxisTile> hs =
      encode_axis_tiles(out[3], sf, tiling.height.tile_size, tiling.height.overlap, false, "height");
  const std::vector<AxisTile> ws =
      encode_axis_tiles(out[4], sf, tiling.width.tile_size, tiling.width.overlap, false, "width");
  const bool comp = complementary(ts, out[2]) && complementary(hs, out[3]) && complementary(ws, out[4]);
  const int64_t T = out[2], H = out[3], W = out[4];
  Tensor buffer = Tensor::zeros(out, video.dtype());
  Tensor weights = comp ? Tensor() : Tensor::zeros({1, 1, T, H, W}, DType::F32);
  for (const AxisTile& t : ts)
    for (const AxisTile& h : hs)
      for (const AxisTile& w : ws) {
        const Tensor in =
            video.slice(2, t.in_start, t.in_end).slice(3, h.in_start, h.in_end).slice(4, w.in_start, w.in_end);
        const int64_t lt = t.out_end - t.out_start, lh = h.out_end - h.out_start, lw = w.out_end - w.out_start;
        // latent_buffer[out] += scale_by_masks_1d(forward(tile), masks): one fp32 multiply per axis.
        const Tensor mt = mask_along(t.mask, 2, lt), mh = mask_along(h.mask, 3, lh), mw = mask_along(w.mask, 4, lw);
        const Tensor z = ops::mul(ops::mul(ops::mul(forward(in.contiguous()), mt), mh), mw);
        buffer = ops::add(buffer, placed(z, t.out_start, h.out_start, w.out_start, T, H, W));
        if (!comp) {
          const Tensor strength =
              ops::mul(ops::mul(ops::mul(Tensor::full({1, 1, lt, lh, lw}, 1.0, DType::F32), mt), mh), mw);
          weights = ops::add(weights, placed(strength, t.out_start, h.out_start, w.out_start, T, H, W));
        }
      }
  return comp ? buffer : ops::div(buffer, clamp_min(weights));
}

Tensor VideoDecoder::tiled_decode(const Tensor& latent, const VaeTiling& tiling,
                                  const DecoderConditioning& cond) const {
  const Shape out = output_shape(latent.shape());
  VIDAX_CHECK(!cond.timestep,
              "LTX-2 video VAE tiled decode: an explicit timestep is not supported (decode_video "
              "passes none; the default decode_timestep applies)");
  const int64_t tf = config_.decoder_time_factor(), sf = config_.decoder_space_factor();
  const std::vector<AxisTile> ts =
      axis_tiles(latent.size(2), out[2], tf, tiling.frames.tile_size, tiling.frames.overlap, true, "frames");
  const std::vector<AxisTile> hs =
      axis_tiles(latent.size(3), out[3], sf, tiling.height.tile_size, tiling.height.overlap, false, "height");
  const std::vector<AxisTile> ws =
      axis_tiles(latent.size(4), out[4], sf, tiling.width.tile_size, tiling.width.overlap, false, "width");
  const bool comp = complementary(ts, out[2]) && complementary(hs, out[3]) && complementary(ws, out[4]);
  const int64_t H = out[3], W = out[4];

  // One temporal group at a time (the tiles sharing a temporal slice, in the reference's order: the
  // spatial tiles row by row), accumulated into a buffer starting at the group's first frame.
  std::vector<Tensor> chunks;
  Tensor prev, prev_w;
  int64_t prev_start = 0, prev_end = 0;
  for (const AxisTile& t : ts) {
    const int64_t T = t.out_end - t.out_start;
    Tensor buffer = Tensor::zeros({out[0], out[1], T, H, W}, latent.dtype());
    Tensor weights = comp ? Tensor() : Tensor::zeros({1, 1, T, H, W}, DType::F32);
    for (const AxisTile& h : hs)
      for (const AxisTile& w : ws) {
        const Tensor in =
            latent.slice(2, t.in_start, t.in_end).slice(3, h.in_start, h.in_end).slice(4, w.in_start, w.in_end);
        const Tensor decoded = forward(in.contiguous(), {}, cond);
        const int64_t n = std::min(T, decoded.size(2));  // the tile's frames (its group starts where it does)
        const int64_t lh = h.out_end - h.out_start, lw = w.out_end - w.out_start;
        // scale_by_masks_1d: x * mask_b * mask_c * mask_t * mask_h * mask_w (the first two are ones).
        Tensor m = decoded.slice(2, 0, n);
        Tensor one = Tensor::full({1, 1, 1, 1, 1}, 1.0, DType::F32);  // the masks' product (the weights)
        const auto apply = [&](const AxisTile& a, int64_t dim, int64_t len) {
          if (a.untiled) return;  // ones(1): a multiply by 1
          const Tensor t1 = mask_along(a.mask, dim, len);
          m = ops::mul(m, t1);
          one = ops::mul(one, t1);
        };
        apply(t, 2, n);
        apply(h, 3, lh);
        apply(w, 4, lw);
        buffer = ops::add(buffer, placed(m, 0, h.out_start, w.out_start, T, H, W));
        if (!comp) {
          // strength = ones(decoded_slice.shape) * masks: the product broadcast to the tile's extent.
          const Tensor strength = ops::mul(Tensor::full({1, 1, n, lh, lw}, 1.0, DType::F32), one);
          weights = ops::add(weights, placed(strength, 0, h.out_start, w.out_start, T, H, W));
        }
      }
    if (prev.defined()) {
      if (prev_end > t.out_start) {  // the overlap: added into the previous chunk, copied back
        const int64_t ov = prev_end - t.out_start, off = t.out_start - prev_start;
        const auto merge = [&](const Tensor& p, const Tensor& c) {
          const Tensor summed = ops::add(p.slice(2, off, p.size(2)), c.slice(2, 0, ov));
          const Tensor head = p.slice(2, 0, off);
          const Tensor p2 = off == 0 ? summed : ops::concat({head, summed}, 2);
          const Tensor c2 = ov == c.size(2) ? summed : ops::concat({summed, c.slice(2, ov, c.size(2))}, 2);
          return std::pair{p2, c2};
        };
        std::tie(prev, buffer) = merge(prev, buffer);
        if (!comp) std::tie(prev_w, weights) = merge(prev_w, weights);
      }
      const int64_t keep = t.out_start - prev_start;
      const Tensor done = comp ? prev : ops::div(prev, clamp_min(prev_w));
      if (keep > 0) chunks.push_back(done.slice(2, 0, keep));
    }
    prev = buffer;
    prev_w = weights;
    prev_start = t.out_start;
    prev_end = t.out_end;
  }
  chunks.push_back(comp ? prev : ops::div(prev, clamp_min(prev_w)));
  return chunks.size() == 1 ? chunks[0] : ops::concat(chunks, 2);
}

}  // namespace vidax::ltx2
