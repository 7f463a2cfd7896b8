// The avx512 tier's fp32 micro-kernel (peak.h); compiled with AVX-512 flags (src/CMakeLists.txt).
#include <immintrin.h>

#include "backend/cpu/peak.h"

namespace vidax::cpu::peak {

double fp32_avx512(int64_t iters) {
  constexpr int kChains = 12;
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_set1_ps(static_cast<float>(c) * 1e-3f);
  const __m512 a = _mm512_set1_ps(0.999999f), b = _mm512_set1_ps(1e-7f);
  // Named accumulators (an array indexed in the loop was kept in memory by GCC: half the rate).
  __m512 a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], a4 = acc[4], a5 = acc[5], a6 = acc[6], a7 = acc[7],
         a8 = acc[8], a9 = acc[9], a10 = acc[10], a11 = acc[11];
  for (int64_t i = 0; i < iters; ++i) {
#define VIDAX_PEAK_STEP(x) x = _mm512_fmadd_ps(x, a, b)
    VIDAX_PEAK_STEP(a0); VIDAX_PEAK_STEP(a1); VIDAX_PEAK_STEP(a2); VIDAX_PEAK_STEP(a3);
    VIDAX_PEAK_STEP(a4); VIDAX_PEAK_STEP(a5); VIDAX_PEAK_STEP(a6); VIDAX_PEAK_STEP(a7);
    VIDAX_PEAK_STEP(a8); VIDAX_PEAK_STEP(a9); VIDAX_PEAK_STEP(a10); VIDAX_PEAK_STEP(a11);
#undef VIDAX_PEAK_STEP
  }
  acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3; acc[4] = a4; acc[5] = a5;
  acc[6] = a6; acc[7] = a7; acc[8] = a8; acc[9] = a9; acc[10] = a10; acc[11] = a11;
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  volatile float sink = _mm512_cvtss_f32(s);
  (void)sink;
  return static_cast<double>(iters) * kChains * 16 * 2;
}

}  // namespace vidax::cpu::peak
