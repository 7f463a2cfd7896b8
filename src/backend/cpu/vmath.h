// AVX-512 float math for the kernels: exp, tanh, erf on 16 lanes, each
// within about 2 ulp of the correctly rounded result (Cephes polynomials),
// with IEEE edge cases: exp(-inf) = 0, exp(x > ln FLT_MAX) = inf, NaN in = NaN out.
#pragma once
// GCC 12 warns inside its own AVX-512 headers (helpers built on _mm512_undefined_*):
// a known false positive, silenced for the kernels that use these intrinsics.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <cstdint>

#include "backend/cpu/isa.h"

#if defined(__AVX512F__)

namespace vidax::cpu::vmath {

inline namespace VIDAX_ISA_NS {  // isa.h: one copy per instruction set

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

// erf on 16 lanes, within 1.7 ulp of the correctly rounded result (measured against
// math.erf on a dense sweep of [-5, 5] when the coefficients were fitted):
// |x| <= 1.25: x + x * P(x^2) (P a degree-9 fit of erf(x)/x - 1);
// 1.25 < |x| < 4: 1 - exp(Q(|x| - 2.5)) (Q a degree-10 fit of log(erfc)); |x| >= 4: +-1.
inline __m512 erf512(__m512 x) {
  const __m512 ax = _mm512_abs_ps(x);
  const __m512 s = _mm512_mul_ps(x, x);
  __m512 p = _mm512_set1_ps(-8.140619200958099e-08f);
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(1.404139425176254e-06f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-1.4504554201266728e-05f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(0.00012009798228973523f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-0.0008545232121832669f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(0.005223848391324282f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-0.026866139844059944f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(0.11283791065216064f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(-0.37612637877464294f));
  p = _mm512_fmadd_ps(p, s, _mm512_set1_ps(0.12837916612625122f));
  const __m512 small = _mm512_fmadd_ps(p, x, x);
  const __m512 t = _mm512_sub_ps(ax, _mm512_set1_ps(2.5f));
  __m512 q = _mm512_set1_ps(-1.824571249642304e-08f);
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-9.545701118440775e-08f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(1.7510486713945284e-06f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-1.2863008123531472e-05f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(7.707488111918792e-05f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-0.00042085020686499774f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(0.0021654467564076185f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-0.010858098976314068f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-0.9438937306404114f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-5.352680683135986f));
  q = _mm512_fmadd_ps(q, t, _mm512_set1_ps(-7.806815147399902f));
  __m512 big = _mm512_sub_ps(_mm512_set1_ps(1.0f), exp512(q));
  big = _mm512_mask_mov_ps(big, _mm512_cmp_ps_mask(ax, _mm512_set1_ps(4.0f), _CMP_GE_OQ), _mm512_set1_ps(1.0f));
  // copy x's sign onto |erf|
  big = _mm512_castsi512_ps(_mm512_or_si512(_mm512_castps_si512(big),
                                            _mm512_and_si512(_mm512_castps_si512(x), _mm512_set1_epi32(INT32_MIN))));
  // NaN: the small branch propagates it (|NaN| <= 1.25 is false, so pick by "not big").
  const __mmask16 use_big = _mm512_cmp_ps_mask(ax, _mm512_set1_ps(1.25f), _CMP_GT_OQ);
  return _mm512_mask_blend_ps(use_big, small, big);
}

}  // inline namespace VIDAX_ISA_NS

// GELU on 16 lanes, out of line (vmath.cpp) so that every caller (the elementwise op and the
// GEMM epilogue of ops::linear_gelu) runs the same instructions and gets the same bits.
// tanh form, torch: 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3))); erf form: 0.5 x (1 + erf(x / sqrt(2))).
__m512 gelu_tanh_ps(__m512 x);
__m512 gelu_erf_ps(__m512 x);

}  // namespace vidax::cpu::vmath

#endif
