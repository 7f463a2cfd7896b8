// Sigma / timestep schedules against the reference schedulers, bit for bit.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include "sched/sched_golden.h"
#include "sched/schedule.h"

namespace vidax::sched {
namespace {

FlowSchedule schedule_for(const std::string& kind, const nlohmann::json& cfg, int64_t steps, double shift, int64_t T) {
  if (kind == "sched.flow_unipc" && cfg.value("use_flow_sigmas", false)) return diffusers_unipc_flow_schedule(steps, shift, T);
  if (kind == "sched.flow_unipc") return wan_unipc_schedule(steps, shift, T);
  if (kind == "sched.flow_dpmpp") return wan_dpmpp_schedule(steps, shift, T);
  if (kind == "sched.flow_match_discrete") return flow_match_discrete_schedule(steps, shift, cfg.value("reverse", true), T);
  return diffusers_euler_schedule(steps, shift, T);
}

TEST(FlowSchedule, MatchesReferenceTimestepsAndSigmasExactly) {
  for (const auto& c : testing::kSchedCases) {
    SCOPED_TRACE(c.file);
    auto g = testing::load_sched_golden(c.file);
    ASSERT_EQ(g.metadata.at("kind"), c.kind);
    auto cfg = nlohmann::json::parse(g.metadata.at("config"));
    auto s = schedule_for(c.kind, cfg, cfg.at("num_inference_steps").get<int64_t>(), cfg.at("shift").get<double>(),
                          cfg.at("num_train_timesteps").get<int64_t>());
    const Tensor& ts = g.tensors.at("output.timesteps");
    const Tensor& sig = g.tensors.at("output.sigmas");
    ASSERT_EQ(ts.numel(), s.num_steps());
    ASSERT_EQ(sig.numel(), s.num_steps() + 1);
    EXPECT_EQ(ts.dtype() == DType::I64, s.integer_timesteps);
    auto want_t = ts.to_f64_vector();
    auto want_s = sig.to_f32_vector();
    for (int64_t i = 0; i < s.num_steps(); ++i) EXPECT_EQ(s.timesteps[i], want_t[i]) << "timestep " << i;
    for (int64_t i = 0; i <= s.num_steps(); ++i) EXPECT_EQ(f32_bits(s.sigmas[i]), f32_bits(want_s[i])) << "sigma " << i;
  }
}

TEST(FlowSchedule, NumpyLinspaceEndpointsAndKnownWanGrid) {
  auto y = np_linspace(1.0, 0.001, 1000);
  EXPECT_EQ(y.front(), 1.0);
  EXPECT_EQ(y.back(), 0.001);
  // Reference page / official run: N=50, shift 5 starts 999, 995, 991, 987, 982 and ends 172, 92.
  auto s = wan_unipc_schedule(50, 5.0, 1000);
  const double head[] = {999, 995, 991, 987, 982};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(s.timesteps[i], head[i]);
  EXPECT_EQ(s.timesteps[48], 172);
  EXPECT_EQ(s.timesteps[49], 92);
  EXPECT_EQ(s.sigmas.back(), 0.0f);
  // diffusers' grid for the same run (reference page: last timesteps 359, 305, 244, 175, 96), and
  // its first sigma nudged below 1.
  auto d = diffusers_unipc_flow_schedule(50, 5.0, 1000);
  const double tail[] = {359, 305, 244, 175, 96};
  for (int i = 0; i < 5; ++i) EXPECT_EQ(d.timesteps[45 + i], tail[i]);
  EXPECT_LT(d.sigmas[0], 1.0f);
}

TEST(FlowSchedule, RejectsBadArguments) {
  EXPECT_THROW(wan_unipc_schedule(0, 5.0, 1000), Error);
  EXPECT_THROW(wan_dpmpp_schedule(10, -1.0, 1000), Error);
  EXPECT_THROW(diffusers_euler_schedule(10, 5.0, 1), Error);
}

}  // namespace
}  // namespace vidax::sched
