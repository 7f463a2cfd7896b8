// The tensor operations of the samplers, one rounding each, in the order the
// PyTorch reference evaluates its expressions (left to right; a float32 0-dim
// coefficient times a tensor is one float32 multiply). Thin wrappers over the
// backend op set so the samplers run on any device.
#pragma once
#include "backend/ops.h"
#include "core/tensor.h"

namespace vidax::sched::lm {

// c * x with a float32 coefficient.
inline Tensor mul(float c, const Tensor& x) { return ops::scale(x, static_cast<double>(c)); }
inline Tensor add(const Tensor& a, const Tensor& b) { return ops::add(a, b); }
inline Tensor sub(const Tensor& a, const Tensor& b) { return ops::sub(a, b); }
// x + c with a float32 scalar (the reference's "tensor - 0-dim tensor" / "0 + tensor":
// value-preserving except for the sign of zero, and NaN when c is NaN).
inline Tensor add(const Tensor& x, float c) { return ops::add_scalar(x, static_cast<double>(c)); }
// x / c, a true division (torch does not turn it into a reciprocal multiply).
inline Tensor div(const Tensor& x, float c) {
  return ops::div(x, Tensor::full({1}, static_cast<double>(c), x.dtype()));
}

}  // namespace vidax::sched::lm
