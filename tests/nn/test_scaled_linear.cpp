// Scaled fp8 / int8 weights (Tensor::scaled, docs/quantization.md "fp8 and int8"): the values
// ComfyUI's scaled fp8 Linear computes (weight.to(D) * scale_weight.to(D)), kept in storage form
// and widened a panel of rows at a time by ops::linear; the file convention (scale_weight beside
// the weight, folded by the reader: tests/io/test_scaled_file.cpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>

#include "backend/ops.h"
#include "core/error.h"
#include "core/rng.h"
#include "nn/linear.h"

namespace vidax {
namespace {

Tensor randn(const Shape& s, uint64_t seed) {
  TorchGenerator g(seed);
  return g.randn(s, DType::F32);
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

TEST(ScaledWeight, WidensAsComfyUiComputesIt) {
  // Hand-checked values: e4m3fn 0x38 = 1.0, 0x40 = 2.0, 0xb8 = -1.0; scale 0.3.
  Tensor v = Tensor::empty({1, 3}, DType::F8_E4M3);
  v.data<uint8_t>()[0] = 0x38;
  v.data<uint8_t>()[1] = 0x40;
  v.data<uint8_t>()[2] = 0xb8;
  const Tensor w = Tensor::scaled(v, Tensor::from_f32({0.3f}, {}));
  EXPECT_TRUE(w.is_scaled() && w.is_weight_only_quantized());
  const auto f = w.to(DType::F32).to_f32_vector();
  EXPECT_EQ(f[0], 0.3f);
  EXPECT_EQ(f[1], 2.0f * 0.3f);
  EXPECT_EQ(f[2], -0.3f);
  // bf16: the scale rounds to bf16 first (0.30078125), then the product rounds to bf16.
  const auto b = w.to(DType::BF16).to_f32_vector();
  EXPECT_EQ(b[0], bf16_to_f32(f32_to_bf16(0.3f)));
  EXPECT_EQ(b[1], bf16_to_f32(f32_to_bf16(2.0f * bf16_to_f32(f32_to_bf16(0.3f)))));
  // A per-row int8 scale: row r times scale[r]; slicing rows takes their scales.
  Tensor q = Tensor::empty({2, 2}, DType::I8);
  q.data<int8_t>()[0] = 127;
  q.data<int8_t>()[1] = -3;
  q.data<int8_t>()[2] = 5;
  q.data<int8_t>()[3] = -127;
  const Tensor wi = Tensor::scaled(q, Tensor::from_f32({0.5f, 2.0f}, {2}));
  EXPECT_EQ(wi.to_f32_vector(), (std::vector<float>{63.5f, -1.5f, 10.0f, -254.0f}));
  EXPECT_EQ(wi.slice(0, 1, 2).to_f32_vector(), (std::vector<float>{10.0f, -254.0f}));
  EXPECT_THROW(wi.transpose(0, 1), Error);
  EXPECT_THROW(Tensor::scaled(q, Tensor::from_f32({1, 2, 3}, {3})), Error);
}

TEST(ScaledWeight, QuantizeRoundTripErrors) {
  const Tensor w = randn({96, 320}, 3);
  const Tensor f8 = Tensor::quantize_scaled(w, DType::F8_E4M3);
  const Tensor f5 = Tensor::quantize_scaled(w, DType::F8_E5M2);
  const Tensor i8 = Tensor::quantize_scaled(w, DType::I8);
  EXPECT_EQ(f8.weight_scale().numel(), 1);
  EXPECT_EQ(i8.weight_scale().shape(), (Shape{96}));
  // e4m3 has 3 mantissa bits (~2^-5 relative), e5m2 2, int8 per row ~1/254 of a row's amax.
  EXPECT_LT(rel_l2(f8.to(DType::F32), w), 0.03);
  EXPECT_GT(rel_l2(f8.to(DType::F32), w), 0.005);
  EXPECT_LT(rel_l2(f5.to(DType::F32), w), 0.06);
  EXPECT_LT(rel_l2(i8.to(DType::F32), w), 0.012);
}

// ops::linear on the scaled weight equals linear on its widened values (each panel widened
// the same way; only the GEMM's summation order per panel differs), over several panels.
TEST(ScaledWeight, LinearEqualsWidenThenLinear) {
  for (DType type : {DType::F8_E4M3, DType::F8_E5M2, DType::I8}) {
    for (DType dt : {DType::F32, DType::BF16}) {
      const int64_t N = dt == DType::F32 ? 2100 : 4200, K = 1024;  // > one 8 MiB panel
      const Tensor w = Tensor::quantize_scaled(randn({N, K}, 5), type);
      const Tensor x = randn({3, K}, 6).to(dt);
      const Tensor b = randn({N}, 7).to(dt);
      const Tensor y = ops::linear(x, w, b);
      const Tensor ref = ops::linear(x, w.to(dt), b);
      EXPECT_LT(rel_l2(y, ref), dt == DType::F32 ? 1e-6 : 4e-3) << dtype_name(type) << " " << dtype_name(dt);
      // nn::Linear keeps it in storage form (no widened copy at load).
      const nn::Linear l = nn::Linear::make(w, b, dt);
      EXPECT_TRUE(l.weight.is_scaled());
      EXPECT_EQ(l.weight.dtype(), type);
      EXPECT_LT(rel_l2(l(x), ref), dt == DType::F32 ? 1e-6 : 4e-3);
    }
  }
}

}  // namespace
}  // namespace vidax
