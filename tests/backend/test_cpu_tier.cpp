// The CPU tier (backend/cpu/cpu_tier.h) and the per-tier kernel copies (kernel_tiers.h):
// the tier in use follows VIDAX_CPU_TIER and never exceeds the host's, the AMX paths are
// entered only at the amx tier, the default precision follows the tier, the measured
// machine peak is not below the engine's own GEMM, and the avx2 and avx512 copies of the
// kernels agree: bit for bit where both follow the same operation order (the exact ops and
// the norms' fixed 16-lane f64 sums), within a few ulp where the vector exp differs from libm.
#include <gtest/gtest.h>
#include <omp.h>

#include <time.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "backend/cpu/amx.h"
#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/cpu_tier.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/kernel_tiers.h"
#include "backend/cpu/peak.h"
#include "helpers.h"

namespace vidax {
namespace {

using cpu::CpuTier;

bool same_bits(const Tensor& a, const Tensor& b) {
  return a.dtype() == b.dtype() && a.numel() == b.numel() &&
         std::memcmp(a.data_ptr(), b.data_ptr(), a.numel() * dtype_size(a.dtype())) == 0;
}

TEST(CpuTier, NamesRoundTrip) {
  for (CpuTier t : {CpuTier::Avx2, CpuTier::Avx512, CpuTier::Avx512Bf16, CpuTier::Amx})
    EXPECT_EQ(cpu::parse_cpu_tier(cpu::cpu_tier_name(t)), t);
  EXPECT_FALSE(cpu::parse_cpu_tier("avx512bf16").has_value());
  EXPECT_FALSE(cpu::parse_cpu_tier("").has_value());
}

TEST(CpuTier, FollowsTheCapAndNeverExceedsTheHost) {
  const CpuTier t = cpu::cpu_tier(), host = cpu::host_cpu_tier();
  EXPECT_LE(static_cast<int>(t), static_cast<int>(host));
  const char* env = std::getenv("VIDAX_CPU_TIER");
  if (env && *env) EXPECT_EQ(cpu::cpu_tier_name(t), std::string(env));
  else EXPECT_EQ(t, host);
  const std::string report = cpu::cpu_tier_report();
  EXPECT_NE(report.find(std::string("cpu tier ") + cpu::cpu_tier_name(t) + " "), std::string::npos) << report;
  EXPECT_NE(report.find(cpu::cpu_features()), std::string::npos) << report;
  // The features list what the host tier needs.
  const std::string f = cpu::cpu_features();
  EXPECT_NE(f.find("avx2"), std::string::npos) << f;
  if (host >= CpuTier::Avx512) {
    EXPECT_NE(f.find("avx512vl"), std::string::npos) << f;
  }
  if (host >= CpuTier::Avx512Bf16) {
    EXPECT_NE(f.find("avx512_bf16"), std::string::npos) << f;
  }
}

TEST(CpuTier, AmxOnlyAtTheAmxTier) {
  const bool amx = cpu::cpu_tier() == CpuTier::Amx;
  EXPECT_EQ(cpu::amx::available(), amx);
  EXPECT_EQ(cpu::attn::amx_available(), amx);
  if (!amx) {
    EXPECT_FALSE(cpu::amx_gemm_active());
  }
}

TEST(CpuTier, DefaultPrecisionFollowsBf16Arithmetic) {
  const bool bf16 = cpu::cpu_tier() >= CpuTier::Avx512Bf16;
  EXPECT_EQ(cpu::has_bf16_arithmetic(), bf16);
  const cpu::PrecisionChoice c = cpu::default_compute_precision("bf16");
  EXPECT_EQ(c.precision, bf16 ? "bf16" : "fp32") << c.reason;
  EXPECT_NE(c.reason.find(cpu::cpu_tier_name(cpu::cpu_tier())), std::string::npos) << c.reason;
  EXPECT_EQ(cpu::default_compute_precision("fp32").precision, "fp32");
}

// A GEMM faster than the register-only peak would mean the peak's micro-kernel is wrong.
TEST(CpuTier, MachinePeakIsNotBelowTheGemm) {
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const cpu::MachinePeak peak = cpu::measure_machine_peak(DType::F32, 1);
  const int64_t M = 256, N = 512, K = 512;
  std::vector<float> A(M * K, 0.5f), B(N * K, 0.25f), C(M * N);
  cpu::sgemm(M, N, K, A.data(), K, B.data(), K, true, C.data(), N);  // warm-up
  double best = 0;
  for (int r = 0; r < 5; ++r) {
    timespec t0{}, t1{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t0);
    cpu::sgemm(M, N, K, A.data(), K, B.data(), K, true, C.data(), N);
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t1);
    const double s = static_cast<double>(t1.tv_sec - t0.tv_sec) + 1e-9 * static_cast<double>(t1.tv_nsec - t0.tv_nsec);
    if (s > 0) best = std::max(best, 2.0 * M * N * K / s);
  }
  omp_set_num_threads(saved);
  EXPECT_EQ(C[0], 0.5f * 0.25f * K);
  EXPECT_GT(peak.flops_per_cpu_second, 1e9) << peak.method;
  EXPECT_LE(best, 1.1 * peak.flops_per_cpu_second) << "GEMM " << best / 1e9 << " GFLOP/s vs peak "
                                                    << peak.flops_per_cpu_second / 1e9 << " (" << peak.method << ")";
  EXPECT_FALSE(peak.method.empty());
}

class TierCopies : public ::testing::Test {
 protected:
  void SetUp() override {
    if (cpu::host_cpu_tier() < CpuTier::Avx512) GTEST_SKIP() << "this CPU has no AVX-512: one kernel copy runs";
  }
};

TEST_F(TierCopies, ExactOpsAreBitIdentical) {
  for (DType dt : {DType::F32, DType::BF16}) {
    const Tensor x = test::randn({3, 37, 40}, 1, dt), s = test::randn({1, 1, 40}, 2, dt), g = test::randn({3, 1, 40}, 3, dt);
    Tensor a = Tensor::empty(x.shape(), dt), b = Tensor::empty(x.shape(), dt);
    cpu::tier_avx2::modulate(x, s, g, a);
    cpu::tier_avx512::modulate(x, s, g, b);
    EXPECT_TRUE(same_bits(a, b)) << "modulate " << dtype_name(dt);
    cpu::tier_avx2::gated_residual(x, g, s, a);
    cpu::tier_avx512::gated_residual(x, g, s, b);
    EXPECT_TRUE(same_bits(a, b)) << "gated_residual " << dtype_name(dt);
    cpu::tier_avx2::binary(cpu::Binary::Mul, x, g, a);
    cpu::tier_avx512::binary(cpu::Binary::Mul, x, g, b);
    EXPECT_TRUE(same_bits(a, b)) << "mul " << dtype_name(dt);
    const Tensor w = test::randn({40}, 4, DType::F32), bias = test::randn({40}, 5, DType::F32);
    cpu::tier_avx2::layer_norm(x, w, bias, 1e-6, a);
    cpu::tier_avx512::layer_norm(x, w, bias, 1e-6, b);
    EXPECT_TRUE(same_bits(a, b)) << "layer_norm " << dtype_name(dt);
    cpu::tier_avx2::rms_norm(x, w, 1e-6, a);
    cpu::tier_avx512::rms_norm(x, w, 1e-6, b);
    EXPECT_TRUE(same_bits(a, b)) << "rms_norm " << dtype_name(dt);
  }
}

TEST_F(TierCopies, TranscendentalsAgreeWithinUlps) {
  const Tensor x = test::randn({4, 1000}, 6, DType::F32, 3.0);
  for (cpu::Unary op : {cpu::Unary::GeluTanh, cpu::Unary::GeluErf, cpu::Unary::Silu, cpu::Unary::Sigmoid,
                        cpu::Unary::Tanh}) {
    Tensor a = Tensor::empty(x.shape(), DType::F32), b = Tensor::empty(x.shape(), DType::F32);
    cpu::tier_avx2::unary(op, x, 0, 0, a);
    cpu::tier_avx512::unary(op, x, 0, 0, b);
    test::expect_close(a, b.to_f64_vector(), 1e-6, 4e-7);
  }
}

TEST_F(TierCopies, AttentionAgrees) {
  const Tensor q = test::randn({1, 70, 2, 48}, 7), k = test::randn({1, 130, 2, 48}, 8), v = test::randn({1, 130, 2, 40}, 9);
  ops::AttentionOptions opt;
  opt.scale = 1.0 / std::sqrt(48.0);
  opt.causal = true;
  Tensor a = Tensor::empty({1, 70, 2, 40}, DType::F32), b = Tensor::empty({1, 70, 2, 40}, DType::F32);
  cpu::tier_avx2::attention(q, k, v, opt, a);
  cpu::tier_avx512::attention(q, k, v, opt, b);
  test::expect_close(a, b.to_f64_vector(), 1e-5, 1e-6);
}

}  // namespace
}  // namespace vidax
