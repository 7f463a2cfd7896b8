// The LTX-2 sigma schedules (docs/sampling.md): the official
// ltx_core.components.schedulers.LTX2Scheduler.execute, bit for bit, and the
// distilled pipelines' fixed tables (ltx_pipelines/utils/constants.py).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace vidax::sched {

// The arguments of LTX2Scheduler.execute, with its defaults. tokens is the
// latent's prod(shape[2:]) (F*H*W of a [B, C, F, H, W] video latent); execute
// falls back to default_number_of_tokens (4096) when no latent is passed.
struct Ltx2ScheduleOptions {
  int64_t steps = 0;
  int64_t tokens = 4096;
  double max_shift = 2.05;
  double base_shift = 0.95;
  bool stretch = true;
  double terminal = 0.1;
};

// steps + 1 float32 sigmas, the last 0: torch.linspace(1, 0, steps + 1) (float32),
// mu = tokens * m + b on the line through (1024, base_shift), (4096, max_shift)
// (float64), nonzero s -> e / (e + (1/s - 1)) with e = float32(exp(mu)) in
// float32 ops as torch evaluates them (1/s and e/(...) are reciprocal
// multiplies), then with stretch 1 - (1 - s) / ((1 - s_last) / (1 - terminal)).
// Throws for steps < 1, tokens < 1, terminal outside [0, 1), and for steps = 1
// with stretch (the reference divides 0 by 0 there and returns NaN).
std::vector<float> ltx2_sigmas(const Ltx2ScheduleOptions& opt);

// The fixed tables of the distilled pipelines, by name: "distilled" (stage 1,
// 8 steps), "distilled_stage2" (the super-resolution stage, 3 steps) and
// "distilled_tdp_stage2" (the tiled-data-parallel runner's stage 2, 2 steps);
// float32 values with the final 0. Throws for any other name.
std::vector<float> ltx2_distilled_sigmas(const std::string& name);

}  // namespace vidax::sched

namespace vidax {
class Tensor;
}
namespace vidax::sched {
// ltx_core's EulerDiffusionStep: the model predicts the denoised sample d, the
// velocity is v = (x - d) / sigma_i and x' = x + v * (sigma_{i+1} - sigma_i), all float32
// (the flow Euler step of flow_euler.cpp once v is formed). Throws when sigma_i is 0
// (to_velocity's ValueError) or i + 1 is past the schedule.
Tensor ltx2_euler_step(const Tensor& sample, const Tensor& denoised, const std::vector<float>& sigmas, int64_t i);
}  // namespace vidax::sched
