#include "nn/parallel_cfg.h"

#include "backend/ops.h"

namespace vidax::nn {

std::pair<Tensor, Tensor> cfg_parallel_branches(dist::Communicator* cfg, const std::function<Tensor(int branch)>& run) {
  if (!cfg || cfg->size() == 1) {
    Tensor cond = run(0);
    return {cond, run(1)};
  }
  VIDAX_CHECK(cfg->size() == 2, "CFG parallelism: the cfg group has " << cfg->size() << " ranks, expected 2");
  const Tensor mine = run(cfg->rank()).contiguous();
  const Tensor both = cfg->all_gather(mine.unsqueeze(0), 0);  // [2, ...]: rank 0's (cond), rank 1's (uncond)
  return {ops::copy(both.select(0, 0)), ops::copy(both.select(0, 1))};
}

}  // namespace vidax::nn
