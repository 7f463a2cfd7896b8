// The runners behind the parity kinds of this layer (registered by
// parity_kinds.cpp; separate so tests can call them without the registry).
#pragma once
#include "parity/parity.h"

namespace vidax {
// rng.torch_cpu: every output.randn.* / output.randn_seq.* tensor regenerated.
parity::Produced run_rng_torch_cpu(const parity::Golden& g, const parity::Options& opt);
namespace sched {
// sched.flow_unipc / sched.flow_dpmpp / sched.flow_euler: output.timesteps,
// output.sigmas and output.sample.<i> from input.latent and input.model_output.<i>.
parity::Produced run_flow_sampler(const parity::Golden& g, const parity::Options& opt);
// sched.torch_scalar_math: output.<fn> = torch's float32 <fn>(input.<fn>) for log, exp, expm1.
parity::Produced run_torch_scalar_math(const parity::Golden& g, const parity::Options& opt);
// sched.ltx2: output.sigmas.<i> = LTX2Scheduler.execute(**config.cases[i]) (ltx2_schedule.h);
// a case's keys are execute()'s arguments plus tokens (the latent's token count).
parity::Produced run_ltx2_schedule(const parity::Golden& g, const parity::Options& opt);
// sched.ltx2_euler: output.sigmas of config.schedule and output.sample.<i>, EulerDiffusionStep
// from input.sample with the model's denoised predictions input.denoised.<i>.
parity::Produced run_ltx2_euler(const parity::Golden& g, const parity::Options& opt);
}  // namespace sched
}  // namespace vidax
