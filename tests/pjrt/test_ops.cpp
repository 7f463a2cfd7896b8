// Every op of the lowered set, recorded on Meta and run through the CPU plugin, against the CPU
// backend on the same values (fp32: rel_l2 <= 1e-6 unless the op says otherwise). One TEST per op
// family: each is its own ctest process.
#include "pjrt_test.h"

#include "backend/ops.h"

using namespace vidax;
using pjrt_test::expect_same;
using pjrt_test::randt;

namespace {
constexpr double kTol = 1e-6;
}

TEST(PjrtOps, Elementwise) {
  VIDAX_REQUIRE_PJRT();
  const Tensor a = randt({2, 3, 4}, 1), b = randt({3, 1}, 2), c = randt({2, 3, 4}, 3, 3.0);
  expect_same([](auto& x) { return ops::add(x[0], x[1]); }, {a, b}, kTol);
  expect_same([](auto& x) { return ops::sub(x[0], x[1]); }, {a, b}, kTol);
  expect_same([](auto& x) { return ops::mul(x[0], x[1]); }, {a, b}, kTol);
  expect_same([](auto& x) { return ops::div(x[0], ops::add_scalar(x[1], 2.0)); }, {a, b}, kTol);
  expect_same([](auto& x) { return ops::scale(x[0], -0.75); }, {a}, kTol);
  expect_same([](auto& x) { return ops::axpby(0.3, x[0], -1.5, x[1]); }, {a, c}, kTol);
  expect_same([](auto& x) { return ops::clamp(x[0], -1.0, 0.5); }, {c}, kTol);
  expect_same([](auto& x) { return ops::gelu(x[0], ops::GeluMode::Erf); }, {c}, kTol);
  expect_same([](auto& x) { return ops::gelu(x[0], ops::GeluMode::Tanh); }, {c}, kTol);
  expect_same([](auto& x) { return ops::silu(x[0]); }, {c}, kTol);
  expect_same([](auto& x) { return ops::sigmoid(x[0]); }, {c}, kTol);
  expect_same([](auto& x) { return ops::tanh(x[0]); }, {c}, kTol);
  expect_same([](auto& x) { return ops::relu(x[0]); }, {c}, kTol);
}

TEST(PjrtOps, ModulationAndGatedResidual) {
  VIDAX_REQUIRE_PJRT();
  const Tensor x = randt({2, 5, 8}, 4), shift = randt({2, 1, 8}, 5), scale = randt({2, 1, 8}, 6);
  expect_same([](auto& v) { return ops::modulate(v[0], v[1], v[2]); }, {x, shift, scale}, kTol);
  expect_same([](auto& v) { return ops::gated_residual(v[0], v[1], v[2]); }, {x, shift, randt({2, 5, 8}, 7)}, kTol);
}

TEST(PjrtOps, Norms) {
  VIDAX_REQUIRE_PJRT();
  const Tensor x = randt({3, 4, 16}, 8, 2.0), w = randt({16}, 9), b = randt({16}, 10);
  const Tensor shift = randt({3, 1, 16}, 11), scale = randt({3, 1, 16}, 12);
  expect_same([](auto& v) { return ops::layer_norm(v[0], v[1], v[2], 1e-6); }, {x, w, b}, kTol);
  expect_same([](auto& v) { return ops::layer_norm(v[0], std::nullopt, std::nullopt, 1e-5); }, {x}, kTol);
  expect_same([](auto& v) { return ops::layer_norm_modulate(v[0], v[1], v[2], 1e-6); }, {x, shift, scale}, kTol);
  expect_same([](auto& v) { return ops::rms_norm(v[0], v[1], 1e-6); }, {x, w}, kTol);
  expect_same([](auto& v) { return ops::rms_norm(v[0], std::nullopt, 1e-5); }, {x}, kTol);
  // The weight as a host tensor: a Param uploaded once (resident), not an input.
  expect_same([&](auto& v) { return ops::rms_norm(v[0], w, 1e-6); }, {x}, kTol);
}

TEST(PjrtOps, SoftmaxSumMean) {
  VIDAX_REQUIRE_PJRT();
  const Tensor x = randt({2, 3, 7}, 13, 4.0);
  expect_same([](auto& v) { return ops::softmax(v[0], -1); }, {x}, kTol);
  expect_same([](auto& v) { return ops::softmax(v[0], 1); }, {x}, kTol);
  expect_same([](auto& v) { return ops::sum(v[0], 2); }, {x}, kTol);
  expect_same([](auto& v) { return ops::mean(v[0], 0, true); }, {x}, kTol);
}

TEST(PjrtOps, LinearAndMatmul) {
  VIDAX_REQUIRE_PJRT();
  const Tensor x = randt({2, 5, 24}, 14), w = randt({12, 24}, 15), b = randt({12}, 16);
  const Tensor res = randt({2, 5, 12}, 17), gate = randt({2, 1, 12}, 18);
  expect_same([](auto& v) { return ops::linear(v[0], v[1], v[2]); }, {x, w, b}, kTol);
  expect_same([](auto& v) { return ops::linear(v[0], v[1]); }, {x, w}, kTol);
  expect_same([&](auto& v) { return ops::linear(v[0], w, b); }, {x}, kTol);  // weights resident
  expect_same([](auto& v) { return ops::linear_gelu(v[0], v[1], v[2], ops::GeluMode::Tanh); }, {x, w, b}, kTol);
  expect_same([](auto& v) { return ops::linear_gated_residual(v[0], v[1], v[2], v[3], v[4]); }, {x, w, b, res, gate},
              kTol);
  expect_same([](auto& v) { return ops::matmul(v[0], v[1]); }, {randt({2, 3, 4, 5}, 19), randt({3, 5, 6}, 20)}, kTol);
}

TEST(PjrtOps, Bf16LinearRoundsAsTheCpuBackend) {
  VIDAX_REQUIRE_PJRT();
  const Tensor x = randt({4, 32}, 21, 1.0, DType::BF16), w = randt({16, 32}, 22, 1.0, DType::BF16);
  expect_same([](auto& v) { return ops::linear(v[0], v[1]); }, {x, w}, 4e-3);  // one bf16 rounding apart at most
  expect_same([](auto& v) { return ops::cast(ops::silu(v[0]), DType::F32); }, {x}, 4e-3);
}

TEST(PjrtOps, RopeBothModesF32AndF64Tables) {
  VIDAX_REQUIRE_PJRT();
  const Tensor x = randt({2, 6, 3, 8}, 23);
  const Tensor c = randt({6, 4}, 24), s = randt({6, 4}, 25);
  const Tensor c64 = Tensor::from_f64(c.to_f64_vector(), {6, 4}), s64 = Tensor::from_f64(s.to_f64_vector(), {6, 4});
  for (ops::RopeMode m : {ops::RopeMode::InterleavedPairs, ops::RopeMode::SplitHalf}) {
    expect_same([m](auto& v) { return ops::rope(v[0], v[1], v[2], m); }, {x, c, s}, kTol);
    expect_same([m](auto& v) { return ops::rope(v[0], v[1], v[2], m); }, {x, c64, s64}, kTol);
  }
}

TEST(PjrtOps, AttentionOneBlockAndBlockwiseOnlineSoftmax) {
  VIDAX_REQUIRE_PJRT();
  const Tensor q = randt({2, 9, 2, 8}, 26, 2.0), k = randt({2, 13, 2, 8}, 27, 2.0), v = randt({2, 13, 2, 8}, 28);
  pjrt::LowerOptions blocks;
  blocks.attention_block = 4;  // 13 keys: 4 blocks, the last one padded and masked
  for (const pjrt::LowerOptions& o : {pjrt::LowerOptions{}, blocks}) {
    SCOPED_TRACE(o.attention_block);
    expect_same([](auto& x) { return ops::attention(x[0], x[1], x[2]); }, {q, k, v}, kTol, o);
    ops::AttentionOptions lens;
    lens.kv_lens = {13, 6};
    expect_same([&](auto& x) { return ops::attention(x[0], x[1], x[2], lens); }, {q, k, v}, kTol, o);
    ops::AttentionOptions causal;
    causal.causal = true;
    causal.scale = 0.2;
    expect_same([&](auto& x) { return ops::attention(x[0], x[1], x[2], causal); }, {q, k, v}, kTol, o);
    ops::AttentionOptions bias;
    bias.bias = randt({1, 2, 9, 13}, 29);
    expect_same([&](auto& x) { return ops::attention(x[0], x[1], x[2], bias); }, {q, k, v}, kTol, o);
  }
}

TEST(PjrtOps, BlockwiseAttentionNeverBuildsTheFullScoreMatrix) {
  // 32,760 tokens of one head: the blocked program holds [Lq, block] scores, never [Lq, Lk].
  Trace trace;
  Tensor y;
  {
    RecordingScope rec(trace);
    const Tensor q = Tensor::empty({1, 32760, 12, 128}, DType::BF16, Device::Meta);
    y = ops::attention(q, q, q);
  }
  const pjrt::Lowered L = pjrt::lower_to_stablehlo(trace, {pjrt::trace_id(trace, y)});
  EXPECT_NE(L.mlir.find("stablehlo.while"), std::string::npos);
  EXPECT_EQ(L.mlir.find("32760x32760"), std::string::npos);
  EXPECT_NE(L.mlir.find("precision HIGHEST"), std::string::npos);
}

TEST(PjrtOps, DataMovementAndViews) {
  VIDAX_REQUIRE_PJRT();
  const Tensor x = randt({2, 3, 4, 5}, 30);
  expect_same([](auto& v) { return ops::copy(v[0].permute({0, 2, 1, 3})); }, {x}, 0);
  expect_same([](auto& v) { return ops::copy(v[0].slice(3, 1, 5, 2).select(1, 2)); }, {x}, 0);
  expect_same([](auto& v) { return ops::copy(v[0].reshape({6, 20}).unsqueeze(0).transpose(1, 2)); }, {x}, 0);
  expect_same([](auto& v) { return ops::concat({v[0], ops::scale(v[0], 2.0)}, 2); }, {x}, 0);
  expect_same([](auto& v) { return ops::pad(v[0], {1, 2, 0, 3}); }, {x}, 0);
  expect_same([](auto& v) { return ops::pad(v[0], {2, 1, 1, 0}, ops::PadMode::Replicate); }, {x}, 0);
  expect_same([](auto& v) { return ops::cast(v[0], DType::BF16); }, {x}, 0);
  // A small host constant (recorded by value) in an op.
  const Tensor k = Tensor::from_f32({1, 2, 3, 4, 5}, {5});
  expect_same([&](auto& v) { return ops::mul(v[0], k); }, {x}, 0);
}

TEST(PjrtOps, AnOpOutsideTheLoweredSetIsNamed) {
  Trace trace;
  Tensor y;
  {
    RecordingScope rec(trace);
    y = ops::upsample_nearest(Tensor::empty({1, 2, 3, 3}, DType::F32, Device::Meta), {2, 2});
  }
  try {
    pjrt::lower_to_stablehlo(trace, {pjrt::trace_id(trace, y)});
    FAIL() << "lowered";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("op 'upsample_nearest' is not lowered yet"), std::string::npos) << e.what();
  }
}
