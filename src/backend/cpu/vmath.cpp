// GCC 12 false positive inside its AVX-512 headers (_mm512_undefined_* operands of
// _mm512_min_ps / _mm512_max_ps), as in vmath.h.
#pragma GCC diagnostic ignored "-Wuninitialized"
#include "backend/cpu/vmath.h"

#include <cmath>

#if defined(__AVX512F__)

namespace vidax::cpu::vmath {

__attribute__((noinline)) __m512 gelu_tanh_ps(__m512 v) {
  const __m512 beta = _mm512_set1_ps(static_cast<float>(M_SQRT2 * M_2_SQRTPI * 0.5));
  const __m512 kappa = _mm512_set1_ps(0.044715f);
  const __m512 cube = _mm512_mul_ps(_mm512_mul_ps(v, v), v);
  const __m512 inner = _mm512_mul_ps(beta, _mm512_add_ps(v, _mm512_mul_ps(kappa, cube)));
  // 0.5 x (1 + tanh(u)) = x / (1 + exp(-2u)): one exp, no 1 + tanh cancellation for x < 0
  // (within 3 ulp of the exact value where torch's own form loses digits).
  return _mm512_div_ps(v, _mm512_add_ps(_mm512_set1_ps(1.0f), exp512(_mm512_mul_ps(_mm512_set1_ps(-2.0f), inner))));
}

__attribute__((noinline)) __m512 gelu_erf_ps(__m512 v) {
  const __m512 r2 = _mm512_set1_ps(static_cast<float>(M_SQRT1_2));
  return _mm512_mul_ps(_mm512_mul_ps(_mm512_set1_ps(0.5f), v),
                       _mm512_add_ps(_mm512_set1_ps(1.0f), erf512(_mm512_mul_ps(v, r2))));
}

}  // namespace vidax::cpu::vmath

#endif
