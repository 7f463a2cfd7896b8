#include "sched/parity_kinds.h"

#include "sched/parity_runners.h"

namespace vidax {

void register_rng_parity_kinds() { parity::register_kind("rng.torch_cpu", run_rng_torch_cpu); }

namespace sched {
void register_parity_kinds() {
  for (const char* kind : {"sched.flow_unipc", "sched.flow_dpmpp", "sched.flow_euler", "sched.flow_step_distill",
                           "sched.flow_match_discrete"})
    parity::register_kind(kind, run_flow_sampler);
  parity::register_kind("sched.torch_scalar_math", run_torch_scalar_math);
  parity::register_kind("sched.ltx2", run_ltx2_schedule);
  parity::register_kind("sched.ltx2_euler", run_ltx2_euler);
}
}  // namespace sched

}  // namespace vidax
