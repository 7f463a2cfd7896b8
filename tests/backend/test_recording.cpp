#include <gtest/gtest.h>

#include "backend/ops.h"
#include "backend/recording.h"
#include "helpers.h"

using namespace vidax;
using namespace vidax::test;

TEST(Recording, RecordsATinyGraphWithoutData) {
  // A DiT-like block on Meta activations with real CPU weights.
  Tensor x = Tensor::empty({2, 16, 32}, DType::BF16, Device::Meta);
  Tensor w = randn({96, 32}, 1), b = randn({96}, 2), wo = randn({32, 32}, 3);
  Tensor shift = Tensor::empty({2, 1, 32}, DType::F32, Device::Meta);
  Tensor scale = Tensor::empty({2, 1, 32}, DType::F32, Device::Meta);
  Trace trace;
  Tensor y;
  {
    RecordingScope rec(trace);
    Tensor h = ops::layer_norm_modulate(x, shift, scale, 1e-6);
    Tensor qkv = ops::linear(h, w, b).view({2, 16, 3, 2, 16});
    Tensor a = ops::attention(qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2), ops::AttentionOptions{.scale = 0, .kv_lens = {16, 9}, .bias = std::nullopt, .causal = false});
    y = ops::gated_residual(x, scale, ops::linear(a.reshape({2, 16, 32}), wo));
  }
  EXPECT_EQ(y.device(), Device::Meta);
  EXPECT_EQ(y.shape(), (Shape{2, 16, 32}));
  EXPECT_EQ(y.dtype(), DType::BF16);
  ASSERT_EQ(trace.ops.size(), 5u) << trace.str();
  EXPECT_EQ(trace.ops[0].name, "layer_norm_modulate");
  EXPECT_EQ(trace.ops[0].attr("eps"), "9.9999999999999995e-07");
  EXPECT_EQ(trace.ops[1].name, "linear");
  EXPECT_EQ(trace.ops[1].inputs[1].str(), "F32[96, 32]@cpu");
  EXPECT_EQ(trace.ops[1].output.str(), "BF16[2, 16, 96]");
  EXPECT_EQ(trace.ops[2].name, "attention");
  EXPECT_EQ(trace.ops[2].inputs[0].str(), "BF16[2, 16, 2, 16]");
  EXPECT_EQ(trace.ops[2].attr("kv_lens"), "[16, 9]");
  EXPECT_EQ(trace.ops[2].attr("scale"), "0.25");
  EXPECT_EQ(trace.ops[3].name, "linear");
  EXPECT_EQ(trace.ops[4].name, "gated_residual");
  EXPECT_EQ(trace.ops[4].str(), "gated_residual(x=BF16[2, 16, 32], gate=F32[2, 1, 32], y=BF16[2, 16, 32]) -> BF16[2, 16, 32]");
}

TEST(Recording, ShapeErrorsStillRaiseAndNoScopeRecordsNothing) {
  Tensor x = Tensor::empty({4, 8}, DType::F32, Device::Meta);
  Trace trace;
  {
    RecordingScope rec(trace);
    EXPECT_THROW(ops::linear(x, Tensor::empty({3, 7}, DType::F32, Device::Meta)), Error);
    EXPECT_THROW(ops::all_finite(x), Error);
    Trace inner;
    {
      RecordingScope nested(inner);
      ops::silu(x);
    }
    ops::conv2d(Tensor::empty({1, 3, 9, 9}, DType::F32, Device::Meta), Tensor::empty({4, 3, 3, 3}, DType::F32, Device::Meta),
                std::nullopt, {2, 2}, {1, 1});
    EXPECT_EQ(inner.ops.size(), 1u);
  }
  ASSERT_EQ(trace.ops.size(), 1u);
  EXPECT_EQ(trace.ops[0].output.shape, (Shape{1, 4, 5, 5}));
  EXPECT_EQ(trace.ops[0].attr("stride"), "[2, 2]");
  Tensor s = ops::sum(x, 1);  // no scope: shapes only
  EXPECT_EQ(s.shape(), (Shape{4}));
  EXPECT_EQ(trace.ops.size(), 1u);
}

// A norm's output dtype (the fused cast) is recorded as the op's output; no cast op appears.
TEST(Recording, NormOutputDtypeIsTheRecordedOutput) {
  Tensor x = Tensor::empty({2, 16, 32}, DType::F32, Device::Meta);
  Tensor shift = Tensor::empty({2, 1, 32}, DType::F32, Device::Meta);
  Trace trace;
  {
    RecordingScope rec(trace);
    EXPECT_EQ(ops::layer_norm_modulate(x, shift, shift, 1e-6, DType::BF16).dtype(), DType::BF16);
    EXPECT_EQ(ops::layer_norm(x, randn({32}, 1), std::nullopt, 1e-6, DType::BF16).dtype(), DType::BF16);
    EXPECT_EQ(ops::layer_norm(x, std::nullopt, std::nullopt, 1e-6).dtype(), DType::F32);
  }
  ASSERT_EQ(trace.ops.size(), 3u) << trace.str();
  EXPECT_EQ(trace.ops[0].str(),
            "layer_norm_modulate(x=F32[2, 16, 32], shift=F32[2, 1, 32], scale=F32[2, 1, 32], eps=9.9999999999999995e-07) "
            "-> BF16[2, 16, 32]");
  EXPECT_EQ(trace.ops[1].output.str(), "BF16[2, 16, 32]");
  EXPECT_EQ(trace.ops[2].output.str(), "F32[2, 16, 32]");
}
