#include "io/image_resize.h"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <vector>

#include "core/error.h"

namespace vidax::io {

namespace {

// The 4 taps of one output position along one axis (upsample_bicubic2d's
// compute_indices_weights_cubic with align_corners = false).
struct Taps {
  std::array<int64_t, 4> index;
  std::array<float, 4> weight;
};

float cubic1(float x, float a) { return ((a + 2) * x - (a + 3)) * x * x + 1; }
float cubic2(float x, float a) { return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a; }

std::vector<Taps> axis_taps(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  const float a = -0.75f;
  std::vector<Taps> taps(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    const float real = scale * (static_cast<float>(i) + 0.5f) - 0.5f;  // cubic: not clamped at 0
    const int64_t idx = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    const float t = std::min(std::max(real - static_cast<float>(idx), 0.0f), 1.0f);
    Taps& tp = taps[static_cast<size_t>(i)];
    const float t2 = 1.0f - t;
    tp.weight = {cubic2(t + 1.0f, a), cubic1(t, a), cubic1(t2, a), cubic2(t2 + 1.0f, a)};
    for (int j = 0; j < 4; ++j) tp.index[j] = std::clamp<int64_t>(idx - 1 + j, 0, in - 1);
  }
  return taps;
}

}  // namespace

Tensor resize_bicubic(const Tensor& x, int64_t out_h, int64_t out_w) {
  VIDAX_CHECK(x.dim() >= 2 && x.dtype() == DType::F32, "resize_bicubic: expects [..., H, W] F32, got " << x.str());
  VIDAX_CHECK(out_h >= 1 && out_w >= 1, "resize_bicubic: output size " << out_h << "x" << out_w);
  const Tensor src = x.to_host().contiguous();
  const int64_t h = src.size(-2), w = src.size(-1);
  const int64_t planes = src.numel() / (h * w);
  Shape shape = src.shape();
  shape[shape.size() - 2] = out_h;
  shape[shape.size() - 1] = out_w;
  Tensor dst = Tensor::empty(shape, DType::F32);
  const std::vector<Taps> ty = axis_taps(h, out_h), tx = axis_taps(w, out_w);
  const float* in = src.data<float>();
  float* out = dst.data<float>();
  for (int64_t p = 0; p < planes; ++p) {
    const float* plane = in + p * h * w;
    float* o = out + p * out_h * out_w;
    for (int64_t oy = 0; oy < out_h; ++oy) {
      const Taps& vy = ty[static_cast<size_t>(oy)];
      for (int64_t ox = 0; ox < out_w; ++ox) {
        const Taps& vx = tx[static_cast<size_t>(ox)];
        // Rows first (the x taps of each of the 4 rows), then the y taps, as torch's kernel.
        std::array<float, 4> rows;
        for (int r = 0; r < 4; ++r) {
          const float* row = plane + vy.index[r] * w;
          rows[r] = row[vx.index[0]] * vx.weight[0] + row[vx.index[1]] * vx.weight[1] +
                    row[vx.index[2]] * vx.weight[2] + row[vx.index[3]] * vx.weight[3];
        }
        o[oy * out_w + ox] =
            rows[0] * vy.weight[0] + rows[1] * vy.weight[1] + rows[2] * vy.weight[2] + rows[3] * vy.weight[3];
      }
    }
  }
  return dst;
}

namespace {

// upsample_bilinear2d's compute_indices_weights_linear (align_corners = false): two taps per output.
struct LinearTap {
  int64_t i0, i1;
  float w0, w1;
};

std::vector<LinearTap> linear_taps(int64_t in, int64_t out) {
  const float scale = static_cast<float>(in) / static_cast<float>(out);
  std::vector<LinearTap> taps(static_cast<size_t>(out));
  for (int64_t i = 0; i < out; ++i) {
    float real = scale * (static_cast<float>(i) + 0.5f) - 0.5f;
    if (real < 0.0f) real = 0.0f;  // area_pixel_compute_source_index clamps linear modes at 0
    const int64_t idx = std::min(static_cast<int64_t>(std::floor(real)), in - 1);
    const float lambda = std::min(std::max(real - static_cast<float>(idx), 0.0f), 1.0f);
    taps[static_cast<size_t>(i)] = {idx, idx + (idx < in - 1 ? 1 : 0), 1.0f - lambda, lambda};
  }
  return taps;
}

}  // namespace

Tensor resize_bilinear(const Tensor& x, int64_t out_h, int64_t out_w) {
  VIDAX_CHECK(x.dim() >= 2 && x.dtype() == DType::F32, "resize_bilinear: expects [..., H, W] F32, got " << x.str());
  VIDAX_CHECK(out_h >= 1 && out_w >= 1, "resize_bilinear: output size " << out_h << "x" << out_w);
  const Tensor src = x.to_host().contiguous();
  const int64_t h = src.size(-2), w = src.size(-1);
  const int64_t planes = src.numel() / (h * w);
  Shape shape = src.shape();
  shape[shape.size() - 2] = out_h;
  shape[shape.size() - 1] = out_w;
  Tensor dst = Tensor::empty(shape, DType::F32);
  const std::vector<LinearTap> ty = linear_taps(h, out_h), tx = linear_taps(w, out_w);
  const float* in = src.data<float>();
  float* out = dst.data<float>();
  for (int64_t p = 0; p < planes; ++p) {
    const float* plane = in + p * h * w;
    float* o = out + p * out_h * out_w;
    for (int64_t oy = 0; oy < out_h; ++oy) {
      const LinearTap& vy = ty[static_cast<size_t>(oy)];
      const float* r0 = plane + vy.i0 * w;
      const float* r1 = plane + vy.i1 * w;
      for (int64_t ox = 0; ox < out_w; ++ox) {
        const LinearTap& vx = tx[static_cast<size_t>(ox)];
        // Interpolate<2>: the width interpolation of each row, then the rows weighted by height.
        const float t0 = r0[vx.i0] * vx.w0 + r0[vx.i1] * vx.w1;
        const float t1 = r1[vx.i0] * vx.w0 + r1[vx.i1] * vx.w1;
        o[oy * out_w + ox] = t0 * vy.w0 + t1 * vy.w1;
      }
    }
  }
  return dst;
}

Tensor center_crop(const Tensor& x, int64_t h, int64_t w) {
  VIDAX_CHECK(x.dim() >= 2 && x.dtype() == DType::F32, "center_crop: expects [..., H, W] F32, got " << x.str());
  VIDAX_CHECK(h >= 1 && w >= 1, "center_crop: " << h << "x" << w << " is empty");
  Tensor src = x.contiguous();
  int64_t H = src.size(-2), W = src.size(-1);
  if (h > H || w > W) {  // torchvision pads with zeros first: (d // 2) before, ((d + 1) // 2) after
    const int64_t top = h > H ? (h - H) / 2 : 0, left = w > W ? (w - W) / 2 : 0;
    const int64_t H2 = H + (h > H ? h - H : 0), W2 = W + (w > W ? w - W : 0);
    Shape shape = src.shape();
    shape[shape.size() - 2] = H2;
    shape[shape.size() - 1] = W2;
    Tensor padded = Tensor::zeros(shape, DType::F32);
    const int64_t planes = src.numel() / (H * W);
    const float* in = src.data<float>();
    float* out = padded.data<float>();
    for (int64_t p = 0; p < planes; ++p)
      for (int64_t r = 0; r < H; ++r)
        std::copy(in + (p * H + r) * W, in + (p * H + r + 1) * W, out + (p * H2 + top + r) * W2 + left);
    src = padded;
    H = H2;
    W = W2;
  }
  // int(round((H - h) / 2.0)): Python's round, halves to even (nearbyint in the default mode).
  const int64_t top = static_cast<int64_t>(std::nearbyint(static_cast<double>(H - h) / 2.0));
  const int64_t left = static_cast<int64_t>(std::nearbyint(static_cast<double>(W - w) / 2.0));
  return src.slice(src.dim() - 2, top, top + h).slice(src.dim() - 1, left, left + w).contiguous();
}

}  // namespace vidax::io

namespace vidax::io {

namespace {

constexpr int kPillowPrecision = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit images

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= 3.14159265358979323846;  // M_PI
  return std::sin(x) / x;
}

double lanczos3(double x) { return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3.0) : 0.0; }

// torch's antialiasing bicubic filter (HelperInterpCubic::aa_filter: A = -0.5, as Pillow's), in double.
double cubic_aa(double x) {
  constexpr double a = -0.5;
  x = std::abs(x);
  if (x < 1.0) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2.0) return ((a * x - 5 * a) * x + 8 * a) * x - 4 * a;
  return 0.0;
}

// One axis of an 8-bit separable resample in fixed point (Pillow's ImagingResample and torch's
// uint8 antialias path share it): per output position the first input index, the tap count and
// the integer weights, and the number of fractional bits the weights carry.
struct AxisCoeffs {
  int64_t ksize = 0;
  int precision = 0;
  std::vector<int64_t> first, count;
  std::vector<int32_t> k;  // [out, ksize]
};

// Pillow's precompute_coeffs and torch's _compute_indices_min_size_weights_aa (the same rule): a
// filter of `support` taps' half-width widened by the scale when reducing, evaluated at the input
// pixel centres, normalised per output position. Returns the double weights [out, ksize] and their
// largest value.
double filter_weights(int64_t in, int64_t out, double half_width, double (*filter)(double), AxisCoeffs& c,
                      std::vector<double>& w) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = half_width * filterscale;
  c.ksize = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  c.first.resize(static_cast<size_t>(out));
  c.count.resize(static_cast<size_t>(out));
  w.assign(static_cast<size_t>(out * c.ksize), 0.0);
  double wt_max = 0.0;
  for (int64_t xx = 0; xx < out; ++xx) {
    const double center = (static_cast<double>(xx) + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int64_t xmin = static_cast<int64_t>(center - support + 0.5);  // C's truncating cast, as both
    if (xmin < 0) xmin = 0;
    int64_t xmax = static_cast<int64_t>(center + support + 0.5);
    if (xmax > in) xmax = in;
    xmax = std::clamp<int64_t>(xmax - xmin, 0, c.ksize);
    double* row = &w[static_cast<size_t>(xx * c.ksize)];
    double ww = 0.0;
    for (int64_t x = 0; x < xmax; ++x) {
      row[x] = filter((static_cast<double>(x + xmin) - center + 0.5) * ss);
      ww += row[x];
    }
    for (int64_t x = 0; x < xmax; ++x) {
      if (ww != 0.0) row[x] /= ww;
      wt_max = std::max(wt_max, row[x]);
    }
    c.first[static_cast<size_t>(xx)] = xmin;
    c.count[static_cast<size_t>(xx)] = xmax;
  }
  return wt_max;
}

// The weights rounded half away from zero to `precision` fractional bits.
void quantize_weights(const std::vector<double>& w, AxisCoeffs& c) {
  c.k.resize(w.size());
  const double one = static_cast<double>(int64_t{1} << c.precision);
  for (size_t i = 0; i < w.size(); ++i) {
    const double f = w[i] * one;
    c.k[i] = static_cast<int32_t>(f < 0 ? -0.5 + f : 0.5 + f);
  }
}

// Pillow's LANCZOS (normalize_coeffs_8bpc: 22 fractional bits in int32).
AxisCoeffs lanczos_coeffs(int64_t in, int64_t out) {
  AxisCoeffs c;
  std::vector<double> w;
  filter_weights(in, out, 3.0, lanczos3, c, w);
  c.precision = kPillowPrecision;
  quantize_weights(w, c);
  return c;
}

// torch's _compute_index_ranges_int16_weights for bicubic: the most fractional bits (below 22)
// that keep twice the largest weight under 2^15, then int16 weights.
AxisCoeffs torch_bicubic_aa_coeffs(int64_t in, int64_t out) {
  AxisCoeffs c;
  std::vector<double> w;
  const double wt_max = filter_weights(in, out, 2.0, cubic_aa, c, w);
  int p = 0;
  for (; p < 22; ++p)
    if (static_cast<int>(0.5 + wt_max * static_cast<double>(1 << (p + 1))) >= (1 << 15)) break;
  c.precision = p;
  quantize_weights(w, c);
  for (int32_t& v : c.k) v = static_cast<int16_t>(v);  // stored as int16, as torch stores them
  return c;
}

// One pass along `axis` (1 = width, 0 = height) of an [H, W, C] byte image: each output the
// rounded (1 << (precision - 1) added, then an arithmetic shift) weighted sum, clipped to 8 bits.
std::vector<uint8_t> fixed_point_pass(const std::vector<uint8_t>& in, int64_t h, int64_t w, int64_t ch, int axis,
                                      const AxisCoeffs& c) {
  const int64_t out = static_cast<int64_t>(c.first.size());
  const int64_t oh = axis == 1 ? h : out, ow = axis == 1 ? out : w;
  std::vector<uint8_t> dst(static_cast<size_t>(oh * ow * ch));
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t x = 0; x < ow; ++x) {
      const int64_t o = axis == 1 ? x : y;
      const int32_t* k = &c.k[static_cast<size_t>(o * c.ksize)];
      const int64_t first = c.first[static_cast<size_t>(o)], n = c.count[static_cast<size_t>(o)];
      for (int64_t q = 0; q < ch; ++q) {
        int64_t ss = int64_t{1} << (c.precision - 1);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t sy = axis == 1 ? y : first + j, sx = axis == 1 ? first + j : x;
          ss += static_cast<int64_t>(in[static_cast<size_t>((sy * w + sx) * ch + q)]) * k[j];
        }
        const int64_t v = ss >> c.precision;
        dst[static_cast<size_t>((y * ow + x) * ch + q)] = static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
      }
    }
  return dst;
}

// Horizontal pass first, then vertical, each skipped when its size does not change (as Pillow and
// torch's uint8 path).
std::vector<uint8_t> separable_resize(std::vector<uint8_t> img, int64_t h, int64_t w, int64_t ch, int64_t out_h,
                                      int64_t out_w, AxisCoeffs (*coeffs)(int64_t, int64_t)) {
  if (out_w != w) img = fixed_point_pass(img, h, w, ch, 1, coeffs(w, out_w));
  if (out_h != h) img = fixed_point_pass(img, h, out_w, ch, 0, coeffs(h, out_h));
  return img;
}

}  // namespace

Tensor resize_lanczos_pil(const Tensor& x, int64_t out_h, int64_t out_w) {
  VIDAX_CHECK(x.dim() == 3 && x.size(2) == 3 && x.dtype() == DType::U8,
              "resize_lanczos_pil: expects an [H, W, 3] U8 picture, got " << x.str());
  VIDAX_CHECK(out_h >= 1 && out_w >= 1, "resize_lanczos_pil: output size " << out_h << "x" << out_w);
  const Tensor src = x.to_host().contiguous();
  const int64_t h = src.size(0), w = src.size(1);
  const uint8_t* b = src.data<uint8_t>();  // view-write-ok: reads the picture
  const std::vector<uint8_t> img = separable_resize(std::vector<uint8_t>(b, b + h * w * 3), h, w, 3, out_h, out_w,
                                                   lanczos_coeffs);
  Tensor dst = Tensor::empty({out_h, out_w, 3}, DType::U8);
  std::copy(img.begin(), img.end(), dst.data<uint8_t>());
  return dst;
}

Tensor resize_bicubic_antialias_u8(const Tensor& x, int64_t out_h, int64_t out_w) {
  VIDAX_CHECK(x.dim() >= 2 && x.dtype() == DType::U8,
              "resize_bicubic_antialias_u8: expects a [..., H, W] U8 tensor, got " << x.str());
  VIDAX_CHECK(out_h >= 1 && out_w >= 1, "resize_bicubic_antialias_u8: output size " << out_h << "x" << out_w);
  const Tensor src = x.to_host().contiguous();
  const int64_t h = src.size(-2), w = src.size(-1), planes = src.numel() / std::max<int64_t>(h * w, 1);
  std::vector<int64_t> shape = src.shape();
  shape[shape.size() - 2] = out_h;
  shape[shape.size() - 1] = out_w;
  Tensor dst = Tensor::empty(shape, DType::U8);
  const uint8_t* b = src.data<uint8_t>();  // view-write-ok: reads the planes
  uint8_t* d = dst.data<uint8_t>();
  for (int64_t p = 0; p < planes; ++p) {
    const uint8_t* plane = b + p * h * w;
    const std::vector<uint8_t> r =
        separable_resize(std::vector<uint8_t>(plane, plane + h * w), h, w, 1, out_h, out_w, torch_bicubic_aa_coeffs);
    std::copy(r.begin(), r.end(), d + p * out_h * out_w);
  }
  return dst;
}

}  // namespace vidax::io
