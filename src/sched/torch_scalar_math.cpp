// torch's float expm1 is SLEEF's xexpm1f (double-float arithmetic, built with
// ENABLE_FMA_SP), emulated here exactly; log and exp come from MKL (see below).
// Every fused step is an explicit std::fma; nothing else may be contracted.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "sched/torch_scalar_math.h"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

namespace vidax::sched {
namespace {

// A double-float: the unevaluated sum x + y.
struct F2 {
  float x, y;
};

constexpr float kL2Uf = 0.693145751953125f;
constexpr float kL2Lf = 1.428606765330187045e-06f;
constexpr float kRLn2f = 1.442695040888963407359924681001892137426645954152985934135449406931f;

// cvtps2dq with the default rounding mode: nearest, ties to even.
int32_t rint_i(float v) { return static_cast<int32_t>(std::nearbyint(v)); }

float pow2i(int32_t q) {
  const uint32_t bits = static_cast<uint32_t>(q + 0x7f) << 23;
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}
float ldexp2(float d, int32_t e) { return (d * pow2i(e >> 1)) * pow2i(e - (e >> 1)); }

// df.h (FMA variants)
F2 dfadd2(F2 x, float y) {
  const float s = x.x + y, v = s - x.x;
  const float t = (x.x - (s - v)) + (y - v);
  return {s, t + x.y};
}
F2 dfadd2(F2 x, F2 y) {
  const float s = x.x + y.x, v = s - x.x;
  const float t = (x.x - (s - v)) + (y.x - v);
  return {s, t + (x.y + y.y)};
}
F2 dfadd(float x, F2 y) {
  const float s = x + y.x;
  return {s, ((x - s) + y.x) + y.y};
}
F2 dfmul(F2 x, float y) {
  const float s = x.x * y;
  return {s, std::fma(x.y, y, std::fma(x.x, y, -s))};
}
F2 dfmul(F2 x, F2 y) {
  const float s = x.x * y.x;
  return {s, std::fma(x.x, y.y, std::fma(x.y, y.x, std::fma(x.x, y.x, -s)))};
}
F2 dfsqu(F2 x) {
  const float s = x.x * x.x;
  return {s, std::fma(x.x + x.x, x.y, std::fma(x.x, x.x, -s))};
}

F2 expk2f(F2 d) {
  const float u0 = (d.x + d.y) * kRLn2f;
  const int32_t q = rint_i(u0);
  const float fq = static_cast<float>(q);
  F2 s = dfadd2(d, fq * -kL2Uf);
  s = dfadd2(s, fq * -kL2Lf);
  float u = +0.1980960224e-3f;
  u = std::fma(u, s.x, +0.1394256484e-2f);
  u = std::fma(u, s.x, +0.8333456703e-2f);
  u = std::fma(u, s.x, +0.4166637361e-1f);
  F2 t = dfadd2(dfmul(s, u), +0.166666659414234244790680580464e+0f);
  t = dfadd2(dfmul(s, t), 0.5f);
  t = dfadd2(s, dfmul(dfsqu(s), t));
  t = dfadd(1.0f, t);
  t.x = ldexp2(t.x, q);
  t.y = ldexp2(t.y, q);
  if (d.x < -104.0f) t = {0.0f, 0.0f};
  return t;
}

}  // namespace

// MKL VML's vsLn / vsExp, which torch's vml layer uses for float log and exp,
// cannot be reproduced bit for bit (closed source); the correctly rounded
// value is the closest portable stand-in (measured: log differs from torch on
// ~0.1% of inputs, exp on ~1%, by one ulp).
float torch_logf(float x) { return static_cast<float>(std::log(static_cast<double>(x))); }
float torch_expf(float x) { return static_cast<float>(std::exp(static_cast<double>(x))); }

float torch_expm1f(float a) {
  // The kernel's final selects, taken first (they overwrite the result anyway).
  if (std::isnan(a)) return a;
  if (a > 88.72283172607421875f) return std::numeric_limits<float>::infinity();
  if (a < -16.635532333438687426013570f) return -1.0f;
  if (a == 0.0f && std::signbit(a)) return -0.0f;
  const F2 d = dfadd2(expk2f(F2{a, 0.0f}), -1.0f);
  return d.x + d.y;
}

}  // namespace vidax::sched
