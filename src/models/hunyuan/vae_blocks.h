// What the HunyuanVideo VAEs share (1.0's AutoencoderKLCausal3D, vae.cpp / vae_tiling.cpp, and 1.5's
// AutoencoderKLConv3D, src/models/hunyuan15/vae.cpp): the parameter loader, the shape recorder, the
// config's power-of-two check, the size checks and their errors' nearest valid values, the
// replicate-padded causal Conv3d, the frame-causal attention and the reference's spatial tiling
// (blend_v / blend_h over row-major tiles, cropped). Internal to the two families' VAEs.
#pragma once
#include <algorithm>
#include <array>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "backend/ops.h"
#include "core/error.h"
#include "nn/params.h"

namespace vidax::hunyuan::vae_blocks {

// Takes parameters by official name and casts them to the compute dtype (explicitly: the references
// run the VAE in the dtype it is loaded in).
struct Loader {
  nn::ParamSource& src;
  DType compute;
  Tensor get(const std::string& name, const Shape& shape) const {
    Tensor t = src.take(name, shape);
    return t.dtype() == compute || t.device() == Device::Meta ? t : ops::cast(t, compute);
  }
};

// The valid values nearest v among offset + step k (k >= 0, value >= 1): "lo or hi", or v itself
// (what a size error names: "5 or 9" frames, "32 or 48" pixels).
inline std::string nearest(int64_t v, int64_t step, int64_t offset) {
  const int64_t first = offset >= 1 ? offset : step;
  const int64_t lo = v < first ? 0 : first + (v - first) / step * step, hi = v < first ? first : lo + step;
  std::ostringstream s;
  if (lo == v) return std::to_string(v);
  if (lo >= first) s << lo << " or ";
  s << hi;
  return s.str();
}

// The names and shapes `build(ParamSource&)` takes, in build order (no data: meta tensors): what
// parameter_shapes gives for a config.
template <class Build>
std::vector<std::pair<std::string, Shape>> recorded_shapes(const Build& build) {
  std::vector<std::pair<std::string, Shape>> out;
  nn::ParamSource src = nn::ParamSource::generated(
      [&out](const std::string& name, const Shape& shape) {
        out.emplace_back(name, shape);
        return Tensor::empty(shape, DType::F32, Device::Meta);
      },
      "shapes");
  build(src);
  return out;
}

// log2(v) for a power of two v; otherwise throws "<who>: <field> must be a power of two" (who:
// "HunyuanVideo VAE config", "HunyuanVideo 1.5 VAE config").
inline int64_t log2_exact(const char* who, int64_t v, const char* field) {
  int64_t n = 0;
  while ((int64_t{1} << n) < v) ++n;
  VIDAX_CHECK(v >= 1 && (int64_t{1} << n) == v, who << ": " << field << " must be a power of two, found " << v);
  return n;
}

// The size checks of encode / decode (who: "HunyuanVideo VAE", "HunyuanVideo 1.5 VAE"): a video
// [B, channels, tf k+1, H, W] with H and W multiples of sf (the errors name the nearest valid
// sizes); a latent [B, channels, F', h, w], none of them empty.
inline void check_video(const char* who, const Shape& s, int64_t channels, int64_t tf, int64_t sf) {
  VIDAX_CHECK(s.size() == 5, who << ": the video must be [B, C, F, H, W], found " << shape_str(s));
  VIDAX_CHECK(s[1] == channels, who << ": the video has " << s[1] << " channels, the encoder takes " << channels);
  VIDAX_CHECK(s[2] >= 1 && (s[2] - 1) % tf == 0,
              who << ": " << s[2] << " frames; the VAE takes " << tf << "k+1 frames (nearest: " << nearest(s[2], tf, 1)
                  << ")");
  for (int i = 3; i < 5; ++i)
    VIDAX_CHECK(s[i] >= sf && s[i] % sf == 0, who << ": " << (i == 3 ? "height " : "width ") << s[i]
                                                  << " is not a multiple of " << sf << " (nearest: "
                                                  << nearest(s[i], sf, 0) << ")");
}
inline void check_latent(const char* who, const Shape& s, int64_t channels) {
  VIDAX_CHECK(s.size() == 5, who << ": the latent must be [B, C, F, H, W], found " << shape_str(s));
  VIDAX_CHECK(s[1] == channels, who << ": the latent has " << s[1] << " channels, the VAE has " << channels);
  VIDAX_CHECK(s[2] >= 1 && s[3] >= 1 && s[4] >= 1, who << ": empty latent " << shape_str(s));
}

// CausalConv3d: F.pad(x, (kw/2, kw/2, kh/2, kh/2, kt-1, 0), mode="replicate"), then Conv3d without
// padding. Parameters under <prefix>.conv (both VAEs' state_dict names).
struct CausalConv {
  Tensor w, b;
  std::array<int64_t, 3> stride{1, 1, 1};
    static CausalConv load(const Loader& l, const std::string& prefix, int64_t in, int64_t out, int64_t k,
                         std::array<int64_t, 3> stride = {1, 1, 1}) {
    return {l.get(prefix + ".conv.weight", {out, in, k, k, k}), l.get(prefix + ".conv.bias", {out}), stride};
  }
  Tensor operator()(const Tensor& x) const {
    const int64_t k = w.size(2);
    Tensor padded = k == 1 ? x : ops::pad(x, {k / 2, k / 2, k / 2, k / 2, k - 1, 0}, ops::PadMode::Replicate);
    return ops::conv3d(padded, w, b, stride, {0, 0, 0});
  }
};

// One-head attention over T frames of hw positions each under the reference's
// prepare_causal_attention_mask (position i of frame i // hw sees keys [0, (i // hw + 1) hw)):
// frame f's queries attend to the keys of frames 0..f, one attention call per query frame, no
// [N, N] mask. q, k, v [B, T hw, 1, C] -> [B, T hw, 1, C]; scale 1/sqrt(C).
inline Tensor frame_causal_attention(const Tensor& q, const Tensor& k, const Tensor& v, int64_t T, int64_t hw) {
  std::vector<Tensor> frames;
  for (int64_t f = 0; f < T; ++f)
    frames.push_back(ops::attention(q.slice(1, f * hw, (f + 1) * hw), k.slice(1, 0, (f + 1) * hw),
                                    v.slice(1, 0, (f + 1) * hw)));
  return frames.size() == 1 ? frames[0] : ops::concat(frames, 1);
}

// blend_v / blend_h / blend_t along `dim` (3, 4, 2): the first e = min(a, b, extent) slices of b
// become a's last e slices * (1 - y / e) + b's * (y / e), each weight rounded to the tensor's dtype
// as torch rounds a Python scalar, the products and the sum rounded as torch's.
inline Tensor blend(const Tensor& a, const Tensor& b, int64_t extent, int64_t dim) {
  const int64_t e = std::min({a.size(dim), b.size(dim), extent});
  if (e <= 0) return b;
  std::vector<float> wa, wb;
  for (int64_t y = 0; y < e; ++y) {
    const double r = static_cast<double>(y) / static_cast<double>(e);
    wa.push_back(static_cast<float>(1 - r));
    wb.push_back(static_cast<float>(r));
  }
  Shape ws(5, 1);
  ws[static_cast<size_t>(dim)] = e;
  const Tensor ta = Tensor::from_f32(wa, ws, a.dtype()), tb = Tensor::from_f32(wb, ws, b.dtype());
  Tensor strip = ops::add(ops::mul(a.slice(dim, a.size(dim) - e, a.size(dim)), ta), ops::mul(b.slice(dim, 0, e), tb));
  return e == b.size(dim) ? strip : ops::concat({strip, b.slice(dim, e, b.size(dim))}, dim);
}

inline Tensor crop(const Tensor& t, int64_t dim, int64_t n) { return t.slice(dim, 0, std::min(n, t.size(dim))); }

inline Tensor join(const std::vector<Tensor>& parts, int64_t dim) {
  std::vector<Tensor> kept;
  for (const Tensor& p : parts)
    if (p.defined() && p.size(dim) > 0) kept.push_back(p);
  VIDAX_CHECK(!kept.empty(), "HunyuanVideo VAE tiling: no tile left to join");
  return kept.size() == 1 ? ops::copy(kept[0]) : ops::concat(kept, dim);
}

// Tiles of `tile` (input pixels) stepping by `step`, each run by `run`; blended over `extent`
// (output pixels) with the tile above and the one to the left, cropped to `limit`.
template <class Run>
Tensor spatial_tiles(const Tensor& x, int64_t tile, int64_t step, int64_t extent, int64_t limit, const Run& run) {
  VIDAX_CHECK(step >= 1, "HunyuanVideo VAE tiling: a tile of " << tile << " steps by " << step
                                                               << " (sample_size too small)");
  const int64_t H = x.size(3), W = x.size(4);
  std::vector<std::vector<Tensor>> rows;
  for (int64_t i = 0; i < H; i += step) {
    std::vector<Tensor> row;
    for (int64_t j = 0; j < W; j += step)
      row.push_back(run(ops::copy(x.slice(3, i, std::min(i + tile, H)).slice(4, j, std::min(j + tile, W)))));
    rows.push_back(std::move(row));
  }
  std::vector<Tensor> out_rows;
  for (size_t i = 0; i < rows.size(); ++i) {
    std::vector<Tensor> out_row;
    for (size_t j = 0; j < rows[i].size(); ++j) {
      // The reference blends in place: a tile's neighbours are read already blended.
      Tensor t = rows[i][j];
      if (i > 0) t = blend(rows[i - 1][j], t, extent, 3);
      if (j > 0) t = blend(rows[i][j - 1], t, extent, 4);
      rows[i][j] = t;
      out_row.push_back(crop(crop(t, 3, limit), 4, limit));
    }
    out_rows.push_back(join(out_row, 4));
  }
  return join(out_rows, 3);
}

}  // namespace vidax::hunyuan::vae_blocks
