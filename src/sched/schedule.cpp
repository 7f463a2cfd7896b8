// No contraction: each multiply and add rounds on its own, as in numpy/torch.
#if defined(__clang__)
#pragma STDC FP_CONTRACT OFF
#elif defined(__GNUC__)
#pragma GCC optimize("fp-contract=off")
#endif

#include "sched/schedule.h"

#include <cmath>

#include "core/error.h"

namespace vidax::sched {

std::vector<double> np_linspace(double start, double stop, int64_t num) {
  VIDAX_CHECK(num >= 0, "linspace: negative count " << num);
  std::vector<double> y(static_cast<size_t>(num));
  if (num == 0) return y;
  if (num == 1) {
    y[0] = start;  // arange(1) * delta + start
    return y;
  }
  const double delta = stop - start;
  const double step = delta / static_cast<double>(num - 1);
  for (int64_t k = 0; k < num; ++k) {
    // numpy's special case for a zero step (denormal spans) divides first.
    const double v = step == 0 ? (static_cast<double>(k) / static_cast<double>(num - 1)) * delta
                               : static_cast<double>(k) * step;
    y[static_cast<size_t>(k)] = v + start;
  }
  y[static_cast<size_t>(num - 1)] = stop;
  return y;
}

double shift_sigma_f64(double sigma, double shift) {
  const double num = shift * sigma;
  const double den = 1.0 + (shift - 1.0) * sigma;
  return num / den;
}

float shift_sigma_f32(float sigma, float shift) {
  const float num = shift * sigma;
  const float den = 1.0f + (shift - 1.0f) * sigma;
  return num / den;
}

namespace {

void check_args(const char* who, int64_t steps, double shift, int64_t num_train_timesteps) {
  VIDAX_CHECK(steps >= 1, who << ": num_inference_steps must be >= 1, got " << steps);
  VIDAX_CHECK(shift > 0, who << ": shift must be > 0, got " << shift);
  VIDAX_CHECK(num_train_timesteps >= 2, who << ": num_train_timesteps must be >= 2, got " << num_train_timesteps);
}

// Shifted float64 sigmas -> the reference's int64 timesteps and float32 sigmas (+ final 0).
FlowSchedule integer_schedule(const std::vector<double>& shifted, int64_t num_train_timesteps) {
  FlowSchedule s;
  s.integer_timesteps = true;
  for (double sigma : shifted) {
    // numpy float64 product, then torch .to(int64): truncation toward zero.
    const double t = sigma * static_cast<double>(num_train_timesteps);
    s.timesteps.push_back(static_cast<double>(static_cast<int64_t>(t)));
    s.sigmas.push_back(static_cast<float>(sigma));
  }
  s.sigmas.push_back(0.0f);  // final_sigmas_type "zero"
  return s;
}

}  // namespace

FlowSchedule wan_unipc_schedule(int64_t steps, double shift, int64_t num_train_timesteps) {
  check_args("flow_unipc", steps, shift, num_train_timesteps);
  // Training table: sigmas = 1 - linspace(1, 1/T, T)[::-1] in float64, stored float32;
  // sigma_max / sigma_min are read back with .item() (float32 values).
  const auto alphas = np_linspace(1.0, 1.0 / static_cast<double>(num_train_timesteps), num_train_timesteps);
  const double sigma_max = static_cast<float>(1.0 - alphas.back());
  const double sigma_min = static_cast<float>(1.0 - alphas.front());
  auto base = np_linspace(sigma_max, sigma_min, steps + 1);
  base.pop_back();
  for (double& s : base) s = shift_sigma_f64(s, shift);
  return integer_schedule(base, num_train_timesteps);
}

FlowSchedule diffusers_unipc_flow_schedule(int64_t steps, double shift, int64_t num_train_timesteps) {
  check_args("flow_unipc (diffusers sigmas)", steps, shift, num_train_timesteps);
  auto base = np_linspace(1.0, 1.0 / static_cast<double>(num_train_timesteps), steps + 1);
  base.pop_back();
  for (double& s : base) s = shift_sigma_f64(s, shift);
  // "to avoid inf torch.log(alpha_si)": diffusers nudges a first sigma of 1 down.
  constexpr double eps = 1e-6;
  if (std::fabs(base[0] - 1.0) < eps) base[0] -= eps;
  return integer_schedule(base, num_train_timesteps);
}

FlowSchedule wan_dpmpp_schedule(int64_t steps, double shift, int64_t num_train_timesteps) {
  check_args("flow_dpmpp", steps, shift, num_train_timesteps);
  auto base = np_linspace(1.0, 0.0, steps + 1);
  base.pop_back();
  // get_sampling_sigmas shifts; set_timesteps(sigmas=...) shifts again by the
  // constructor's shift=1, which is the identity in float64.
  for (double& s : base) s = shift_sigma_f64(s, shift);
  return integer_schedule(base, num_train_timesteps);
}

std::vector<float> torch_linspace_f32(float start, float end, int64_t steps) {
  std::vector<float> v(static_cast<size_t>(steps));
  if (steps == 1) v[0] = start;
  if (steps <= 1) return v;
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int64_t halfway = steps / 2;
  // torch's kernel is built with FMA contraction: start + step * i and end - step * k are each
  // one fused multiply-add (one rounding), which the unfused forms miss by an ulp on some entries.
  for (int64_t i = 0; i < steps; ++i) {
    v[static_cast<size_t>(i)] = i < halfway ? std::fmaf(step, static_cast<float>(i), start)
                                            : std::fmaf(-step, static_cast<float>(steps - i - 1), end);
  }
  return v;
}

FlowSchedule step_distill_schedule(int64_t steps, double shift, int64_t num_train_timesteps,
                                   const std::vector<int64_t>& denoising_step_list) {
  check_args("flow_step_distill", steps, shift, num_train_timesteps);
  const int64_t T = num_train_timesteps;
  std::vector<int64_t> list = denoising_step_list;
  if (list.empty()) {
    VIDAX_CHECK(T % steps == 0, "flow_step_distill: " << steps << " steps do not divide the " << T
                                                      << " training timesteps evenly; give a denoising_step_list");
    for (int64_t i = 0; i < steps; ++i) list.push_back(T - i * (T / steps));
  }
  VIDAX_CHECK(static_cast<int64_t>(list.size()) == steps,
              "flow_step_distill: " << steps << " steps but a denoising_step_list of " << list.size());
  const std::vector<float> table = torch_linspace_f32(1.0f, 0.0f, T + 1);  // [:-1] below
  FlowSchedule s;
  s.integer_timesteps = false;
  for (int64_t t : list) {
    VIDAX_CHECK(t >= 1 && t <= T, "flow_step_distill: denoising step " << t << " is outside [1, " << T << "]");
    const float sigma = shift_sigma_f32(table[static_cast<size_t>(T - t)], static_cast<float>(shift));
    s.sigmas.push_back(sigma);
    s.timesteps.push_back(static_cast<double>(sigma * static_cast<float>(T)));
  }
  s.sigmas.push_back(0.0f);
  return s;
}

FlowSchedule flow_match_discrete_schedule(int64_t steps, double shift, bool reverse, int64_t num_train_timesteps) {
  check_args("flow_match_discrete", steps, shift, num_train_timesteps);
  // A Python float times a float32 tensor multiplies by the float rounded to float32; shift - 1
  // is a Python (float64) subtraction before that rounding.
  const float fshift = static_cast<float>(shift);
  const float fshift_m1 = static_cast<float>(shift - 1.0);
  const float T = static_cast<float>(num_train_timesteps);
  FlowSchedule s;
  s.integer_timesteps = false;
  for (float t : torch_linspace_f32(1.0f, 0.0f, steps + 1)) {
    const float num = fshift * t;
    const float den = 1.0f + fshift_m1 * t;
    const float sigma = num / den;
    s.sigmas.push_back(reverse ? sigma : 1.0f - sigma);
  }
  for (int64_t i = 0; i < steps; ++i)
    s.timesteps.push_back(static_cast<double>(s.sigmas[static_cast<size_t>(i)] * T));
  return s;
}

FlowSchedule diffusers_euler_schedule(int64_t steps, double shift, int64_t num_train_timesteps) {
  check_args("flow_euler", steps, shift, num_train_timesteps);
  const float T = static_cast<float>(num_train_timesteps);
  const float fshift = static_cast<float>(shift);
  // __init__: timesteps = linspace(1, T, T, float32)[::-1]; sigmas = timesteps / T (float32),
  // shifted in float32; sigma_max = sigmas[0], sigma_min = sigmas[-1] (.item()).
  const auto table = np_linspace(1.0, static_cast<double>(num_train_timesteps), num_train_timesteps);
  const double sigma_max = shift_sigma_f32(static_cast<float>(table.back()) / T, fshift);
  const double sigma_min = shift_sigma_f32(static_cast<float>(table.front()) / T, fshift);
  // set_timesteps: linspace(sigma_max * T, sigma_min * T, N) / T in float64, shifted (float64).
  const double Td = static_cast<double>(num_train_timesteps);
  auto ts = np_linspace(sigma_max * Td, sigma_min * Td, steps);
  FlowSchedule s;
  s.integer_timesteps = false;
  for (double t : ts) {
    const float sigma = static_cast<float>(shift_sigma_f64(t / Td, shift));
    s.sigmas.push_back(sigma);
    s.timesteps.push_back(static_cast<double>(sigma * T));  // torch float32 product
  }
  s.sigmas.push_back(0.0f);
  return s;
}

}  // namespace vidax::sched
