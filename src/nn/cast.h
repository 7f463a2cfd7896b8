// Visible dtype changes (DESIGN.md principle 3): every cast in model code goes
// through here so a reader (and the recorder) sees each one as an op.
#pragma once
#include "backend/ops.h"

namespace vidax::nn {

// x itself when it already has `dtype` (no op), else ops::cast (one op).
inline Tensor to_dtype(const Tensor& x, DType dtype) { return x.dtype() == dtype ? x : ops::cast(x, dtype); }

}  // namespace vidax::nn
