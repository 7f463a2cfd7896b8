// torch_logf / torch_expf / torch_expm1f against torch's float32 CPU results
// (tests/golden/sched_torch_scalar_math.safetensors), bit for bit.
#include <gtest/gtest.h>

#include <cmath>

#include "sched/sched_golden.h"
#include "sched/torch_scalar_math.h"

namespace vidax::sched {
namespace {

// max_mismatch_fraction: 0 = bit-exact; otherwise the share of inputs allowed
// to differ, each by at most one ulp.
void check(const char* name, float (*fn)(float), double max_mismatch_fraction) {
  auto g = testing::load_sched_golden("sched_torch_scalar_math.safetensors");
  auto x = g.tensors.at(std::string("input.") + name).to_f32_vector();
  auto want = g.tensors.at(std::string("output.") + name).to_f32_vector();
  ASSERT_EQ(x.size(), want.size());
  int64_t bad = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    const float got = fn(x[i]);
    const bool same = (std::isnan(got) && std::isnan(want[i])) || f32_bits(got) == f32_bits(want[i]);
    if (same) continue;
    ++bad;
    const bool one_ulp = std::nextafter(want[i], got) == got;
    if (max_mismatch_fraction == 0 || !one_ulp)
      ADD_FAILURE() << name << "(" << x[i] << ") = " << got << ", torch " << want[i];
  }
  EXPECT_LE(static_cast<double>(bad), max_mismatch_fraction * static_cast<double>(x.size()))
      << name << ": " << bad << " of " << x.size() << " differ";
}

TEST(TorchScalarMath, Expm1MatchesTorchExactly) { check("expm1", torch_expm1f, 0); }
// MKL's log/exp are not reproducible: correctly rounded, within one ulp of torch.
TEST(TorchScalarMath, LogWithinOneUlpOfTorch) { check("log", torch_logf, 0.005); }
TEST(TorchScalarMath, ExpWithinOneUlpOfTorch) { check("exp", torch_expf, 0.02); }

}  // namespace
}  // namespace vidax::sched
