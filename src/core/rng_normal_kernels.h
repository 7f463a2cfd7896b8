// The Box-Muller transforms of torch's CPU normal_fill, on one block of 16
// uniforms in place: elements j and j+8 (j = 0..7) form a pair, u1 = 1 - d[j]
// feeds the radius, u2 = d[j+8] the angle, d[j] gets the cosine half and
// d[j+8] the sine half (aten/src/ATen/native/cpu/DistributionTemplates.h,
// NormalFill16). Only mean 0 / std 1 is needed (randn).
#pragma once

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

// The Cephes polynomial approximations themselves (exposed for tests).
float cephes_log_avx2(float x);
void cephes_sincos_avx2(float x, float* s, float* c);

}  // namespace vidax::rng_kernels
