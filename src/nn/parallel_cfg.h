// CFG parallelism (shared/reference/parallelism-and-rng.md A.4; docs/parallelism.md): the
// conditional and the unconditional forward of a guidance step run on the two ranks of the
// cfg group, and one all-gather per step gives both predictions to every rank, so each rank
// applies the guidance and the sampler step itself (identically: the latents stay replicated).
#pragma once
#include <functional>
#include <utility>

#include "core/tensor.h"
#include "dist/communicator.h"

namespace vidax::nn {

// run(0) = the conditional prediction, run(1) = the unconditional one. cfg == nullptr or a group
// of 1: both run here, in that order. A group of 2: rank b runs run(b) only, then one exchange.
// Returns {cond, uncond} on every rank.
std::pair<Tensor, Tensor> cfg_parallel_branches(dist::Communicator* cfg, const std::function<Tensor(int branch)>& run);

}  // namespace vidax::nn
