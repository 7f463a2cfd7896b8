// diffusers FlowMatchEulerDiscreteScheduler (static shift, no dynamic
// shifting): x_{i+1} = x_i + (sigma_{i+1} - sigma_i) * v in float32; with
// stochastic_sampling, x0 = x_i - sigma_i v is re-noised with fresh noise from
// the CPU generator: x_{i+1} = (1 - sigma_{i+1}) x0 + sigma_{i+1} noise.
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

class FlowEuler final : public Scheduler {
 public:
  explicit FlowEuler(const SchedulerOptions& opt)
      : Scheduler(diffusers_euler_schedule(opt.steps, opt.shift, opt.num_train_timesteps), "flow_euler"),
        stochastic_(opt.stochastic_sampling) {}

  Tensor step(const Tensor& model_output, int64_t i, const Tensor& sample) override {
    begin_step(model_output, i, sample);
    const float sigma = sigmas()[i], sigma_next = sigmas()[i + 1];
    if (!stochastic_) return lm::add(sample, lm::mul(sigma_next - sigma, model_output));
    const Tensor x0 = lm::sub(sample, lm::mul(sigma, model_output));
    const Tensor noise = draw_noise(sample.shape(), "flow_euler: stochastic_sampling");
    return lm::add(lm::mul(1.0f - sigma_next, x0), lm::mul(sigma_next, noise));
  }

 private:
  bool stochastic_;
};

}  // namespace

std::unique_ptr<Scheduler> make_flow_euler(const SchedulerOptions& opt) { return std::make_unique<FlowEuler>(opt); }

}  // namespace vidax::sched
