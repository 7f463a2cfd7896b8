// conv2d / conv3d as im2col + GEMM, tiled over output positions so the column
// buffer stays bounded (a few MB) whatever the video size. conv2d runs as a
// conv3d with a depth of 1. Groups come from the weight's shape (C / w.size(1)).
// causal_conv3d runs the same loop over input frames that live in several tensors
// (cached frames + the current chunk), with zero frames in front only.
#include <algorithm>
#include <cstring>

#include "backend/cpu/common.h"
#include "backend/cpu/small_ops.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/kernels.h"

namespace vidax::cpu {

namespace {
int64_t g_column_budget = int64_t(8) << 20;  // bytes of im2col columns per GEMM

// The input's frames, possibly split along time over several tensors: plane(n, c, t) is frame t
// of channel c as an H x W fp32 plane; t indexes the concatenation of the segments.
struct Frames {
  int64_t C = 0, T = 0, HW = 0;
  std::vector<Staged<float>> staged;
  std::vector<int64_t> seg_frames;
  std::vector<std::pair<size_t, int64_t>> where;  // per frame: (segment, frame within it)

  void add(const Tensor& x, int64_t frames, int64_t hw) {
    staged.push_back(stage_f32(x));
    seg_frames.push_back(frames);
    for (int64_t t = 0; t < frames; ++t) where.emplace_back(staged.size() - 1, t);
    T += frames;
    HW = hw;
  }
  const float* plane(int64_t n, int64_t c, int64_t t) const {
    const auto [s, lt] = where[static_cast<size_t>(t)];
    return staged[s].ptr + ((n * C + c) * seg_frames[s] + lt) * HW;
  }
};

struct ConvGeometry {
  int64_t N, C, O, Cg, G, Og;
  int64_t H, W, kT, kH, kW, To, Ho, Wo, sT, sH, sW, pT, pH, pW;
};

// im2col of one output row segment for one kernel tap: d[k] = x[ih, (ow + k) * sW - pW + kw], zero
// outside the plane. The in-range part is one copy (stride 1) or a strided gather.
inline void gather_row(const float* xr, int64_t W, int64_t ow, int64_t run, int64_t sW, int64_t pW, int64_t kw,
                       float* d) {
  const int64_t base = ow * sW - pW + kw;  // input column of k = 0
  // First k with base + k sW >= 0, first k with base + k sW >= W.
  const int64_t lo = std::clamp<int64_t>(base >= 0 ? 0 : (-base + sW - 1) / sW, 0, run);
  const int64_t hi = std::clamp<int64_t>(base >= W ? 0 : (W - base + sW - 1) / sW, lo, run);
  std::fill(d, d + lo, 0.0f);
  if (sW == 1) {
    std::memcpy(d + lo, xr + base + lo, static_cast<size_t>(hi - lo) * sizeof(float));
  } else {
    for (int64_t k = lo; k < hi; ++k) d[k] = xr[base + k * sW];
  }
  std::fill(d + hi, d + run, 0.0f);
}

// out = conv + bias, then + residual (when given; out's shape) as its own rounding, like add().
void conv_frames(const Frames& xf, const ConvGeometry& g, const Tensor& w, const std::optional<Tensor>& bias,
                 const std::optional<Tensor>& residual, Tensor& out) {
  const int64_t P = g.To * g.Ho * g.Wo, kvol = g.kT * g.kH * g.kW, Kg = g.Cg * kvol;
  Staged<float> ws = stage_f32(w);
  const bool direct = out.dtype() == DType::F32;
  std::vector<float> ybuf;
  float* y = direct ? out.data<float>() : (ybuf.resize(static_cast<size_t>(out.numel())), ybuf.data());

  const int64_t tile =
      std::clamp<int64_t>(g_column_budget / (4 * std::max<int64_t>(Kg, 1)), 1, std::max<int64_t>(P, 1));
  std::vector<float> col(static_cast<size_t>(Kg * std::min(tile, P)));
  for (int64_t n = 0; n < g.N; ++n)
    for (int64_t gi = 0; gi < g.G; ++gi)
      for (int64_t p0 = 0; p0 < P; p0 += tile) {
        const int64_t np = std::min(tile, P - p0);
        // col[r, p]: r = (c, kt, kh, kw) of this group, p = output position p0 + p.
#pragma omp parallel for schedule(static) if (Kg * np > kMinParallelElements)
        for (int64_t r = 0; r < Kg; ++r) {
          const int64_t c = gi * g.Cg + r / kvol, kk = r % kvol;
          const int64_t kt = kk / (g.kH * g.kW), kh = (kk / g.kW) % g.kH, kw = kk % g.kW;
          float* dst = col.data() + r * np;
          // Walk output positions as (ot, oh, ow) counters: no divisions per element.
          int64_t ot = p0 / (g.Wo * g.Ho), oh = (p0 / g.Wo) % g.Ho, ow = p0 % g.Wo;
          for (int64_t p = 0; p < np;) {
            const int64_t run = std::min(g.Wo - ow, np - p);  // rest of this output row
            const int64_t it = ot * g.sT - g.pT + kt, ih = oh * g.sH - g.pH + kh;
            float* d = dst + p;
            if (it < 0 || it >= xf.T || ih < 0 || ih >= g.H) {
              std::fill(d, d + run, 0.0f);
            } else {
              gather_row(xf.plane(n, c, it) + ih * g.W, g.W, ow, run, g.sW, g.pW, kw, d);
            }
            p += run;
            ow = 0;
            if (++oh == g.Ho) { oh = 0; ++ot; }
          }
        }
        sgemm(g.Og, np, Kg, ws.ptr + gi * g.Og * Kg, Kg, col.data(), np, false, y + (n * g.O + gi * g.Og) * P + p0,
              P);
      }
  if (bias) {
    const std::vector<float> b = bias->to_f32_vector();
#pragma omp parallel for schedule(static) if (g.N * g.O * P > kMinParallelElements)
    for (int64_t no = 0; no < g.N * g.O; ++no)
      for (int64_t p = 0; p < P; ++p) y[no * P + p] += b[static_cast<size_t>(no % g.O)];
  }
  if (residual) {
    Staged<float> rs = stage_f32(*residual);
#pragma omp parallel for schedule(static) if (g.N * g.O * P > kMinParallelElements)
    for (int64_t no = 0; no < g.N * g.O; ++no)
      for (int64_t p = 0; p < P; ++p) y[no * P + p] += rs.ptr[no * P + p];
  }
  if (!direct) {
    const int64_t oes = static_cast<int64_t>(dtype_size(out.dtype()));
#pragma omp parallel for schedule(static) if (g.N * g.O * P > kMinParallelElements)
    for (int64_t no = 0; no < g.N * g.O; ++no) store_row(y + no * P, P, byte_ptr_mut(out) + no * P * oes, out.dtype());
  }
}
}  // namespace

void set_conv_column_budget(int64_t bytes) { g_column_budget = std::max<int64_t>(bytes, 4); }

void conv_nd(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, const std::vector<int64_t>& stride,
             const std::vector<int64_t>& padding, Tensor& out) {
  if (out.numel() == 0) return;
  const size_t S = stride.size();  // 2 or 3 spatial dims; lift to 3
  auto sp = [&](const Tensor& t, size_t i) -> int64_t { return i + S < 3 ? 1 : t.size(static_cast<int64_t>(2 + i + S - 3)); };
  auto pr = [&](const std::vector<int64_t>& v, size_t i, int64_t dflt) { return i + S < 3 ? dflt : v[i + S - 3]; };
  ConvGeometry g{};
  g.N = x.size(0), g.C = x.size(1), g.O = w.size(0), g.Cg = w.size(1), g.G = g.C / g.Cg, g.Og = g.O / g.G;
  g.H = sp(x, 1), g.W = sp(x, 2);
  g.kT = sp(w, 0), g.kH = sp(w, 1), g.kW = sp(w, 2);
  g.To = sp(out, 0), g.Ho = sp(out, 1), g.Wo = sp(out, 2);
  g.sT = pr(stride, 0, 1), g.sH = pr(stride, 1, 1), g.sW = pr(stride, 2, 1);
  g.pT = pr(padding, 0, 0), g.pH = pr(padding, 1, 0), g.pW = pr(padding, 2, 0);
  Frames xf;
  xf.C = g.C;
  xf.add(x, sp(x, 0), g.H * g.W);
  conv_frames(xf, g, w, bias, std::nullopt, out);
}

void causal_conv3d(const std::vector<Tensor>& xs, const Tensor& w, const std::optional<Tensor>& bias,
                   std::array<int64_t, 3> stride, std::array<int64_t, 3> padding, const std::optional<Tensor>& residual,
                   Tensor& out) {
  if (out.numel() == 0) return;
  const Tensor& x0 = xs.front();
  ConvGeometry g{};
  g.N = x0.size(0), g.C = x0.size(1), g.O = w.size(0), g.Cg = w.size(1), g.G = g.C / g.Cg, g.Og = g.O / g.G;
  g.H = x0.size(3), g.W = x0.size(4);
  g.kT = w.size(2), g.kH = w.size(3), g.kW = w.size(4);
  g.To = out.size(2), g.Ho = out.size(3), g.Wo = out.size(4);
  g.sT = stride[0], g.sH = stride[1], g.sW = stride[2];
  g.pT = padding[0], g.pH = padding[1], g.pW = padding[2];  // pT: front frames only (no frame past the end is read)
  Frames xf;
  xf.C = g.C;
  for (const Tensor& x : xs) xf.add(x, x.size(2), g.H * g.W);
  conv_frames(xf, g, w, bias, residual, out);
}

}  // namespace vidax::cpu
