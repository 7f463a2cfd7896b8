#include "models/ltx2/rope.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/ops.h"
#include "core/error.h"

namespace vidax::ltx2 {

namespace {

constexpr double kPi = 3.14159265358979323846;  // math.pi

// generate_freq_grid_np: theta ** linspace(0, 1, F) in fp64 (numpy's linspace: i * (1 / (F - 1)), the
// last entry exactly 1), times pi / 2 in fp64, rounded to fp32.
std::vector<float> frequencies(double theta, int64_t n_freqs) {
  std::vector<float> w(static_cast<size_t>(n_freqs));
  const double step = n_freqs > 1 ? 1.0 / static_cast<double>(n_freqs - 1) : 0.0;
  for (int64_t j = 0; j < n_freqs; ++j) {
    const double e = (j == n_freqs - 1 && n_freqs > 1) ? 1.0 : static_cast<double>(j) * step;
    w[static_cast<size_t>(j)] = static_cast<float>(std::pow(theta, e) * kPi / 2.0);
  }
  return w;
}

}  // namespace

Positions video_positions(int64_t frames, int64_t height, int64_t width, double fps, VideoScale scale,
                          bool causal_fix) {
  VIDAX_CHECK(frames > 0 && height > 0 && width > 0,
              "LTX-2 video_positions: latent grid " << frames << "x" << height << "x" << width << " must be positive");
  VIDAX_CHECK(fps > 0 && std::isfinite(fps), "LTX-2 video_positions: fps must be positive, got " << fps);
  VIDAX_CHECK(scale.time > 0 && scale.height > 0 && scale.width > 0, "LTX-2 video_positions: scale factors must be positive");
  Positions p;
  p.n_axes = 3;
  p.tokens = frames * height * width;
  p.start.resize(static_cast<size_t>(3 * p.tokens));
  p.end.resize(p.start.size());
  const float fps32 = static_cast<float>(fps);  // the fp32 tensor / python float divides in fp32
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t h = 0; h < height; ++h)
      for (int64_t w = 0; w < width; ++w) {
        const int64_t t = (f * height + h) * width + w;
        // get_pixel_coords: latent bounds times the scale (int64), the causal fix on the frame axis.
        int64_t fs = f * scale.time, fe = (f + 1) * scale.time;
        if (causal_fix) {
          fs = std::max<int64_t>(0, fs + 1 - scale.time);
          fe = std::max<int64_t>(0, fe + 1 - scale.time);
        }
        const size_t i = static_cast<size_t>(t);
        const size_t T = static_cast<size_t>(p.tokens);
        p.start[i] = static_cast<float>(fs) / fps32;
        p.end[i] = static_cast<float>(fe) / fps32;
        p.start[T + i] = static_cast<float>(h * scale.height);
        p.end[T + i] = static_cast<float>((h + 1) * scale.height);
        p.start[2 * T + i] = static_cast<float>(w * scale.width);
        p.end[2 * T + i] = static_cast<float>((w + 1) * scale.width);
      }
  return p;
}

Positions audio_positions(int64_t frames, AudioTiming tm) {
  VIDAX_CHECK(frames > 0, "LTX-2 audio_positions: frames must be positive, got " << frames);
  VIDAX_CHECK(tm.sample_rate > 0 && tm.hop_length > 0 && tm.downsample > 0 && tm.shift >= 0,
              "LTX-2 audio_positions: sample_rate " << tm.sample_rate << ", hop_length " << tm.hop_length
                                                    << ", downsample " << tm.downsample << ", shift " << tm.shift
                                                    << " (positive, shift >= 0)");
  // _get_audio_latent_time_in_sec in fp32: i * downsample, (+ 1 - downsample).clip(0), * hop / rate.
  auto seconds = [&](int64_t i) {
    float mel = static_cast<float>(i) * static_cast<float>(tm.downsample);
    if (tm.causal) mel = std::max(0.0f, mel + 1.0f - static_cast<float>(tm.downsample));
    return mel * static_cast<float>(tm.hop_length) / static_cast<float>(tm.sample_rate);
  };
  Positions p;
  p.n_axes = 1;
  p.tokens = frames;
  for (int64_t i = 0; i < frames; ++i) {
    p.start.push_back(seconds(tm.shift + i));
    p.end.push_back(seconds(tm.shift + i + 1));
  }
  return p;
}

Positions temporal(const Positions& p) {
  VIDAX_CHECK(p.n_axes >= 1 && p.start.size() == static_cast<size_t>(p.n_axes * p.tokens),
              "LTX-2 temporal: malformed positions (" << p.n_axes << " axes, " << p.tokens << " tokens)");
  Positions t;
  t.n_axes = 1;
  t.tokens = p.tokens;
  t.start.assign(p.start.begin(), p.start.begin() + p.tokens);
  t.end.assign(p.end.begin(), p.end.begin() + p.tokens);
  return t;
}

RopeTables rope_tables(const Positions& p, const RopeSpec& spec) {
  const int64_t n = p.n_axes, T = p.tokens;
  VIDAX_CHECK(n >= 1 && T >= 1 && p.start.size() == static_cast<size_t>(n * T) && p.end.size() == p.start.size(),
              "LTX-2 rope_tables: malformed positions (" << n << " axes, " << T << " tokens)");
  VIDAX_CHECK(static_cast<int64_t>(spec.max_pos.size()) == n,
              "LTX-2 rope_tables: " << spec.max_pos.size() << " max positions for " << n << " position axes");
  VIDAX_CHECK(n <= 8, "LTX-2 rope_tables: at most 8 position axes, got " << n);
  for (int64_t m : spec.max_pos) VIDAX_CHECK(m > 0, "LTX-2 rope_tables: max positions must be positive, got " << m);
  VIDAX_CHECK(spec.theta > 1.0, "LTX-2 rope_tables: theta must be > 1, got " << spec.theta);
  const int64_t dim = spec.dim, F = dim / (2 * n);
  VIDAX_CHECK(dim > 0 && dim % 2 == 0 && F >= 1,
              "LTX-2 rope_tables: width " << dim << " must be even and at least " << 2 * n << " for " << n << " axes");
  const bool split = spec.layout == RopeLayout::Split;
  if (split)
    VIDAX_CHECK(spec.heads >= 1 && dim % (2 * spec.heads) == 0,
                "LTX-2 rope_tables: split layout needs the width " << dim << " to be a multiple of 2 * heads (heads "
                                                                   << spec.heads << ")");
  const std::vector<float> w = frequencies(spec.theta, F);
  const int64_t half = dim / 2, pad = half - n * F;  // identity pairs in front (split: to dim/2; interleaved: dim % 2n / 2)
  std::vector<float> c(static_cast<size_t>(T * half), 1.0f), s(c.size(), 0.0f);
  for (int64_t t = 0; t < T; ++t) {
    float u[8];  // 2 u_a - 1 per axis
    for (int64_t a = 0; a < n; ++a) {
      const size_t i = static_cast<size_t>(a * T + t);
      const float mid = (p.start[i] + p.end[i]) / 2.0f;  // use_middle_indices_grid
      u[a] = mid / static_cast<float>(spec.max_pos[static_cast<size_t>(a)]) * 2.0f - 1.0f;
    }
    for (int64_t j = 0; j < F; ++j)
      for (int64_t a = 0; a < n; ++a) {
        const float angle = w[static_cast<size_t>(j)] * u[a];
        const size_t k = static_cast<size_t>(t * half + pad + j * n + a);
        c[k] = std::cos(angle);
        s[k] = std::sin(angle);
      }
  }
  RopeTables out;
  out.layout = spec.layout;
  out.dim = dim;
  out.heads = split ? spec.heads : 1;
  // Split: row t's dim/2 entries are heads x head_dim/2 -> [T * heads, head_dim/2], the same memory.
  const Shape shape = split ? Shape{T * spec.heads, half / spec.heads} : Shape{T, half};
  out.cos = Tensor::from_f32(c, shape);
  out.sin = Tensor::from_f32(s, shape);
  return out;
}

Tensor apply_rope(const Tensor& x, const RopeTables& t) {
  VIDAX_CHECK(x.dim() == 3 && x.size(2) == t.dim,
              "LTX-2 apply_rope: x is " << x.str() << ", expected [B, tokens, " << t.dim << "]");
  const int64_t B = x.size(0), L = x.size(1);
  const int64_t rows = t.layout == RopeLayout::Split ? L * t.heads : L;
  VIDAX_CHECK(t.cos.dim() == 2 && t.cos.size(0) == rows,
              "LTX-2 apply_rope: tables " << t.cos.str() << " are for " << t.cos.size(0) / t.heads << " tokens, x has " << L);
  // Read-only views: split rotates each head's halves ([B, L * heads, 1, head_dim] rows), interleaved
  // the pairs across the whole width ([B, L, 1, dim]).
  const Tensor xc = x.contiguous();
  const Tensor xv = xc.view({B, rows, 1, t.dim * L / rows});
  const ops::RopeMode mode = t.layout == RopeLayout::Split ? ops::RopeMode::SplitHalf : ops::RopeMode::InterleavedPairs;
  return ops::rope(xv, t.cos, t.sin, mode).view({B, L, t.dim});
}

}  // namespace vidax::ltx2
