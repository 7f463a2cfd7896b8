// The golden-file kinds `vidax parity` knows: one line per family.
#include "models/wan/family.h"
#include "parity/parity.h"
#include "sched/parity_kinds.h"
#include "text/t5_parity_kind.h"

namespace vidax::parity {

void register_builtin_kinds() {
  vidax::register_rng_parity_kinds();     // rng.torch_cpu
  vidax::sched::register_parity_kinds();  // sched.flow_unipc, sched.flow_euler, sched.flow_dpmpp
  vidax::text::register_parity_kinds();   // t5.encoder
  vidax::wan::family().register_parity_kinds();  // wan.dit, wan.vae.*, wan.pipeline.t2v
}

}  // namespace vidax::parity
