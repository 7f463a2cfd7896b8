// Parity kinds owned by the sampling layer (DESIGN.md par. 4, docs/sampling.md).
#pragma once

namespace vidax {
// rng.torch_cpu: TorchGenerator against torch.manual_seed + torch.randn.
void register_rng_parity_kinds();
namespace sched {
// sched.flow_unipc, sched.flow_euler, sched.flow_dpmpp; sched.torch_scalar_math
// (torch's float32 log/exp/expm1 the samplers' coefficients use); sched.ltx2 and
// sched.ltx2_euler (LTX-2's sigma schedule and Euler step).
void register_parity_kinds();
}  // namespace sched
}  // namespace vidax
