// float32 log / exp / expm1 as torch's x86-64 CPU kernels compute them for
// float tensors (including the 0-dim ones the samplers' coefficients are).
// torch routes float exp and log to MKL VML (vsExp, vsLn) and expm1 to SLEEF
// (Sleef_expm1f16_u10; its vml layer keeps expm1 off MKL):
// - torch_expm1f emulates SLEEF bit for bit (glibc's expm1f differs on ~10%);
// - torch_logf / torch_expf are correctly rounded, MKL's results differ from
//   them by one ulp on ~0.1% (log) and ~1% (exp) of inputs.
#pragma once

namespace vidax::sched {

float torch_logf(float x);
float torch_expf(float x);
float torch_expm1f(float x);

// The flow solvers' lambda = log(alpha) - log(sigma), alpha = 1 - sigma, in float32
// as the reference computes it (+inf at sigma 0, -inf at sigma 1).
inline float flow_lambda(float sigma) { return torch_logf(1.0f - sigma) - torch_logf(sigma); }

}  // namespace vidax::sched
