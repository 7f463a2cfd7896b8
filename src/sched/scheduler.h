// Flow-matching samplers for the denoise loop (docs/sampling.md):
//   flow_unipc  Wan2.1's FlowUniPCMultistepScheduler (the official default: bh2,
//               predict_x0, solver_order 2, lower_order_final, final sigma 0)
//   flow_dpmpp  Wan2.1's FlowDPMSolverMultistepScheduler ('dpm++': dpmsolver++,
//               midpoint, order 2, sigmas from get_sampling_sigmas)
//   flow_euler  diffusers' FlowMatchEulerDiscreteScheduler (optionally stochastic)
//   flow_step_distill  LightX2V's WanStepDistillScheduler (fixed timesteps, x0 re-noised)
//   flow_match_discrete  HunyuanVideo's FlowMatchDiscreteScheduler (shifted linspace(1, 0, N+1),
//               Euler steps x + v * (sigma_{i+1} - sigma_i))
// Each reproduces its reference's dtype sequence: sigmas float32, per-step
// coefficients as float32 0-dim tensor math, one rounding per tensor op.
//
//   auto s = sched::make_scheduler({.name = "flow_unipc", .steps = 50, .shift = 5.0});
//   for (int64_t i = 0; i < s->num_steps(); ++i) {
//     Tensor v = model(x, s->timesteps()[i]);   // the timestep the model sees
//     x = s->step(v, i, x);
//   }
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "sched/schedule.h"

namespace vidax::sched {

// What a denoiser predicts (diffusers' prediction_type): the model output a
// scheduler's step() takes. The flow solvers here take the flow velocity; a
// DDPM-family scheduler (v-prediction DDIM / DPM++ with zero-terminal SNR for
// CogVideoX) or an EDM-style one (Cosmos) declares its own, and the pipeline
// converts a denoiser's output where the math allows (pipeline/prediction.h).
enum class PredictionType { FlowVelocity, Epsilon, X0, VPrediction };

struct SchedulerOptions {
  std::string name = "flow_unipc";  // flow_unipc | flow_dpmpp | flow_euler | flow_step_distill | flow_match_discrete
  int64_t steps = 50;
  double shift = 5.0;
  int64_t num_train_timesteps = 1000;
  // Multistep solvers (flow_unipc, flow_dpmpp). Orders 1 and 2 are implemented.
  int solver_order = 2;
  bool lower_order_final = true;
  std::string unipc_solver_type = "bh2";  // only bh2 (bh1 ends in NaN in the reference)
  // flow_unipc sigma grid: "wan" (the official FlowUniPCMultistepScheduler) or
  // "diffusers" (UniPCMultistepScheduler with use_flow_sigmas, as diffusers' WanPipeline).
  std::string unipc_sigmas = "wan";
  std::vector<int64_t> disable_corrector{};  // flow_unipc: steps whose corrector is skipped
  // flow_euler: x0 re-noised with fresh noise instead of the ODE step.
  bool stochastic_sampling = false;
  // flow_step_distill: LightX2V's denoising_step_list (empty: T - i*T/steps).
  std::vector<int64_t> denoising_step_list{};
  // flow_match_discrete: the class's `reverse` (sampling from t = 1 to t = 0, what HunyuanVideo's
  // --flow-reverse selects and its published commands all pass); false: sigmas = 1 - shifted.
  bool flow_reverse = true;
};

class Scheduler {
 public:
  virtual ~Scheduler() = default;

  const FlowSchedule& schedule() const { return schedule_; }
  int64_t num_steps() const { return schedule_.num_steps(); }
  const std::vector<double>& timesteps() const { return schedule_.timesteps; }
  const std::vector<float>& sigmas() const { return schedule_.sigmas; }
  // The reference's tensors: timesteps I64 (Wan solvers) or F32 (Euler); sigmas F32 [N+1].
  Tensor timesteps_tensor() const;
  Tensor sigmas_tensor() const;

  // One solver step: the sample after step `step_index` from the model's
  // output (flow / velocity prediction) at that step. Steps must run in order
  // 0, 1, ..., num_steps()-1 (multistep solvers keep history); reset() starts over.
  virtual Tensor step(const Tensor& model_output, int64_t step_index, const Tensor& sample) = 0;
  // What `model_output` must be. Every scheduler here is a flow solver.
  virtual PredictionType prediction() const { return PredictionType::FlowVelocity; }
  virtual void reset() { next_step_ = 0; }

  // flow_euler with stochastic_sampling draws noise here (torch's CPU generator,
  // as diffusers' randn_tensor with a CPU generator does).
  void set_generator(TorchGenerator* gen) { generator_ = gen; }
  // Where a re-noising sampler's draws come from instead (record and replay, pipeline/record.h:
  // a callable that draws from the run's generator and records, or returns a recorded tensor).
  // Set: used in place of the generator; it must return F32 of the shape asked.
  using NoiseSource = std::function<Tensor(const Shape& shape)>;
  void set_noise_source(NoiseSource source) { noise_source_ = std::move(source); }

 protected:
  explicit Scheduler(FlowSchedule schedule, std::string name)
      : schedule_(std::move(schedule)), name_(std::move(name)) {}
  // Checks the order of calls and the inputs; advances the step counter.
  void begin_step(const Tensor& model_output, int64_t step_index, const Tensor& sample);
  // One draw of fresh noise of `shape` (F32): the noise source when set, else the generator
  // (throws naming `who` when neither is).
  Tensor draw_noise(const Shape& shape, const char* who);

  FlowSchedule schedule_;
  std::string name_;
  int64_t next_step_ = 0;
  TorchGenerator* generator_ = nullptr;
  NoiseSource noise_source_;
};

std::unique_ptr<Scheduler> make_scheduler(const SchedulerOptions& opt);
std::vector<std::string> scheduler_names();

}  // namespace vidax::sched
