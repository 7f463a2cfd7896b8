// How far a computed tensor is from the expected one, for every test: the parity contract's own
// measure (parity::compare, what `vidax parity` prints: max_abs, mean_abs, relative L2, absolute
// L2 for an all-zero reference), so a test's bound means what the CLI's does. A shape mismatch
// measures as infinity, so every bound fails and `note` names both shapes: never a comparison of
// a common prefix, never an index past the end. A NaN produced where the reference has a number
// makes rel_l2 NaN, which fails every `EXPECT_LE(rel_l2, bound)`.
#pragma once
#include <cmath>

#include "parity/parity.h"

namespace vidax::test {

using Diff = parity::Comparison;

inline Diff diff(const Tensor& expected, const Tensor& got) { return parity::compare("", expected, got, INFINITY); }
inline double rel_l2(const Tensor& expected, const Tensor& got) { return diff(expected, got).rel_l2; }

}  // namespace vidax::test
