// The avx512_bf16 tier's bf16 micro-kernel (peak.h): vdpbf16ps, each lane two bf16 products
// added to an f32 accumulator (4 FLOP per lane). Compiled with -mavx512bf16 (src/CMakeLists.txt).
#include <immintrin.h>

#include "backend/cpu/peak.h"

namespace vidax::cpu::peak {

double bf16_avx512(int64_t iters) {
  // 16 chains: vdpbf16ps needs more in flight than the FMA (measured on a Zen EPYC: 8 chains
  // 303-316, 12 421-435, 16 446-472, 24 443-464 GFLOP per CPU second).
  constexpr int kChains = 16;
  __m512 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm512_setzero_ps();
  const __m512bh a = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(2e-3f));
  const __m512bh b = _mm512_cvtne2ps_pbh(_mm512_set1_ps(1e-3f), _mm512_set1_ps(1e-3f));
  // Named accumulators (an array indexed in the loop was kept in memory by GCC: half the rate).
  __m512 a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], a4 = acc[4], a5 = acc[5], a6 = acc[6], a7 = acc[7],
         a8 = acc[8], a9 = acc[9], a10 = acc[10], a11 = acc[11], a12 = acc[12], a13 = acc[13], a14 = acc[14],
         a15 = acc[15];
  for (int64_t i = 0; i < iters; ++i) {
#define VIDAX_PEAK_STEP(x) x = _mm512_dpbf16_ps(x, a, b)
    VIDAX_PEAK_STEP(a0); VIDAX_PEAK_STEP(a1); VIDAX_PEAK_STEP(a2); VIDAX_PEAK_STEP(a3);
    VIDAX_PEAK_STEP(a4); VIDAX_PEAK_STEP(a5); VIDAX_PEAK_STEP(a6); VIDAX_PEAK_STEP(a7);
    VIDAX_PEAK_STEP(a8); VIDAX_PEAK_STEP(a9); VIDAX_PEAK_STEP(a10); VIDAX_PEAK_STEP(a11);
    VIDAX_PEAK_STEP(a12); VIDAX_PEAK_STEP(a13); VIDAX_PEAK_STEP(a14); VIDAX_PEAK_STEP(a15);
#undef VIDAX_PEAK_STEP
  }
  acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3; acc[4] = a4; acc[5] = a5;
  acc[6] = a6; acc[7] = a7; acc[8] = a8; acc[9] = a9; acc[10] = a10; acc[11] = a11;
  acc[12] = a12; acc[13] = a13; acc[14] = a14; acc[15] = a15;
  __m512 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm512_add_ps(s, acc[c]);
  volatile float sink = _mm512_cvtss_f32(s);
  (void)sink;
  return static_cast<double>(iters) * kChains * 16 * 4;
}

}  // namespace vidax::cpu::peak
