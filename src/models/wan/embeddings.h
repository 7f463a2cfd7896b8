// Wan timestep embedding input (official sinusoidal_embedding_1d): computed on
// the host in float64 from the timestep values, then rounded to float32 as the
// reference's `.float()` does. Cos first: [cos(t*w_0..w_{h-1}), sin(...)],
// w_k = 10000^(-k/h), h = freq_dim / 2.
#pragma once
#include <vector>

#include "core/tensor.h"

namespace vidax::wan {

// F32 [B, freq_dim] on the CPU, one row per timestep.
Tensor timestep_sinusoid(const std::vector<double>& t, int64_t freq_dim);

}  // namespace vidax::wan
