// The Box-Muller transforms of torch's CPU normal_fill, on one block of 16
// uniforms in place: elements j and j+8 (j = 0..7) form a pair, u1 = 1 - d[j]
// feeds the radius, u2 = d[j+8] the angle, d[j] gets the cosine half and
// d[j+8] the sine half (aten/src/ATen/native/cpu/DistributionTemplates.h,
// NormalFill16). Only mean 0 / std 1 is needed (randn).
#pragma once
#include <cstdint>

namespace vidax::rng_kernels {

// x86 wheels (also on AVX-512 CPUs: normal_stub has no AVX-512 entry, so the
// AVX2 build runs): Cephes log/sincos from avx_mathfun.h with the fused
// multiply-adds GCC contracts when compiling those intrinsics with -mfma.
// Emulated lane by lane with explicit fmaf, so it is exact on any CPU.
void fill16_f32_avx2(float* d);

// Generic scalar template (ATEN_CPU_CAPABILITY=default, aarch64): libm
// logf/cosf/sinf in float with theta computed in double then rounded.
void fill16_f32_scalar(float* d);

// double: always the scalar template, libm log/cos/sin in double.
void fill16_f64(double* d);

// torch 1.13's normal_fill_16<c10::Half> / <c10::BFloat16>: the generic
// template instantiated with the reduced type, so c10's operator overloads
// decide where each intermediate is rounded (stored values are the dtype's
// bits). Same code in the AVX2 and the default build (no fusable a*b+c).
//  Half: libm logf/sqrtf/cosf/sinf in float; u1, radius, theta rounded to half;
//        theta = (double)(2*pi) * u2 in double, then double -> float -> half;
//        the product radius * cos stays float and is rounded once at the store.
//  BFloat16: BFloat16-math.h's std::log/sqrt/cos/sin overloads return
//        BFloat16, and BFloat16 * BFloat16 rounds, so log, sqrt, cos/sin and
//        the product are each rounded to bf16.
void fill16_f16_v1_13(uint16_t* d);
void fill16_bf16_v1_13(uint16_t* d);

// The Cephes polynomial approximations themselves (exposed for tests).
float cephes_log_avx2(float x);
void cephes_sincos_avx2(float x, float* s, float* c);

}  // namespace vidax::rng_kernels
