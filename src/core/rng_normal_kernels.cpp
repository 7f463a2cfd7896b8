// Exactness matters more than speed here: every multiply and add below is
// written as torch's compiled kernel rounds it. The compiler must not fuse
// anything on its own (this project builds with -march=native, where GCC's
// default -ffp-contract=fast would turn a*b+c into an fma), so contraction is
// switched off for this file and every fused step is an explicit std::fma.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "core/rng_normal_kernels.h"

#include "core/dtype.h"

#include <cmath>
#include <cstdint>
#include <cstring>

namespace vidax::rng_kernels {
namespace {

uint32_t bits(float f) { uint32_t u; std::memcpy(&u, &f, 4); return u; }
float from_bits(uint32_t u) { float f; std::memcpy(&f, &u, 4); return f; }

// c10::pi<double>; torch's float kernels use float(2.0f * pi<double>).
constexpr double kPi = 3.14159265358979323846;

}  // namespace

// avx_mathfun.h log256_ps, per lane. Which multiplies GCC fuses (verified
// against torch's outputs): every Horner step, y*z with the following "+ e*q1"
// (e*q1 itself rounded), "- z*0.5" and "+ e*q2".
float cephes_log_avx2(float x) {
  const bool invalid = x <= 0.0f;  // _CMP_LE_OS (false for NaN)
  x = std::fmax(x, from_bits(0x00800000u));  // _mm256_max_ps(x, min_norm): returns the 2nd operand on NaN
  int32_t imm0 = static_cast<int32_t>(bits(x) >> 23);
  x = from_bits((bits(x) & ~0x7f800000u) | bits(0.5f));
  imm0 -= 0x7f;
  float e = static_cast<float>(imm0);
  e = e + 1.0f;
  const bool lt = x < 0.707106781186547524f;
  const float tmp0 = lt ? x : 0.0f;
  x = x - 1.0f;
  e = e - (lt ? 1.0f : 0.0f);
  x = x + tmp0;
  const float z = x * x;
  float y = 7.0376836292E-2f;
  y = std::fma(y, x, -1.1514610310E-1f);
  y = std::fma(y, x, 1.1676998740E-1f);
  y = std::fma(y, x, -1.2420140846E-1f);
  y = std::fma(y, x, +1.4249322787E-1f);
  y = std::fma(y, x, -1.6668057665E-1f);
  y = std::fma(y, x, +2.0000714765E-1f);
  y = std::fma(y, x, -2.4999993993E-1f);
  y = std::fma(y, x, +3.3333331174E-1f);
  y = y * x;
  y = std::fma(y, z, e * -2.12194440e-4f);
  y = std::fma(-z, 0.5f, y);
  x = x + y;
  x = std::fma(e, 0.693359375f, x);
  if (invalid) return from_bits(bits(x) | 0xffffffffu);  // or with an all-ones mask: NaN
  return x;
}

// avx_mathfun.h sincos256_ps, per lane.
void cephes_sincos_avx2(float x, float* s, float* c) {
  uint32_t sign_sin = bits(x) & 0x80000000u;
  x = from_bits(bits(x) & 0x7fffffffu);
  float y = x * 1.27323954473516f;  // 4/pi
  int32_t j = static_cast<int32_t>(y);  // cvttps: truncation (inputs here are small and finite)
  j = (j + 1) & ~1;
  y = static_cast<float>(j);
  const uint32_t swap_sign_sin = static_cast<uint32_t>(j & 4) << 29;
  const bool poly_mask = (j & 2) == 0;
  // Extended precision range reduction x - y*pi/4 in three fused steps.
  x = std::fma(y, -0.78515625f, x);
  x = std::fma(y, -2.4187564849853515625e-4f, x);
  x = std::fma(y, -3.77489497744594108e-8f, x);
  const uint32_t sign_cos = static_cast<uint32_t>(~(j - 2) & 4) << 29;
  sign_sin ^= swap_sign_sin;

  const float z = x * x;
  float yc = std::fma(2.443315711809948E-005f, z, -1.388731625493765E-003f);
  yc = std::fma(yc, z, 4.166664568298827E-002f);
  yc = yc * z;
  yc = std::fma(yc, z, -(z * 0.5f));
  yc = yc + 1.0f;

  float ys = std::fma(-1.9515295891E-4f, z, 8.3321608736E-3f);
  ys = std::fma(ys, z, -1.6666654611E-1f);
  ys = ys * z;
  ys = std::fma(ys, x, x);

  // The kernel selects with and/andnot then adds the (zero) other half:
  // value-identical except that a -0 result becomes +0.
  const float sin_v = (poly_mask ? 0.0f : yc) + (poly_mask ? ys : 0.0f);
  const float cos_v = (yc - (poly_mask ? 0.0f : yc)) + (ys - (poly_mask ? ys : 0.0f));
  *s = from_bits(bits(sin_v) ^ sign_sin);
  *c = from_bits(bits(cos_v) ^ sign_cos);
}

void fill16_f32_avx2(float* d) {
  const float two_pi = static_cast<float>(2.0f * kPi);
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1.0f - d[j];
    const float u2 = d[j + 8];
    const float radius = std::sqrt(-2.0f * cephes_log_avx2(u1));
    const float theta = two_pi * u2;
    float s, c;
    cephes_sincos_avx2(theta, &s, &c);
    // _mm256_fmadd_ps(n, std=1, mean=0): the product n is already rounded;
    // adding +0 turns -0 into +0.
    d[j] = std::fma(radius * c, 1.0f, 0.0f);
    d[j + 8] = std::fma(radius * s, 1.0f, 0.0f);
  }
}

void fill16_f32_scalar(float* d) {
  for (int j = 0; j < 8; ++j) {
    const float u1 = 1.0f - d[j];
    const float u2 = d[j + 8];
    const float radius = std::sqrt(-2.0f * std::log(u1));
    const float theta = static_cast<float>(2.0f * kPi * static_cast<double>(u2));
    d[j] = std::fma(radius * std::cos(theta), 1.0f, 0.0f);
    d[j + 8] = std::fma(radius * std::sin(theta), 1.0f, 0.0f);
  }
}

void fill16_f64(double* d) {
  for (int j = 0; j < 8; ++j) {
    const double u1 = 1.0 - d[j];
    const double u2 = d[j + 8];
    const double radius = std::sqrt(-2.0 * std::log(u1));
    const double theta = 2.0f * kPi * u2;
    d[j] = std::fma(radius * std::cos(theta), 1.0, 0.0);
    d[j + 8] = std::fma(radius * std::sin(theta), 1.0, 0.0);
  }
}

void fill16_f16_v1_13(uint16_t* d) {
  auto h = [](float v) { return f32_to_f16(v); };  // c10::Half(float): RNE
  auto f = [](uint16_t v) { return f16_to_f32(v); };
  const double two_pi = 2.0f * kPi;  // 2.0f * c10::pi<double>: a double
  for (int j = 0; j < 8; ++j) {
    const uint16_t u1 = h(1.0f - f(d[j]));  // int - Half -> Half
    const uint16_t u2 = d[j + 8];
    const uint16_t radius = h(std::sqrt(-2.0f * std::log(f(u1))));  // std::log(float) via Half's operator float
    const uint16_t theta = h(static_cast<float>(two_pi * static_cast<double>(f(u2))));  // double * Half -> double
    // radius * cos (Half * float -> float) * std (1) + mean (0): -0 becomes +0.
    d[j] = h(f(radius) * std::cos(f(theta)) * 1.0f + 0.0f);
    d[j + 8] = h(f(radius) * std::sin(f(theta)) * 1.0f + 0.0f);
  }
}

void fill16_bf16_v1_13(uint16_t* d) {
  auto b = [](float v) { return f32_to_bf16(v); };  // c10::BFloat16(float): RNE
  auto f = [](uint16_t v) { return bf16_to_f32(v); };
  const double two_pi = 2.0f * kPi;
  for (int j = 0; j < 8; ++j) {
    const uint16_t u1 = b(1.0f - f(d[j]));
    const uint16_t u2 = d[j + 8];
    const uint16_t log_u1 = b(std::log(f(u1)));            // std::log(BFloat16) -> BFloat16
    const uint16_t minus_two_log = b(-2.0f * f(log_u1));   // int * BFloat16 -> BFloat16 (exact)
    const uint16_t radius = b(std::sqrt(f(minus_two_log)));
    const uint16_t theta = b(static_cast<float>(two_pi * static_cast<double>(f(u2))));
    const uint16_t c = b(std::cos(f(theta)));
    const uint16_t s = b(std::sin(f(theta)));
    // BFloat16 * BFloat16 * std (1) + mean (0), each step rounded; -0 becomes +0.
    d[j] = b(f(b(f(b(f(radius) * f(c))) * 1.0f)) + 0.0f);
    d[j + 8] = b(f(b(f(b(f(radius) * f(s))) * 1.0f)) + 0.0f);
  }
}

}  // namespace vidax::rng_kernels
