// The samplers' steps against the reference schedulers: each golden file
// replays N steps with recorded model outputs; every intermediate sample must
// be bit-identical (and so far under the 1e-5 fp32 parity bound).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "sched/sched_golden.h"
#include "sched/sched_config.h"
#include "sched/scheduler.h"
#include "test_diff.h"

namespace vidax::sched {
namespace {

// Values of `got` whose f32 bits differ from `want`'s (the shapes are checked by the caller).
int64_t mismatched_bits(const Tensor& want, const Tensor& got) {
  const auto a = want.to_f32_vector(), b = got.to_f32_vector();
  int64_t n = 0;
  for (size_t i = 0; i < a.size(); ++i) n += f32_bits(a[i]) != f32_bits(b[i]);
  return n;
}

TEST(FlowSamplers, MatchReferenceSamplesStepByStep) {
  for (const auto& c : testing::kSchedCases) {
    SCOPED_TRACE(c.file);
    auto g = testing::load_sched_golden(c.file);
    auto cfg = nlohmann::json::parse(g.metadata.at("config"));
    auto s = make_scheduler(options_from_config(c.kind, cfg));
    TorchGenerator gen(cfg.value("generator_seed", uint64_t(0)));
    s->set_generator(&gen);
    Tensor x = g.tensors.at("input.latent");
    double worst = 0;
    int64_t bits = 0, total = 0;
    for (int64_t i = 0; i < s->num_steps(); ++i) {
      x = s->step(g.tensors.at("input.model_output." + std::to_string(i)), i, x);
      const Tensor& want = g.tensors.at("output.sample." + std::to_string(i));
      ASSERT_EQ(want.shape(), x.shape()) << "step " << i;
      const double rel = vidax::test::rel_l2(want, x);
      const int64_t wrong_bits = mismatched_bits(want, x);
      EXPECT_LE(rel, 1e-6) << "step " << i;
      // Every golden here replays bit for bit (coefficients as torch computes them,
      // one rounding per tensor op); a changed op order or fused multiply-add shows up here.
      EXPECT_EQ(wrong_bits, 0) << "step " << i;
      worst = std::max(worst, rel);
      bits += wrong_bits;
      total += x.numel();
    }
    std::printf("  %-48s worst rel_l2 %.3g, %lld/%lld values not bit-identical\n", c.file, worst,
                static_cast<long long>(bits), static_cast<long long>(total));
  }
}

// The reference's first-order UniPC step still subtracts a 0-dim alpha_t*B_h*0
// (= -0.0), which turns -0 into +0: a -0 latent with a zero model output comes
// out as +0 after every step (checked against the official scheduler).
TEST(FlowSamplers, UniPCSignOfZeroAsReference) {
  auto s = make_scheduler({.name = "flow_unipc", .steps = 4, .shift = 5.0});
  Tensor x = Tensor::full({1, 2, 3}, -0.0, DType::F32), v = Tensor::zeros({1, 2, 3}, DType::F32);
  for (int64_t i = 0; i < 4; ++i) {
    x = s->step(v, i, x);
    for (float e : x.to_f32_vector()) EXPECT_EQ(f32_bits(e), 0u) << "step " << i;
  }
}

TEST(FlowSamplers, EnforceStepOrderAndDtype) {
  auto s = make_scheduler({.name = "flow_unipc", .steps = 4, .shift = 5.0});
  Tensor x = Tensor::zeros({2, 3}, DType::F32), v = Tensor::zeros({2, 3}, DType::F32);
  EXPECT_THROW(s->step(v, 1, x), Error);  // must start at 0
  EXPECT_THROW(s->step(v.to(DType::BF16), 0, x), Error);
  x = s->step(v, 0, x);
  s->reset();
  EXPECT_NO_THROW(s->step(v, 0, x));
  EXPECT_THROW(make_scheduler({.name = "ddim"}), Error);
  EXPECT_THROW(make_scheduler({.name = "flow_unipc", .solver_order = 3}), Error);
  EXPECT_THROW(make_scheduler({.name = "flow_unipc", .unipc_solver_type = "bh1"}), Error);  // NaN in the reference
  auto e = make_scheduler({.name = "flow_euler", .steps = 3, .stochastic_sampling = true});
  EXPECT_THROW(e->step(v, 0, x), Error);  // no generator
}

TEST(FlowSamplers, ConfigRejectsUnimplementedOptions) {
  nlohmann::json cfg = {{"num_inference_steps", 5}, {"shift", 3.0}};
  EXPECT_EQ(options_from_config("sched.flow_unipc", cfg).steps, 5);
  cfg["thresholding"] = true;
  EXPECT_THROW(options_from_config("sched.flow_unipc", cfg), Error);
  cfg["thresholding"] = false;
  cfg["algorithm_type"] = "sde-dpmsolver++";
  EXPECT_THROW(options_from_config("sched.flow_dpmpp", cfg), Error);
  EXPECT_THROW(options_from_config("sched.flow_euler", {{"shift", 3.0}}), Error);  // no steps
  EXPECT_THROW(options_from_config("sched.ddim", cfg), Error);
  // HunyuanVideo's class: reverse read (default true), only the euler solver.
  nlohmann::json fm = {{"num_inference_steps", 4}, {"shift", 7.0}, {"solver", "euler"}, {"n_tokens", nullptr}};
  EXPECT_TRUE(options_from_config("sched.flow_match_discrete", fm).flow_reverse);
  fm["reverse"] = false;
  EXPECT_FALSE(options_from_config("sched.flow_match_discrete", fm).flow_reverse);
  fm["solver"] = "heun";
  EXPECT_THROW(options_from_config("sched.flow_match_discrete", fm), Error);
}

}  // namespace
}  // namespace vidax::sched
