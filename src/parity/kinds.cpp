// The golden-file kinds `vidax parity` knows: one line per family.
#include "parity/parity.h"
#include "sched/parity_kinds.h"

namespace vidax::parity {

void register_builtin_kinds() {
  vidax::register_rng_parity_kinds();  // rng.torch_cpu
  vidax::sched::register_parity_kinds();  // sched.flow_unipc, sched.flow_euler, sched.flow_dpmpp
}

}  // namespace vidax::parity
