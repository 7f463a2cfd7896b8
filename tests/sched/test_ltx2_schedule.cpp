// The LTX-2 schedule and Euler step against the official ltx_core code
// (tools/golden/sched_ltx2.py): sigmas and samples equal bit for bit; bad
// arguments rejected.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "sched/ltx2_schedule.h"
#include "sched/parity_runners.h"
#include "sched/sched_golden.h"

namespace vidax::sched {
namespace {

// Number of elements whose float32 bits differ (-1 on a shape mismatch).
int64_t differing_bits(const Tensor& want, const Tensor& got) {
  if (want.shape() != got.shape()) return -1;
  auto a = want.to_f32_vector(), b = got.to_f32_vector();
  int64_t bad = 0;
  for (size_t i = 0; i < a.size(); ++i) bad += std::memcmp(&a[i], &b[i], sizeof(float)) != 0;
  return bad;
}

TEST(Ltx2Schedule, SigmasEqualReferenceBitForBit) {
  auto g = testing::open_parity_golden("sched_ltx2_schedules.safetensors");
  ASSERT_EQ(g.kind, "sched.ltx2");
  auto produced = run_ltx2_schedule(g, {});
  const auto& cases = g.config.at("cases");
  ASSERT_GE(cases.size(), 10u);
  ASSERT_EQ(produced.size(), cases.size());
  for (size_t i = 0; i < cases.size(); ++i) {
    const std::string name = "output.sigmas." + std::to_string(i);
    SCOPED_TRACE(name + " " + cases[i].dump());
    EXPECT_EQ(differing_bits(g.file.get(name), produced.at(name)), 0);
  }
}

TEST(Ltx2Schedule, ShapeOfTheDefaultSchedule) {
  // 40 steps at the default 4096 tokens: starts one ulp below 1 (the reference's
  // reciprocal(e) * e, 0.99999994), ends at terminal then 0, decreasing.
  auto s = ltx2_sigmas({40});
  ASSERT_EQ(s.size(), 41u);
  EXPECT_EQ(s.front(), std::nextafter(1.0f, 0.0f));
  EXPECT_EQ(s.back(), 0.0f);
  EXPECT_NEAR(s[39], 0.1f, 1e-6f);
  for (size_t i = 1; i < s.size(); ++i) EXPECT_LT(s[i], s[i - 1]) << i;
  // Fewer tokens shift less: every inner sigma lower.
  Ltx2ScheduleOptions small{40, 1024};
  auto t = ltx2_sigmas(small);
  for (size_t i = 1; i + 2 < s.size(); ++i) EXPECT_LT(t[i], s[i]) << i;
}

TEST(Ltx2Schedule, RejectsBadArguments) {
  EXPECT_THROW(ltx2_sigmas({0}), Error);
  EXPECT_THROW(ltx2_sigmas({-3}), Error);
  EXPECT_THROW(ltx2_sigmas({10, 0}), Error);                   // no tokens
  EXPECT_THROW(ltx2_sigmas({10, -5}), Error);
  EXPECT_THROW(ltx2_sigmas({1}), Error);                       // stretch of one step: 0/0 in the reference
  EXPECT_NO_THROW(ltx2_sigmas({1, 4096, 2.05, 0.95, false}));  // fine without stretch
  EXPECT_THROW(ltx2_sigmas({10, 4096, 2.05, 0.95, true, 1.0}), Error);
  EXPECT_THROW(ltx2_sigmas({10, 4096, 2.05, 0.95, true, -0.1}), Error);
  EXPECT_THROW(ltx2_sigmas({10, 4096, NAN, 0.95}), Error);
  EXPECT_THROW(ltx2_sigmas({10, 1 << 20, 2.05, 0.95}), Error);  // exp(mu) overflows float32
  auto g = testing::open_parity_golden("sched_ltx2_schedules.safetensors");
  g.config["cases"][0]["shfit"] = 1.0;  // misspelt key
  EXPECT_THROW(run_ltx2_schedule(g, {}), Error);
}

TEST(Ltx2Schedule, DistilledTables) {
  const auto d = ltx2_distilled_sigmas("distilled");
  ASSERT_EQ(d.size(), 9u);
  EXPECT_EQ(d.front(), 1.0f);
  EXPECT_EQ(d[5], 0.909375f);
  EXPECT_EQ(d.back(), 0.0f);
  // Stage 2 is the tail of stage 1 (the reference's "subset of distilled values").
  const auto s2 = ltx2_distilled_sigmas("distilled_stage2");
  ASSERT_EQ(s2.size(), 4u);
  for (size_t i = 0; i < s2.size(); ++i) EXPECT_EQ(s2[i], d[5 + i]);
  EXPECT_EQ(ltx2_distilled_sigmas("distilled_tdp_stage2"), (std::vector<float>{0.625f, 0.4f, 0.0f}));
  EXPECT_THROW(ltx2_distilled_sigmas("stage3"), Error);
}

TEST(Ltx2Euler, StepsEqualReferenceBitForBit) {
  auto g = testing::open_parity_golden("sched_ltx2_euler.safetensors");
  ASSERT_EQ(g.kind, "sched.ltx2_euler");
  auto produced = run_ltx2_euler(g, {});
  int compared = 0;
  for (const auto& name : g.file.names()) {
    if (name.rfind("output", 0) != 0) continue;
    SCOPED_TRACE(name);
    ASSERT_TRUE(produced.count(name));
    EXPECT_EQ(differing_bits(g.file.get(name), produced.at(name)), 0);
    ++compared;
  }
  EXPECT_EQ(compared, 7);  // sigmas + 6 steps
}

TEST(Ltx2Euler, RejectsBadSteps) {
  const auto s = ltx2_sigmas({4});
  const Tensor x = Tensor::full({2, 3}, 0.5, DType::F32);
  EXPECT_THROW(ltx2_euler_step(x, x, s, 4), Error);                             // past the schedule
  EXPECT_THROW(ltx2_euler_step(x, x, {0.5f, 0.0f, 0.0f}, 1), Error);           // sigma 0
  EXPECT_THROW(ltx2_euler_step(x, Tensor::full({3, 2}, 0.5, DType::F32), s, 0), Error);
}

}  // namespace
}  // namespace vidax::sched
