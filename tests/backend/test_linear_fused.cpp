// ops::linear_gelu and ops::linear_gated_residual: the same bits as linear followed
// by gelu / gated_residual, on every dispatch (fused in the AMX kernel's output
// stage, or the two ops where it does not run), for tails in M and N, both GELU
// forms, with and without bias, every gate broadcast, f32 and bf16, and any
// thread count; and the fused path is taken where the AMX kernel runs.
#include <gtest/gtest.h>

#include <cmath>

#include "backend/cpu/gemm.h"
#include "backend/ops.h"
#include "helpers.h"

using namespace vidax;
using namespace vidax::test;

namespace {

// Restores the default dispatch (by size) after a test that changes it.
struct PolicyScope {
  explicit PolicyScope(cpu::AmxGemmPolicy p) { cpu::set_amx_gemm_policy(p); }
  ~PolicyScope() { cpu::set_amx_gemm_policy(cpu::AmxGemmPolicy::BySize); }
};

struct Case {
  int64_t M, K, N;
};
// Tails in M (1, primes) and N (non-multiples of 16 and 32), K from 1 to past 4096.
const Case kCases[] = {{1, 64, 48}, {37, 96, 33}, {300, 130, 4099}, {64, 4100, 80}, {129, 1536, 4128}};

TEST(LinearFused, GeluMatchesLinearThenGeluBitForBit) {
  for (auto policy : {cpu::AmxGemmPolicy::BySize, cpu::AmxGemmPolicy::Always, cpu::AmxGemmPolicy::Never}) {
    PolicyScope scope(policy);
    for (DType dt : {DType::BF16, DType::F32})
      for (const Case& c : kCases)
        for (bool with_bias : {false, true})
          for (ops::GeluMode mode : {ops::GeluMode::Tanh, ops::GeluMode::Erf}) {
            SCOPED_TRACE(testing::Message() << dtype_name(dt) << " M=" << c.M << " K=" << c.K << " N=" << c.N
                                            << " bias=" << with_bias << " policy=" << static_cast<int>(policy));
            const Tensor x = randn({c.M, c.K}, 1, dt);
            const Tensor w = randn({c.N, c.K}, 2, dt, 1.0 / std::sqrt(static_cast<double>(c.K)));
            const std::optional<Tensor> b = with_bias ? std::optional<Tensor>(randn({c.N}, 3, dt)) : std::nullopt;
            const Tensor fused = ops::linear_gelu(x, w, b, mode);
            const Tensor plain = ops::gelu(ops::linear(x, w, b), mode);
            EXPECT_EQ(fused.dtype(), dt);
            EXPECT_TRUE(same_bits(fused, plain));
          }
  }
}

TEST(LinearFused, GatedResidualMatchesLinearThenGatedResidualBitForBit) {
  const int64_t B = 2, L = 150, K = 1536, N = 4100;  // N >= 1024: the AMX kernel by size
  for (DType dt : {DType::BF16, DType::F32}) {
    const Tensor x = randn({B, L, K}, 4, dt);
    const Tensor w = randn({N, K}, 5, dt, 1.0 / std::sqrt(static_cast<double>(K)));
    const Tensor bias = randn({N}, 6, dt);
    const Tensor residual = randn({B, L, N}, 7);
    // A DiT's gate: one row per batch, a strided view of the modulation [B, 6, N].
    const Tensor modulation = randn({B, 6, N}, 8);
    const Tensor gates[] = {modulation.slice(1, 5, 6), randn({N}, 9), randn({1, 1, N}, 10), randn({B, L, N}, 11),
                            randn({L, 1}, 12), randn({B, 1, N}, 13, DType::BF16)};
    for (const Tensor& gate : gates)
      for (bool with_bias : {false, true}) {
        SCOPED_TRACE(testing::Message() << dtype_name(dt) << " gate " << gate.str() << " bias=" << with_bias);
        const std::optional<Tensor> b = with_bias ? std::optional<Tensor>(bias) : std::nullopt;
        const Tensor fused = ops::linear_gated_residual(x, w, b, residual, gate);
        const Tensor plain = ops::gated_residual(residual, gate, ops::linear(x, w, b));
        EXPECT_EQ(fused.dtype(), DType::F32);
        EXPECT_TRUE(same_bits(fused, plain));
      }
    // A bf16 residual gives a bf16 result (the residual's dtype), as gated_residual.
    const Tensor r16 = residual.to(DType::BF16);
    const Tensor gate = modulation.slice(1, 5, 6);
    EXPECT_TRUE(same_bits(ops::linear_gated_residual(x, w, bias, r16, gate),
                          ops::gated_residual(r16, gate, ops::linear(x, w, bias))));
  }
}

TEST(LinearFused, TheAmxKernelAppliesTheSecondOpInItsOutputStage) {
  PolicyScope scope(cpu::AmxGemmPolicy::BySize);
  if (!cpu::amx_gemm_active()) GTEST_SKIP() << "no AMX on this CPU/build: no fused output stage";
  const Tensor x = randn({40, 1536}, 14, DType::BF16);
  const Tensor w_up = randn({4096, 1536}, 15, DType::BF16, 0.03);
  const Tensor w_down = randn({1536, 4096}, 16, DType::BF16, 0.02);
  const Tensor residual = randn({40, 1536}, 17);
  const Tensor gate = randn({1536}, 18);
  const uint64_t before = cpu::amx_fused_epilogue_calls();
  const Tensor h = ops::linear_gelu(x, w_up, std::nullopt, ops::GeluMode::Tanh);
  ops::linear_gated_residual(h, w_down, std::nullopt, residual, gate);
  EXPECT_EQ(cpu::amx_fused_epilogue_calls(), before + 2);
  // Below the size threshold (K and N < 1024) oneDNN runs the GEMM and the ops stay separate.
  const Tensor w_small = randn({64, 512}, 19, DType::BF16);
  ops::linear_gelu(x.slice(1, 0, 512), w_small, std::nullopt, ops::GeluMode::Tanh);
  EXPECT_EQ(cpu::amx_fused_epilogue_calls(), before + 2);
}

TEST(LinearFused, AgreesWithADoubleReference) {
  // gelu(x W^T + b) with the product rounded to bf16 first, within bf16 rounding and the GELU's few ulp.
  const int64_t M = 33, K = 4100, N = 45;
  const Tensor x = randn({M, K}, 20, DType::BF16);
  const Tensor w = randn({N, K}, 21, DType::BF16, 1.0 / std::sqrt(static_cast<double>(K)));
  const Tensor got = ops::linear_gelu(x, w, std::nullopt, ops::GeluMode::Tanh);
  const std::vector<double> xv = x.to_f64_vector(), wv = w.to_f64_vector();
  std::vector<double> ref(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += xv[m * K + k] * wv[n * K + k];
      ref[m * N + n] = 0.5 * s * (1 + std::tanh(std::sqrt(2 / M_PI) * (s + 0.044715 * s * s * s)));
    }
  expect_close(got, ref, 1e-2, 2 * eps_of(DType::BF16), "linear_gelu");
}

TEST(LinearFused, BitIdenticalAcrossThreadCounts) {
  const Tensor x = randn({2, 97, 1536}, 22, DType::BF16);
  const Tensor w_up = randn({4128, 1536}, 23, DType::BF16, 0.03);
  const Tensor w_down = randn({1536, 4128}, 24, DType::BF16, 0.02);
  const Tensor residual = randn({2, 97, 1536}, 25);
  const Tensor modulation = randn({2, 6, 1536}, 26);
  expect_bit_identical_across_threads([&] {
    const Tensor h = ops::linear_gelu(x, w_up, std::nullopt, ops::GeluMode::Tanh);
    return std::vector<Tensor>{h, ops::linear_gated_residual(h, w_down, std::nullopt, residual, modulation.slice(1, 5, 6))};
  });
}

TEST(LinearFused, RejectsMismatchedResidual) {
  const Tensor x = randn({4, 8}, 27);
  const Tensor w = randn({6, 8}, 28);
  EXPECT_THROW(ops::linear_gated_residual(x, w, std::nullopt, randn({4, 5}, 29), randn({6}, 30)), Error);
  EXPECT_THROW(ops::linear_gated_residual(x, w, std::nullopt, randn({4, 6}, 29), randn({5}, 30)), Error);
}

}  // namespace
