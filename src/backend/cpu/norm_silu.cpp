// ops::l2_norm_scale_silu for contiguous F32: per block of positions, the sum of squares over the
// channels in f64 (as l2_normalize's kernel), then per element the four ops' roundings in order:
// (float)(x / max(sqrt(sum), eps)), * (float)scale, * gamma[c], silu as the vector silu kernel.
// Each block's channel column is read whole before any of it is written, so out may alias x.
#include <algorithm>
#include <cmath>

#include "backend/cpu/common.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/vmath.h"

namespace vidax::cpu::VIDAX_KERNEL_NS {  // one copy per tier: isa.h, kernel_tiers.h

void l2_norm_scale_silu(const Tensor& x, const Tensor& gamma, double scale, double eps, Tensor& out) {
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / std::max<int64_t>(N * C, 1);
  if (x.numel() == 0) return;
  const std::vector<float> g = gamma.to_f32_vector();
  const float* xp = x.data<float>();
  float* op = out.data<float>();
  const float sc = static_cast<float>(scale);  // a Python scalar enters the f32 kernel as f32
  constexpr int64_t kBlock = 256;
  const int64_t blocks = (S + kBlock - 1) / kBlock;
#pragma omp parallel for schedule(static) if (x.numel() > 16384)
  for (int64_t item = 0; item < N * blocks; ++item) {
    const int64_t n = item / blocks, s0 = (item % blocks) * kBlock, ns = std::min(kBlock, S - s0);
    const float* xb = xp + n * C * S + s0;
    float* ob = op + n * C * S + s0;
    double norm[kBlock];
    std::fill(norm, norm + ns, 0.0);
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < ns; ++i) {
        const double v = xb[c * S + i];
        norm[i] += v * v;
      }
    for (int64_t i = 0; i < ns; ++i) norm[i] = std::max(std::sqrt(norm[i]), eps);
    for (int64_t c = 0; c < C; ++c) {
      const float* xr = xb + c * S;
      float* orow = ob + c * S;
      const float gc = g[static_cast<size_t>(c)];
      float y[kBlock];
      for (int64_t i = 0; i < ns; ++i) y[i] = static_cast<float>(static_cast<double>(xr[i]) / norm[i]) * sc * gc;
#if defined(__AVX512F__)
      const __m512 one = _mm512_set1_ps(1.0f);
      for (int64_t i = 0; i < ns; i += 16) {
        const __mmask16 k = ns - i >= 16 ? __mmask16(0xFFFF) : static_cast<__mmask16>((1u << (ns - i)) - 1u);
        const __m512 v = _mm512_maskz_loadu_ps(k, y + i);
        const __m512 r = _mm512_div_ps(v, _mm512_add_ps(one, vmath::exp512(_mm512_sub_ps(_mm512_setzero_ps(), v))));
        _mm512_mask_storeu_ps(orow + i, k, r);
      }
#else
      for (int64_t i = 0; i < ns; ++i) orow[i] = y[i] / (1.0f + std::exp(-y[i]));
#endif
    }
  }
}

}  // namespace vidax::cpu::VIDAX_KERNEL_NS
