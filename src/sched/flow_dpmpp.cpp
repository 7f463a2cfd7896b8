// Wan2.1 FlowDPMSolverMultistepScheduler (wan/utils/fm_solvers.py) as Wan's
// 'dpm++' solver builds it: dpmsolver++, midpoint, solver_order <= 2,
// lower_order_final, final sigma 0 (so the last step is first order), sigmas
// from get_sampling_sigmas (starting at sigma 1, where lambda = -inf: the
// IEEE infinities give the reference's values, no special case needed).
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <cmath>

#include "core/error.h"
#include "sched/latent_math.h"
#include "sched/scheduler.h"
#include "sched/torch_scalar_math.h"

namespace vidax::sched {
namespace {

class FlowDpmpp final : public Scheduler {
 public:
  explicit FlowDpmpp(const SchedulerOptions& opt)
      : Scheduler(wan_dpmpp_schedule(opt.steps, opt.shift, opt.num_train_timesteps), "flow_dpmpp"), opt_(opt) {
    VIDAX_CHECK(opt.solver_order == 1 || opt.solver_order == 2,
                "flow_dpmpp: solver_order " << opt.solver_order << " is not implemented (1 or 2; Wan uses 2)");
  }

  void reset() override {
    Scheduler::reset();
    m_prev_ = Tensor();
    m_last_ = Tensor();
    lower_order_nums_ = 0;
  }

  Tensor step(const Tensor& model_output, int64_t i, const Tensor& sample) override {
    begin_step(model_output, i, sample);
    const int64_t n = num_steps();
    // final_sigmas_type "zero" forces first order on the last step.
    const bool lower_order_final = i == n - 1;
    m_prev_ = m_last_;
    m_last_ = lm::sub(sample, lm::mul(sigmas()[i], model_output));  // x0 prediction

    Tensor prev;
    if (opt_.solver_order == 1 || lower_order_nums_ < 1 || lower_order_final) {
      prev = first_order(sample, i);
    } else {
      // (the reference's lower_order_second only matters for solver_order 3)
      prev = second_order(sample, i);
    }
    if (lower_order_nums_ < opt_.solver_order) ++lower_order_nums_;
    return prev;
  }

 private:
  Tensor first_order(const Tensor& x, int64_t i) const {
    const float sigma_t = sigmas()[i + 1], sigma_s = sigmas()[i];
    const float alpha_t = 1.0f - sigma_t;
    const float h = flow_lambda(sigma_t) - flow_lambda(sigma_s);
    return lm::sub(lm::mul(sigma_t / sigma_s, x), lm::mul(alpha_t * (torch_expf(-h) - 1.0f), m_last_));
  }

  Tensor second_order(const Tensor& x, int64_t i) const {
    const float sigma_t = sigmas()[i + 1], sigma_s0 = sigmas()[i], sigma_s1 = sigmas()[i - 1];
    const float alpha_t = 1.0f - sigma_t;
    const float lambda_t = flow_lambda(sigma_t), lambda_s0 = flow_lambda(sigma_s0),
                lambda_s1 = flow_lambda(sigma_s1);
    const float h = lambda_t - lambda_s0, h_0 = lambda_s0 - lambda_s1;
    const float r0 = h_0 / h;
    const Tensor D1 = lm::mul(1.0f / r0, lm::sub(m_last_, m_prev_));
    const float c = alpha_t * (torch_expf(-h) - 1.0f);
    // midpoint: (sigma_t/sigma_s0) x - c D0 - 0.5 c D1
    return lm::sub(lm::sub(lm::mul(sigma_t / sigma_s0, x), lm::mul(c, m_last_)), lm::mul(0.5f * c, D1));
  }

  SchedulerOptions opt_;
  Tensor m_prev_, m_last_;
  int lower_order_nums_ = 0;
};

}  // namespace

std::unique_ptr<Scheduler> make_flow_dpmpp(const SchedulerOptions& opt) { return std::make_unique<FlowDpmpp>(opt); }

}  // namespace vidax::sched
