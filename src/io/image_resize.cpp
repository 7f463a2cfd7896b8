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

constexpr int kPrecisionBits = 32 - 8 - 2;  // Pillow's PRECISION_BITS for 8-bit images

double sinc(double x) {
  if (x == 0.0) return 1.0;
  x *= 3.14159265358979323846;  // M_PI
  return std::sin(x) / x;
}

double lanczos3(double x) { return (-3.0 <= x && x < 3.0) ? sinc(x) * sinc(x / 3.0) : 0.0; }

// Pillow's precompute_coeffs + normalize_coeffs_8bpc for one axis: per output position the first
// input index, the tap count and the fixed-point weights.
struct AxisCoeffs {
  int64_t ksize = 0;
  std::vector<int64_t> first, count;
  std::vector<int32_t> k;  // [out, ksize]
};

AxisCoeffs lanczos_coeffs(int64_t in, int64_t out) {
  const double scale = static_cast<double>(in) / static_cast<double>(out);
  const double filterscale = scale < 1.0 ? 1.0 : scale;
  const double support = 3.0 * filterscale;
  AxisCoeffs c;
  c.ksize = static_cast<int64_t>(std::ceil(support)) * 2 + 1;
  c.first.resize(static_cast<size_t>(out));
  c.count.resize(static_cast<size_t>(out));
  c.k.assign(static_cast<size_t>(out * c.ksize), 0);
  std::vector<double> w(static_cast<size_t>(c.ksize));
  for (int64_t xx = 0; xx < out; ++xx) {
    const double center = (static_cast<double>(xx) + 0.5) * scale;
    const double ss = 1.0 / filterscale;
    int64_t xmin = static_cast<int64_t>(center - support + 0.5);  // C's truncating cast, as Pillow
    if (xmin < 0) xmin = 0;
    int64_t xmax = static_cast<int64_t>(center + support + 0.5);
    if (xmax > in) xmax = in;
    xmax -= xmin;
    double ww = 0.0;
    for (int64_t x = 0; x < xmax; ++x) {
      w[static_cast<size_t>(x)] = lanczos3((static_cast<double>(x + xmin) - center + 0.5) * ss);
      ww += w[static_cast<size_t>(x)];
    }
    for (int64_t x = 0; x < xmax; ++x) {
      double v = w[static_cast<size_t>(x)];
      if (ww != 0.0) v /= ww;
      const double f = v * static_cast<double>(1 << kPrecisionBits);
      c.k[static_cast<size_t>(xx * c.ksize + x)] = static_cast<int32_t>(v < 0 ? -0.5 + f : 0.5 + f);
    }
    c.first[static_cast<size_t>(xx)] = xmin;
    c.count[static_cast<size_t>(xx)] = xmax;
  }
  return c;
}

uint8_t clip8(int64_t ss) {
  const int64_t v = ss >> kPrecisionBits;  // arithmetic shift, as Pillow's clip8 lookup index
  return static_cast<uint8_t>(v < 0 ? 0 : (v > 255 ? 255 : v));
}

// One pass along `axis` (1 = width, 0 = height) of an [H, W, 3] byte image.
std::vector<uint8_t> lanczos_pass(const std::vector<uint8_t>& in, int64_t h, int64_t w, int axis, int64_t out) {
  const AxisCoeffs c = lanczos_coeffs(axis == 1 ? w : h, out);
  const int64_t oh = axis == 1 ? h : out, ow = axis == 1 ? out : w;
  std::vector<uint8_t> dst(static_cast<size_t>(oh * ow * 3));
  for (int64_t y = 0; y < oh; ++y)
    for (int64_t x = 0; x < ow; ++x) {
      const int64_t o = axis == 1 ? x : y;
      const int32_t* k = &c.k[static_cast<size_t>(o * c.ksize)];
      const int64_t first = c.first[static_cast<size_t>(o)], n = c.count[static_cast<size_t>(o)];
      for (int64_t ch = 0; ch < 3; ++ch) {
        int64_t ss = int64_t{1} << (kPrecisionBits - 1);
        for (int64_t j = 0; j < n; ++j) {
          const int64_t sy = axis == 1 ? y : first + j, sx = axis == 1 ? first + j : x;
          ss += static_cast<int64_t>(in[static_cast<size_t>((sy * w + sx) * 3 + ch)]) * k[j];
        }
        dst[static_cast<size_t>((y * ow + x) * 3 + ch)] = clip8(ss);
      }
    }
  return dst;
}

}  // namespace

Tensor resize_lanczos_pil(const Tensor& x, int64_t out_h, int64_t out_w) {
  VIDAX_CHECK(x.dim() == 3 && x.size(2) == 3 && x.dtype() == DType::U8,
              "resize_lanczos_pil: expects an [H, W, 3] U8 picture, got " << x.str());
  VIDAX_CHECK(out_h >= 1 && out_w >= 1, "resize_lanczos_pil: output size " << out_h << "x" << out_w);
  const Tensor src = x.to_host().contiguous();
  const int64_t h = src.size(0), w = src.size(1);
  const uint8_t* b = src.data<uint8_t>();  // view-write-ok: reads the picture
  std::vector<uint8_t> img(b, b + h * w * 3);
  if (out_w != w) img = lanczos_pass(img, h, w, 1, out_w);  // horizontal first, as Pillow
  if (out_h != h) img = lanczos_pass(img, h, out_w, 0, out_h);
  Tensor dst = Tensor::empty({out_h, out_w, 3}, DType::U8);
  std::copy(img.begin(), img.end(), dst.data<uint8_t>());
  return dst;
}

}  // namespace vidax::io
