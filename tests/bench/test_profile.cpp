// vidax bench --profile's timing backend: every fused op reaches the CPU backend's
// own (fused) path and is counted once under its own name.
#include <gtest/gtest.h>

#include "backend/ops.h"
#include "core/tensor.h"
#include "pipeline/bench_profile.h"

using namespace vidax;
using namespace vidax::pipeline;

namespace {

Tensor ramp(const Shape& shape, DType dt = DType::F32) {
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>((i * 37 % 101) - 50) / 50.0f;
  return Tensor::from_f32(v, shape, dt);
}

TEST(BenchProfile, FusedOpsAreForwardedAndCountedOnce) {
  OpProfile prof;
  {
    const ScopedOpProfiler scope(prof);
    // Fused linear ops in fp32: no fused GEMM stage there, so the CPU backend runs the two
    // kernels itself; the profile must not count an extra "linear" or "gelu".
    const Tensor x = ramp({4, 8}), w = ramp({6, 8}), r = ramp({4, 6}), g = ramp({6});
    ops::linear_gelu(x, w, std::nullopt, ops::GeluMode::Tanh);
    ops::linear_gated_residual(x, w, std::nullopt, r, g);
    // The VAE's fused ops: the CPU backend reads cached frames in place (no concat / pad / conv3d).
    const Tensor f0 = ramp({1, 3, 2, 5, 5}), f1 = ramp({1, 3, 1, 5, 5}), cw = ramp({4, 3, 3, 3, 3});
    ops::causal_conv3d({f0, f1}, cw, std::nullopt, {1, 1, 1}, {2, 1, 1});
    ops::l2_norm_scale_silu(ramp({1, 3, 2, 4, 4}), ramp({3}), 1.7, 1e-12);
  }
  for (const char* op : {"linear_gelu", "linear_gated_residual", "causal_conv3d", "l2_norm_scale_silu"}) {
    ASSERT_TRUE(prof.ops.count(op)) << op;
    EXPECT_EQ(prof.ops.at(op).calls, 1) << op;
  }
  for (const char* op : {"linear", "gelu", "gated_residual", "concat", "pad", "conv3d", "l2_normalize", "silu"})
    EXPECT_EQ(prof.ops.count(op), 0u) << op << " was counted on its own";
  EXPECT_STREQ(OpProfile::op_class("linear_gelu"), "gemm");
  EXPECT_STREQ(OpProfile::op_class("causal_conv3d"), "gemm");
}

// FLOPs as executed (bench's step_flops): a GEMM, attention over the keys kv_lens leaves, a
// convolution; and a block-quantized weight big enough to be widened in several panels counted
// once (its panels' GEMMs come back through the profiler's linear: bugs row 134).
TEST(BenchProfile, FlopsAreCountedOnceAsExecuted) {
  OpProfile prof;
  {
    const ScopedOpProfiler scope(prof);
    ops::linear(ramp({4, 8}), ramp({6, 8}), std::nullopt);
    ops::AttentionOptions a;
    a.kv_lens = {3};
    ops::attention(ramp({1, 5, 2, 8}), ramp({1, 7, 2, 8}), ramp({1, 7, 2, 4}), a);
  }
  EXPECT_DOUBLE_EQ(prof.ops.at("linear").flops, 2.0 * 4 * 6 * 8);
  EXPECT_DOUBLE_EQ(prof.ops.at("attention").flops, 2.0 * 3 * 5 * 2 * (8 + 4));  // 3 of the 7 keys
  EXPECT_DOUBLE_EQ(prof.total_flops(), 2.0 * 4 * 6 * 8 + 2.0 * 3 * 5 * 2 * (8 + 4));

  // q8_0 [8192, 1024] in bf16: panels of 4096 rows (8 MiB), so two GEMMs of half the rows.
  const int64_t M = 4, K = 1024, N = 8192;
  const Tensor w = Tensor::quantize(ramp({N, K}), QuantType::Q8_0);
  OpProfile q;
  {
    const ScopedOpProfiler scope(q);
    ops::linear(ramp({M, K}, DType::BF16), w, std::nullopt);
  }
  EXPECT_DOUBLE_EQ(q.total_flops(), 2.0 * M * N * K);
}

}  // namespace

