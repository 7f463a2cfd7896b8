// Quantized tensors (Tensor::quantize / Tensor::quantized) and compute on them: ops::linear
// and nn::Linear with a block-quantized weight equal dequantize-then-linear (the same GEMM on
// each panel of rows: equal up to fp32 summation order), in f32 and bf16, over several panels;
// the recording backend records linear_quantized with the type as attributes.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>

#include "backend/ops.h"
#include "backend/recording.h"
#include "core/quant.h"
#include "core/rng.h"
#include "nn/linear.h"
#include "nn/params.h"

namespace vidax {
namespace {

Tensor randn(const Shape& s, uint64_t seed, DType dt = DType::F32) {
  TorchGenerator g(seed);
  return g.randn(s, DType::F32).to(dt);
}

double rel_l2(const Tensor& a, const Tensor& b) {
  const auto x = a.to_f32_vector(), y = b.to_f32_vector();
  EXPECT_EQ(x.size(), y.size());
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) {
    num += double(x[i] - y[i]) * (x[i] - y[i]);
    den += double(y[i]) * y[i];
  }
  return std::sqrt(num / std::max(den, 1e-300));
}

TEST(QuantTensor, QuantizeDequantizeSliceClone) {
  Tensor w = randn({8, 512}, 1);
  for (QuantType t : {QuantType::Q8_0, QuantType::Q4_K, QuantType::Q6_K, QuantType::Q5_1}) {
    Tensor q = Tensor::quantize(w, t);
    EXPECT_TRUE(q.is_quantized());
    EXPECT_EQ(q.shape(), w.shape());
    EXPECT_EQ(q.nbytes(), 8 * quant_row_bytes(t, 512));
    EXPECT_EQ(q.str(), std::string(quant_name(t)) + "[8, 512]");
    // to() dequantizes exactly as dequantize_row
    std::vector<float> row(512);
    dequantize_row(t, q.data<uint8_t>() + 3 * quant_row_bytes(t, 512), row.data(), 512);
    const std::vector<float> all = q.to(DType::F32).to_f32_vector();
    EXPECT_EQ(std::memcmp(row.data(), all.data() + 3 * 512, 512 * 4), 0) << quant_name(t);
    // whole-row slices are views; other views are refused
    Tensor s = q.slice(0, 3, 5);
    EXPECT_EQ(s.shape(), (Shape{2, 512}));
    EXPECT_EQ(s.buffer(), q.buffer());
    const std::vector<float> sv = s.to_f32_vector();
    EXPECT_EQ(std::memcmp(sv.data(), all.data() + 3 * 512, 2 * 512 * 4), 0);
    EXPECT_THROW(q.slice(1, 0, 32), Error);
    EXPECT_THROW(q.view({512, 8}), Error);
    EXPECT_THROW(q.transpose(0, 1), Error);
    Tensor c = q.clone();
    EXPECT_NE(c.buffer(), q.buffer());
    EXPECT_EQ(std::memcmp(c.data_ptr(), q.data_ptr(), q.nbytes()), 0);
    Tensor f = Tensor::empty({8, 512}, DType::BF16);
    copy_into(q, f);
    EXPECT_EQ(f.to_f32_vector(), q.to(DType::BF16).to_f32_vector());
  }
  EXPECT_THROW(Tensor::quantize(randn({2, 100}, 2), QuantType::Q8_0), Error);  // 100 % 32
  EXPECT_THROW(Tensor::quantize(randn({2, 128}, 2), QuantType::Q4_K), Error);  // 128 % 256
}

// Found by fuzz_checkpoint_file: a GGUF block tensor of zero rows read through to_f32_vector
// passed null pointers to memcpy (convert of 0 elements).
TEST(QuantTensor, EmptyTensorsDequantizeToNothing) {
  Tensor q = Tensor::empty_quantized({0, 64}, QuantType::Q8_0);
  EXPECT_EQ(q.nbytes(), 0u);
  EXPECT_TRUE(q.to_f32_vector().empty());
  EXPECT_TRUE(q.to(DType::BF16).to_f32_vector().empty());
  EXPECT_TRUE(Tensor::empty({0, 3}, DType::BF16).to_f32_vector().empty());
}

struct LinearCase { QuantType type; DType compute; int64_t N, K; };
class QuantLinear : public testing::TestWithParam<LinearCase> {};

TEST_P(QuantLinear, EqualsDequantizeThenLinear) {
  const auto c = GetParam();
  Tensor w = randn({c.N, c.K}, 3);
  Tensor b = randn({c.N}, 4);
  Tensor x = randn({2, 7, c.K}, 5);
  Tensor q = Tensor::quantize(w, c.type);
  nn::Linear lq = nn::Linear::make(q, b, c.compute);
  EXPECT_TRUE(lq.weight.is_quantized());  // never widened at make()
  nn::Linear ld = nn::Linear::make(q.to(DType::F32), b, c.compute);
  Tensor yq = lq(x), yd = ld(x);
  EXPECT_EQ(yq.dtype(), c.compute);
  EXPECT_EQ(yq.shape(), (Shape{2, 7, c.N}));
  // Same dequantized values, same GEMM per panel: only the accumulation order may differ.
  EXPECT_LT(rel_l2(yq, yd), c.compute == DType::F32 ? 1e-6 : 4e-3);
  // The fused forms run the two steps.
  Tensor g = lq.gelu(x, ops::GeluMode::Tanh);
  EXPECT_EQ(g.to_f32_vector(), ops::gelu(yq, ops::GeluMode::Tanh).to_f32_vector());
}

// Several 8 MiB panels: K 8192 is 256 rows a panel in f32, 512 in bf16 (N 2100: 9 and 5 panels).
INSTANTIATE_TEST_SUITE_P(Types, QuantLinear,
                         testing::Values(LinearCase{QuantType::Q8_0, DType::F32, 96, 256},
                                         LinearCase{QuantType::Q8_0, DType::F32, 2100, 8192},
                                         LinearCase{QuantType::Q8_0, DType::BF16, 2100, 8192},
                                         LinearCase{QuantType::Q4_K, DType::F32, 300, 1024},
                                         LinearCase{QuantType::Q6_K, DType::BF16, 64, 512},
                                         LinearCase{QuantType::Q5_0, DType::F32, 40, 64}),
                         [](const auto& i) {
                           return std::string(quant_name(i.param.type)) + "_" + dtype_name(i.param.compute) + "_" +
                                  std::to_string(i.param.N);
                         });

TEST(QuantLinear, LoadKeepsAQuantizedWeightAndDequantizesOtherParams) {
  Tensor q = Tensor::quantize(randn({64, 256}, 6), QuantType::Q8_0);
  Tensor qn = Tensor::quantize(randn({1, 256}, 7), QuantType::Q8_0);
  nn::ParamSource src = nn::ParamSource::from_map({{"l.weight", q}, {"l.bias", randn({64}, 8)}, {"norm", qn}}, "test");
  nn::Linear l = nn::Linear::load(src, "l", 256, 64, DType::F32);
  EXPECT_EQ(l.weight.quant(), QuantType::Q8_0);
  Tensor n = src.take("norm", {1, 256});  // not a Linear weight: its values, in f32
  EXPECT_FALSE(n.is_quantized());
  EXPECT_EQ(n.dtype(), DType::F32);
  EXPECT_EQ(n.to_f32_vector(), qn.to_f32_vector());
}

TEST(QuantLinear, RecordedAsLinearQuantizedWithItsType) {
  Tensor q = Tensor::quantize(randn({64, 256}, 9), QuantType::Q4_K);
  set_param_name(q, "blk.w");
  Trace trace;
  {
    RecordingScope rec(trace);
    Tensor x = Tensor::empty({3, 256}, DType::BF16, Device::Meta);
    Tensor y = ops::linear(x, q, std::nullopt);
    EXPECT_EQ(y.shape(), (Shape{3, 64}));
  }
  const OpRecord* op = nullptr;
  for (const auto& r : trace.ops)
    if (r.kind == OpKind::Op) op = &r;
  ASSERT_NE(op, nullptr);
  EXPECT_EQ(op->name, "linear_quantized");
  ASSERT_EQ(op->inputs.size(), 2u);
  EXPECT_EQ(op->inputs[1].quant, QuantType::Q4_K);
  EXPECT_EQ(op->inputs[1].str(), "Q4_K[64, 256]@cpu");
  bool has_quant = false;
  for (const auto& [k, v] : op->attrs)
    if (k == "quant") has_quant = std::get<std::string>(v) == "Q4_K";
  EXPECT_TRUE(has_quant);
  EXPECT_NE(trace.str().find("linear_quantized"), std::string::npos);
}

}  // namespace
}  // namespace vidax
