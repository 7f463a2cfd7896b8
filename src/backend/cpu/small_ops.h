// When an op is too small for an OpenMP region.
#pragma once
#include <cstdint>

namespace vidax::cpu {

// Below this many elements (or multiply-adds) an op runs on the calling thread: opening an
// OpenMP region (waking and joining the team) costs more than the work, several times more
// on an oversubscribed host (measured: docs/benchmarks.md, "Small ops"). Most kernels
// already used 16384-65536 for their `if` clauses; the ones that had none use this.
constexpr int64_t kMinParallelElements = 16384;

}  // namespace vidax::cpu
