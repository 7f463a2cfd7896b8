// Wan2.1 FlowUniPCMultistepScheduler (wan/utils/fm_solvers_unipc.py) with the
// options Wan's text2video uses: predict_x0, flow_prediction, bh2,
// solver_order <= 2, lower_order_final, final sigma 0, no thresholding.
// Coefficients are float32 scalars computed in the reference's order.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "sched/latent_math.h"
#include "sched/scheduler.h"
#include "sched/torch_scalar_math.h"

namespace vidax::sched {
namespace {

// torch.linalg.solve of the 2x2 UniC system [[1, 1], [rk, 1]] rho = b in float32
// as the x86 wheel's LAPACK (MKL sgesv) computes it, found by matching its
// outputs on 6000 random systems: partial pivoting (first maximum wins ties),
// the forward substitution fused (one rounding), the back substitution by
// multiplying with the pivot's reciprocal.
void solve_unic_2x2(float rk, const float b[2], float rho[2]) {
  float a00 = 1.0f, a01 = 1.0f, a10 = rk, a11 = 1.0f;
  float y0 = b[0], y1 = b[1];
  if (std::fabs(a10) > std::fabs(a00)) {
    std::swap(a00, a10);
    std::swap(a01, a11);
    std::swap(y0, y1);
  }
  const float l = a10 * (1.0f / a00);
  const float u11 = a11 - l * a01;
  y1 = std::fma(-l, y0, y1);
  rho[1] = y1 * (1.0f / u11);
  rho[0] = (y0 - rho[1] * a01) * (1.0f / a00);
}

FlowSchedule schedule_for(const SchedulerOptions& opt) {
  if (opt.unipc_sigmas == "wan") return wan_unipc_schedule(opt.steps, opt.shift, opt.num_train_timesteps);
  if (opt.unipc_sigmas == "diffusers")
    return diffusers_unipc_flow_schedule(opt.steps, opt.shift, opt.num_train_timesteps);
  throw Error(msg() << "flow_unipc: sigma grid '" << opt.unipc_sigmas << "' (expected wan or diffusers)");
}

class FlowUniPC final : public Scheduler {
 public:
  explicit FlowUniPC(const SchedulerOptions& opt)
      : Scheduler(schedule_for(opt), "flow_unipc"), opt_(opt) {
    VIDAX_CHECK(opt.solver_order == 1 || opt.solver_order == 2,
                "flow_unipc: solver_order " << opt.solver_order << " is not implemented (1 or 2; Wan uses 2)");
    // bh1 (B(h) = h) is refused: with the final sigma 0 the reference's last step
    // computes alpha_t * B(h) * 0 = 1 * -inf * 0 and returns an all-NaN latent.
    VIDAX_CHECK(opt.unipc_solver_type == "bh2",
                "flow_unipc: solver_type '" << opt.unipc_solver_type
                                            << "' is not supported (bh2 only: the reference's bh1 ends in NaN "
                                               "when the final sigma is 0)");
  }

  void reset() override {
    Scheduler::reset();
    m_prev_ = Tensor();
    m_last_ = Tensor();
    last_sample_ = Tensor();
    this_order_ = 0;
    lower_order_nums_ = 0;
  }

  Tensor step(const Tensor& model_output, int64_t i, const Tensor& sample_in) override {
    begin_step(model_output, i, sample_in);
    // convert_model_output: x0 = sample - sigma * v
    const Tensor m = lm::sub(sample_in, lm::mul(sigmas()[i], model_output));
    const bool corrector_disabled = std::find(opt_.disable_corrector.begin(), opt_.disable_corrector.end(), i - 1) !=
                                    opt_.disable_corrector.end();
    Tensor sample = sample_in;
    if (i > 0 && !corrector_disabled && last_sample_.defined()) sample = corrector(m, i);

    m_prev_ = m_last_;
    m_last_ = m;
    int order = opt_.lower_order_final ? static_cast<int>(std::min<int64_t>(opt_.solver_order, num_steps() - i))
                                       : opt_.solver_order;
    this_order_ = std::min(order, lower_order_nums_ + 1);  // warm-up of the multistep history
    last_sample_ = sample;
    Tensor prev = predictor(sample, i, this_order_);
    if (lower_order_nums_ < opt_.solver_order) ++lower_order_nums_;
    return prev;
  }

 private:
  static float b_h(float hh) { return torch_expm1f(hh); }  // bh2: B(h) = expm1(h)

  // multistep_uni_p_bh_update: x_i -> x_{i+1}.
  Tensor predictor(const Tensor& x, int64_t i, int order) const {
    const float sigma_t = sigmas()[i + 1], sigma_s0 = sigmas()[i];
    const float alpha_t = 1.0f - sigma_t;
    const float lambda_s0 = flow_lambda(sigma_s0);
    const float h = flow_lambda(sigma_t) - lambda_s0;
    const float hh = -h;  // predict_x0
    const float h_phi_1 = torch_expm1f(hh);
    const float B_h = b_h(hh);
    const Tensor x_t_ = lm::sub(lm::mul(sigma_t / sigma_s0, x), lm::mul(alpha_t * h_phi_1, m_last_));
    if (order == 2) {
      const float rk = (flow_lambda(sigmas()[i - 1]) - lambda_s0) / h;
      const Tensor D1 = lm::div(lm::sub(m_prev_, m_last_), rk);
      const Tensor pred_res = lm::mul(0.5f, D1);  // rhos_p = [0.5] for order 2
      return lm::sub(x_t_, lm::mul(alpha_t * B_h, pred_res));
    }
    // Order 1: the reference still subtracts alpha_t * B_h * 0 (pred_res = 0), a
    // 0-dim -0.0 that turns -0 elements into +0.
    return lm::add(x_t_, -((alpha_t * B_h) * 0.0f));
  }

  // multistep_uni_c_bh_update: corrects x_i (the predictor's output) with m_i.
  Tensor corrector(const Tensor& model_t, int64_t i) const {
    const int order = this_order_;  // the order the previous predictor used
    const Tensor& m0 = m_last_;     // m_{i-1}
    const Tensor& x = last_sample_;
    const float sigma_t = sigmas()[i], sigma_s0 = sigmas()[i - 1];
    const float alpha_t = 1.0f - sigma_t;
    const float lambda_s0 = flow_lambda(sigma_s0);
    const float h = flow_lambda(sigma_t) - lambda_s0;
    const float hh = -h;
    const float h_phi_1 = torch_expm1f(hh);
    float h_phi_k = h_phi_1 / hh - 1.0f;
    const float B_h = b_h(hh);

    // b_k = h_phi_k * k! / B_h, h_phi_{k+1} = h_phi_k / hh - 1/(k+1)!
    float b[2] = {0.0f, 0.0f};
    int64_t factorial = 1;
    for (int k = 1; k <= order; ++k) {
      b[k - 1] = h_phi_k * static_cast<float>(factorial) / B_h;
      factorial *= k + 1;
      h_phi_k = h_phi_k / hh - static_cast<float>(1.0 / static_cast<double>(factorial));
    }

    const Tensor x_t_ = lm::sub(lm::mul(sigma_t / sigma_s0, x), lm::mul(alpha_t * h_phi_1, m0));
    const Tensor D1_t = lm::sub(model_t, m0);
    Tensor correction;
    if (order == 1) {
      correction = lm::add(lm::mul(0.5f, D1_t), 0.0f);  // rhos_c = [0.5]; corr_res = 0 is added (0 + t)
    } else {
      const float rk = (flow_lambda(sigmas()[i - 2]) - lambda_s0) / h;
      const Tensor D1 = lm::div(lm::sub(m_prev_, m0), rk);
      float rho[2];
      solve_unic_2x2(rk, b, rho);
      correction = lm::add(lm::mul(rho[0], D1), lm::mul(rho[1], D1_t));
    }
    return lm::sub(x_t_, lm::mul(alpha_t * B_h, correction));
  }

  SchedulerOptions opt_;
  Tensor m_prev_, m_last_;  // model_outputs[-2], model_outputs[-1] (x0 predictions)
  Tensor last_sample_;
  int this_order_ = 0;
  int lower_order_nums_ = 0;
};

}  // namespace

std::unique_ptr<Scheduler> make_flow_unipc(const SchedulerOptions& opt) { return std::make_unique<FlowUniPC>(opt); }

}  // namespace vidax::sched
