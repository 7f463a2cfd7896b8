// The CPU backend: runs every op now, on host memory, with OpenMP threads.
// Kernels are grouped by kind in this folder (elementwise, norms, gemm,
// attention, conv, movement); this class only routes to them.
#pragma once
#include "backend/backend.h"

namespace vidax::cpu {

Backend& cpu_backend();

}  // namespace vidax::cpu
