// Sigma / timestep schedules of the flow-matching samplers, computed in the
// exact dtype sequence of the reference code (numpy float64, then torch
// float32): this is where bit-exactness of the timesteps lives.
#pragma once
#include <cstdint>
#include <vector>

namespace vidax::sched {

// numpy.linspace(start, stop, num, endpoint=True) in float64, bit for bit:
// y[k] = k * ((stop - start) / (num - 1)) + start, y[num-1] = stop.
std::vector<double> np_linspace(double start, double stop, int64_t num);

// The flow shift s' = shift * s / (1 + (shift - 1) * s), evaluated as the
// reference does (left to right, each step rounded in the given type).
double shift_sigma_f64(double sigma, double shift);
float shift_sigma_f32(float sigma, float shift);

// A denoising schedule: sigmas[0..N] (float32 values, sigmas[N] = 0) and the
// N timesteps fed to the model. Integer schedules (Wan's solvers) truncate
// sigma * num_train_timesteps to int64; diffusers' Euler keeps float32.
struct FlowSchedule {
  std::vector<float> sigmas;       // N + 1
  std::vector<double> timesteps;   // N, the values the model sees (exact in double)
  bool integer_timesteps = false;  // reference dtype: int64 (true) or float32 (false)
  int64_t num_steps() const { return static_cast<int64_t>(timesteps.size()); }
};

// Wan2.1 FlowUniPCMultistepScheduler(shift=1).set_timesteps(N, shift=shift):
// linspace(float32(0.999), 0, N+1)[:N] in float64, shifted in float64.
FlowSchedule wan_unipc_schedule(int64_t steps, double shift, int64_t num_train_timesteps);

// diffusers UniPCMultistepScheduler(use_flow_sigmas=True, flow_shift=shift), as
// diffusers' WanPipeline uses it: shifted linspace(1, 1/T, N+1)[:N] in float64,
// sigma_0 -= 1e-6 when within 1e-6 of 1, truncated int64 timesteps.
FlowSchedule diffusers_unipc_flow_schedule(int64_t steps, double shift, int64_t num_train_timesteps);

// Wan2.1 dpm++: get_sampling_sigmas(N, shift) = shifted linspace(1, 0, N+1)[:N],
// passed to FlowDPMSolverMultistepScheduler(shift=1).set_timesteps(sigmas=...).
FlowSchedule wan_dpmpp_schedule(int64_t steps, double shift, int64_t num_train_timesteps);

// diffusers FlowMatchEulerDiscreteScheduler(shift=shift).set_timesteps(N):
// float32 training table shifted once at construction, its ends re-spread in
// float64 and shifted a second time (as diffusers does), float32 timesteps.
FlowSchedule diffusers_euler_schedule(int64_t steps, double shift, int64_t num_train_timesteps);

// LightX2V's WanStepDistillScheduler (the sampler of the Wan2.1 StepDistill-CfgDistill
// LoRAs, docs/lora.md): a fixed pick from the shifted 1000-entry training table
// sigmas = shift(torch.linspace(1, 0, T+1, float32)[:-1]) (float32 ops), the entries
// T - t for t in denoising_step_list (empty: T - i*T/N, i.e. [1000, 750, 500, 250] for 4),
// timesteps = sigmas * T (float32), a final sigma 0 appended.
FlowSchedule step_distill_schedule(int64_t steps, double shift, int64_t num_train_timesteps,
                                   const std::vector<int64_t>& denoising_step_list = {});
// The official HunyuanVideo FlowMatchDiscreteScheduler(shift, reverse).set_timesteps(N)
// (hyvideo/diffusion/schedulers/scheduling_flow_match_discrete.py), all float32 tensor math:
// sigmas = torch.linspace(1, 0, N+1), sd3_time_shift (shift * s) / (1 + (shift - 1) * s) with the
// Python floats shift and shift - 1 taken to float32, then 1 - sigmas unless reverse (sigmas rise
// from 0 to 1), timesteps = sigmas[:-1] * T (float32). The N+1 sigmas are kept as they are (no 0
// appended: the last one is the schedule's own end).
FlowSchedule flow_match_discrete_schedule(int64_t steps, double shift, bool reverse, int64_t num_train_timesteps);
// torch.linspace(start, end, steps) for float32 on the CPU: the first half counts up from
// start, the second half down from end, step = (end - start) / (steps - 1) in float32, each
// entry one fused multiply-add (fma(step, i, start), fma(-step, steps - 1 - i, end)) as torch's
// FMA-contracted kernel computes it (checked against torch 2.15 for steps 2..299, 1001, 4097).
std::vector<float> torch_linspace_f32(float start, float end, int64_t steps);

}  // namespace vidax::sched
