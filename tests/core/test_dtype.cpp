#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "core/dtype.h"

using namespace vidax;

TEST(DType, NamesRoundTrip) {
  for (DType t : {DType::F64, DType::F32, DType::F16, DType::BF16, DType::F8_E4M3, DType::F8_E5M2, DType::I64,
                  DType::I32, DType::I16, DType::I8, DType::U64, DType::U32, DType::U16, DType::U8, DType::Bool}) {
    DType back;
    ASSERT_TRUE(dtype_from_name(dtype_name(t), &back));
    EXPECT_EQ(back, t);
  }
  EXPECT_EQ(dtype_parse("bf16"), DType::BF16);
  EXPECT_THROW(dtype_parse("f17"), std::runtime_error);
}

TEST(DType, Bf16RoundsToNearestEven) {
  // 1 + 2^-8 lies exactly between two bf16 values; ties go to the even mantissa (1.0).
  EXPECT_EQ(f32_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3f80);
  // 1 + 3*2^-8 ties between 1+2^-7 (odd) and 1+2^-6 (even) -> even.
  EXPECT_EQ(f32_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3f82);
  EXPECT_EQ(f32_to_bf16(std::numeric_limits<float>::quiet_NaN()), 0xffff);  // as torch 2.15's tensor .to()
  EXPECT_EQ(bf16_to_f32(0x3f80), 1.0f);
}

TEST(DType, F16EveryValueRoundTrips) {
  for (uint32_t h = 0; h < 65536; ++h) {
    float f = f16_to_f32(static_cast<uint16_t>(h));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_f16(f), h) << h;
  }
  EXPECT_EQ(f32_to_f16(65520.0f), 0x7c00);  // rounds up to inf
  EXPECT_EQ(f32_to_f16(65519.0f), 0x7bff);
}

TEST(DType, Fp8E4M3fnMatchesTorch) {
  for (uint32_t v = 0; v < 256; ++v) {
    float f = f8e4m3fn_to_f32(static_cast<uint8_t>(v));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_f8e4m3fn(f), v) << v;
  }
  EXPECT_EQ(f8e4m3fn_to_f32(0x7e), 448.0f);
  // Values checked against torch 2.15 (tensor.to(torch.float8_e4m3fn)): saturating.
  EXPECT_EQ(f32_to_f8e4m3fn(470.0f), 0x7e);
  EXPECT_EQ(f32_to_f8e4m3fn(480.0f), 0x7e);
  EXPECT_EQ(f32_to_f8e4m3fn(-1e9f), 0xfe);
  EXPECT_EQ(f32_to_f8e4m3fn(-std::numeric_limits<float>::infinity()), 0xfe);
  EXPECT_EQ(f32_to_f8e4m3fn(std::numeric_limits<float>::quiet_NaN()), 0x7f);
}

TEST(DType, Fp8E5M2MatchesTorch) {
  for (uint32_t v = 0; v < 256; ++v) {
    float f = f8e5m2_to_f32(static_cast<uint8_t>(v));
    if (std::isnan(f)) continue;
    EXPECT_EQ(f32_to_f8e5m2(f), v) << v;
  }
  EXPECT_EQ(f32_to_f8e5m2(1e6f), 0x7c);  // overflow -> inf
}
