// conv2d / conv3d as im2col + GEMM, tiled over output positions so the column
// buffer stays bounded (a few MB) whatever the video size. conv2d runs as a
// conv3d with a depth of 1. Groups come from the weight's shape (C / w.size(1)).
#include <algorithm>

#include "backend/cpu/common.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/kernels.h"

namespace vidax::cpu {

namespace {
int64_t g_column_budget = int64_t(8) << 20;  // bytes of im2col columns per GEMM
}  // namespace

void set_conv_column_budget(int64_t bytes) { g_column_budget = std::max<int64_t>(bytes, 4); }

void conv_nd(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, const std::vector<int64_t>& stride,
             const std::vector<int64_t>& padding, Tensor& out) {
  if (out.numel() == 0) return;
  const size_t S = stride.size();  // 2 or 3 spatial dims; lift to 3
  auto sp = [&](const Tensor& t, size_t i) -> int64_t { return i + S < 3 ? 1 : t.size(static_cast<int64_t>(2 + i + S - 3)); };
  auto pr = [&](const std::vector<int64_t>& v, size_t i, int64_t dflt) { return i + S < 3 ? dflt : v[i + S - 3]; };
  const int64_t N = x.size(0), C = x.size(1), O = w.size(0), Cg = w.size(1), G = C / Cg, Og = O / G;
  const int64_t T = sp(x, 0), H = sp(x, 1), W = sp(x, 2);
  const int64_t kT = sp(w, 0), kH = sp(w, 1), kW = sp(w, 2);
  const int64_t To = sp(out, 0), Ho = sp(out, 1), Wo = sp(out, 2);
  const int64_t sT = pr(stride, 0, 1), sH = pr(stride, 1, 1), sW = pr(stride, 2, 1);
  const int64_t pT = pr(padding, 0, 0), pH = pr(padding, 1, 0), pW = pr(padding, 2, 0);
  const int64_t P = To * Ho * Wo, Kg = Cg * kT * kH * kW, kvol = kT * kH * kW;

  Staged<float> xs = stage_f32(x), ws = stage_f32(w);
  const bool direct = out.dtype() == DType::F32;
  std::vector<float> ybuf;
  float* y = direct ? out.data<float>() : (ybuf.resize(static_cast<size_t>(out.numel())), ybuf.data());

  const int64_t tile =
      std::clamp<int64_t>(g_column_budget / (4 * std::max<int64_t>(Kg, 1)), 1, std::max<int64_t>(P, 1));
  std::vector<float> col(static_cast<size_t>(Kg * std::min(tile, P)));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g)
      for (int64_t p0 = 0; p0 < P; p0 += tile) {
        const int64_t np = std::min(tile, P - p0);
        // col[r, p]: r = (c, kt, kh, kw) of this group, p = output position p0 + p.
#pragma omp parallel for schedule(static)
        for (int64_t r = 0; r < Kg; ++r) {
          const int64_t c = g * Cg + r / kvol, kk = r % kvol;
          const int64_t kt = kk / (kH * kW), kh = (kk / kW) % kH, kw = kk % kW;
          const float* xc = xs.ptr + (n * C + c) * T * H * W;
          float* dst = col.data() + r * np;
          // Walk output positions as (ot, oh, ow) counters: no divisions per element,
          // and for stride 1 the in-range part of each output row is one copy.
          int64_t ot = p0 / (Wo * Ho), oh = (p0 / Wo) % Ho, ow = p0 % Wo;
          for (int64_t p = 0; p < np;) {
            const int64_t run = std::min(Wo - ow, np - p);  // rest of this output row
            const int64_t it = ot * sT - pT + kt, ih = oh * sH - pH + kh;
            float* d = dst + p;
            if (it < 0 || it >= T || ih < 0 || ih >= H) {
              std::fill(d, d + run, 0.0f);
            } else {
              const float* xr = xc + (it * H + ih) * W;
              for (int64_t k = 0; k < run; ++k) {
                const int64_t iw = (ow + k) * sW - pW + kw;
                d[k] = iw >= 0 && iw < W ? xr[iw] : 0.0f;
              }
            }
            p += run;
            ow = 0;
            if (++oh == Ho) { oh = 0; ++ot; }
          }
        }
        sgemm(Og, np, Kg, ws.ptr + g * Og * Kg, Kg, col.data(), np, false, y + (n * O + g * Og) * P + p0, P);
      }
  if (bias) {
    const std::vector<float> b = bias->to_f32_vector();
#pragma omp parallel for schedule(static)
    for (int64_t no = 0; no < N * O; ++no)
      for (int64_t p = 0; p < P; ++p) y[no * P + p] += b[static_cast<size_t>(no % O)];
  }
  if (!direct) {
    const int64_t oes = static_cast<int64_t>(dtype_size(out.dtype()));
#pragma omp parallel for schedule(static)
    for (int64_t no = 0; no < N * O; ++no) store_row(y + no * P, P, byte_ptr_mut(out) + no * P * oes, out.dtype());
  }
}

}  // namespace vidax::cpu
