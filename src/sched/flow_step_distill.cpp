// LightX2V's WanStepDistillScheduler (lightx2v/models/schedulers/wan/step_distill/
// scheduler.py), the sampler its 4-step distilled Wan models and LoRAs are run with:
// fixed timesteps (step_distill_schedule), the model's flow velocity turned into
// x0 = x_i - sigma_i v, then re-noised to the next sigma with fresh noise,
// x_{i+1} = (1 - sigma_{i+1}) x0 + sigma_{i+1} noise; the last step returns x0.
// The noise comes from the run's seeded CPU generator after the initial latent (as
// the scheduler's own generator did; the current upstream draws it with
// torch.randn_like from the global generator instead, which no seed of ours can
// reproduce bit for bit: docs/lora.md).
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

class FlowStepDistill final : public Scheduler {
 public:
  explicit FlowStepDistill(const SchedulerOptions& opt)
      : Scheduler(step_distill_schedule(opt.steps, opt.shift, opt.num_train_timesteps, opt.denoising_step_list),
                  "flow_step_distill") {}

  Tensor step(const Tensor& model_output, int64_t i, const Tensor& sample) override {
    begin_step(model_output, i, sample);
    const float sigma = sigmas()[i], sigma_next = sigmas()[i + 1];
    const Tensor x0 = lm::sub(sample, lm::mul(sigma, model_output));
    if (i + 1 == num_steps()) return x0;
    const Tensor noise = draw_noise(sample.shape(), "flow_step_distill: the re-noising");
    return lm::add(lm::mul(1.0f - sigma_next, x0), lm::mul(sigma_next, noise));
  }
};

}  // namespace

std::unique_ptr<Scheduler> make_flow_step_distill(const SchedulerOptions& opt) {
  return std::make_unique<FlowStepDistill>(opt);
}

}  // namespace vidax::sched
