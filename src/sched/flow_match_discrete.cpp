// HunyuanVideo's FlowMatchDiscreteScheduler (Tencent/HunyuanVideo
// hyvideo/diffusion/schedulers/scheduling_flow_match_discrete.py, solver "euler"): the schedule of
// flow_match_discrete_schedule (schedule.h), then per step
//   dt = sigmas[i+1] - sigmas[i]            (float32 0-dim tensors)
//   x_{i+1} = x_i + v * dt                  (float32)
// as step() computes it (sample and model output taken to float32 first).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "core/error.h"
#include "sched/latent_math.h"
#include "sched/scheduler.h"

namespace vidax::sched {
namespace {

class FlowMatchDiscrete final : public Scheduler {
 public:
  explicit FlowMatchDiscrete(const SchedulerOptions& opt)
      : Scheduler(flow_match_discrete_schedule(opt.steps, opt.shift, opt.flow_reverse, opt.num_train_timesteps),
                  "flow_match_discrete") {}

  Tensor step(const Tensor& model_output, int64_t i, const Tensor& sample) override {
    begin_step(model_output, i, sample);
    const float dt = sigmas()[static_cast<size_t>(i) + 1] - sigmas()[static_cast<size_t>(i)];
    return lm::add(sample, lm::mul(dt, model_output));
  }
};

}  // namespace

std::unique_ptr<Scheduler> make_flow_match_discrete(const SchedulerOptions& opt) {
  return std::make_unique<FlowMatchDiscrete>(opt);
}

}  // namespace vidax::sched
