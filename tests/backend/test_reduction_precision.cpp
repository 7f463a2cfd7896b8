// Reductions accumulate in fp32 (or wider) under bf16 compute (DESIGN.md principle 3; issue 20,
// item 7): LayerNorm, RMSNorm and softmax of BF16 rows whose values sit on a large offset, where a
// bf16 accumulator stalls (once the running sum's spacing exceeds twice an addend, adding it
// rounds back to the same sum). Each test compares the op with a double reference from the same
// bf16 inputs, within bf16's output rounding, and, as its control, shows that the same reduction
// accumulated in bf16 (simulated here, one rounding per addition) misses that bound by far: so
// the test would fail if the kernel reduced in bf16.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <vector>

#include "backend/ops.h"

using namespace vidax;

namespace {

// float -> the nearest bf16 (ties to even) -> float: one bf16 rounding.
float bf16_round(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  u += 0x7FFFu + ((u >> 16) & 1u);
  u &= 0xFFFF0000u;
  std::memcpy(&f, &u, 4);
  return f;
}

// A sum accumulated in bf16, one rounding per addition (what a bf16 reduction does).
float bf16_sum(const std::vector<float>& v) {
  float s = 0;
  for (float x : v) s = bf16_round(s + x);
  return s;
}

double max_abs_diff(const std::vector<double>& a, const std::vector<double>& b) {
  double m = 0;
  for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a[i] - b[i]));
  return m;
}

double max_rel_diff(const std::vector<double>& got, const std::vector<double>& ref) {
  double m = 0;
  for (size_t i = 0; i < got.size(); ++i) m = std::max(m, std::fabs(got[i] - ref[i]) / std::fabs(ref[i]));
  return m;
}

constexpr int64_t kD = 4096;

// 256 + 2 * (i % 8): exact in bf16 (spacing 2 in [256, 512)); mean 263, variance 21.
std::vector<float> offset_row() {
  std::vector<float> v(kD);
  for (int64_t i = 0; i < kD; ++i) v[i] = 256.0f + 2.0f * static_cast<float>(i % 8);
  return v;
}

}  // namespace

TEST(ReductionPrecision, LayerNormOfABf16RowOnALargeOffset) {
  const std::vector<float> v = offset_row();
  const Tensor x = Tensor::from_f32(v, {1, kD}, DType::BF16);
  ASSERT_EQ(x.to_f32_vector(), v);  // the inputs are exact in bf16
  double mean = 0, var = 0;
  for (float f : v) mean += f;
  mean /= kD;
  for (float f : v) var += (f - mean) * (f - mean);
  var /= kD;
  std::vector<double> ref(kD);
  for (int64_t i = 0; i < kD; ++i) ref[i] = (v[i] - mean) / std::sqrt(var + 1e-6);

  const Tensor y = ops::layer_norm(x, std::nullopt, std::nullopt, 1e-6);
  EXPECT_EQ(y.dtype(), DType::BF16);
  const double err = max_abs_diff(y.to_f64_vector(), ref);
  EXPECT_LE(err, 1e-2) << "LayerNorm under bf16: max |err| " << err;  // |y| < 1.6: bf16 rounds by < 4e-3

  // Control: the mean and variance accumulated in bf16.
  const float m16 = bf16_sum(v) / kD;
  std::vector<float> sq(kD);
  for (int64_t i = 0; i < kD; ++i) sq[i] = bf16_round((v[i] - m16) * (v[i] - m16));
  const float var16 = bf16_sum(sq) / kD;
  std::vector<double> bad(kD);
  for (int64_t i = 0; i < kD; ++i) bad[i] = bf16_round((v[i] - m16) / std::sqrt(var16 + 1e-6f));
  EXPECT_GT(max_abs_diff(bad, ref), 0.5) << "the control should miss the bound";
}

TEST(ReductionPrecision, RmsNormOfABf16RowOnALargeOffset) {
  const std::vector<float> v = offset_row();
  const Tensor x = Tensor::from_f32(v, {1, kD}, DType::BF16);
  double ss = 0;
  for (float f : v) ss += double(f) * f;
  const double rms = std::sqrt(ss / kD + 1e-6);
  std::vector<double> ref(kD);
  for (int64_t i = 0; i < kD; ++i) ref[i] = v[i] / rms;

  const Tensor y = ops::rms_norm(x, std::nullopt, 1e-6);
  EXPECT_EQ(y.dtype(), DType::BF16);
  const double err = max_abs_diff(y.to_f64_vector(), ref);
  EXPECT_LE(err, 1e-2) << "RMSNorm under bf16: max |err| " << err;  // y ~ 1: bf16 rounds by < 4e-3

  // Control: the sum of squares accumulated in bf16 stalls far below the true 2.8e8.
  std::vector<float> sq(kD);
  for (int64_t i = 0; i < kD; ++i) sq[i] = bf16_round(v[i] * v[i]);
  const float rms16 = std::sqrt(bf16_sum(sq) / kD + 1e-6f);
  std::vector<double> bad(kD);
  for (int64_t i = 0; i < kD; ++i) bad[i] = bf16_round(v[i] / rms16);
  EXPECT_GT(max_abs_diff(bad, ref), 0.1) << "the control should miss the bound";
}

TEST(ReductionPrecision, SoftmaxOfABf16RowOnALargeOffset) {
  // Logits 100 + 0.5 * (i % 4) (exact in bf16: spacing 0.5 in [64, 128)); the exponentials after
  // the max is subtracted sum to ~2250, where a bf16 accumulator's spacing (16) swallows each one.
  std::vector<float> v(kD);
  for (int64_t i = 0; i < kD; ++i) v[i] = 100.0f + 0.5f * static_cast<float>(i % 4);
  const Tensor x = Tensor::from_f32(v, {1, kD}, DType::BF16);
  ASSERT_EQ(x.to_f32_vector(), v);
  double sum = 0;
  for (float f : v) sum += std::exp(double(f) - 101.5);
  std::vector<double> ref(kD);
  for (int64_t i = 0; i < kD; ++i) ref[i] = std::exp(double(v[i]) - 101.5) / sum;

  const Tensor p = ops::softmax(x, -1);
  EXPECT_EQ(p.dtype(), DType::BF16);
  const double err = max_rel_diff(p.to_f64_vector(), ref);
  EXPECT_LE(err, 1e-2) << "softmax under bf16: max relative err " << err;  // bf16 rounds by < 2^-8

  // Control: the denominator accumulated in bf16.
  std::vector<float> e(kD);
  for (int64_t i = 0; i < kD; ++i) e[i] = bf16_round(std::exp(v[i] - 101.5f));
  const float s16 = bf16_sum(e);
  std::vector<double> bad(kD);
  for (int64_t i = 0; i < kD; ++i) bad[i] = bf16_round(e[i] / s16);
  EXPECT_GT(max_rel_diff(bad, ref), 0.5) << "the control should miss the bound";
}
