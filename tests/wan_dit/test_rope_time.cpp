#include <gtest/gtest.h>

#include <cmath>

#include "models/wan/embeddings.h"
#include "models/wan/rope.h"
#include "wan_dit/helpers.h"

using namespace vidax;

// Token (f, h, w) rotates pair k by the position of the axis that owns k:
// the first n_t pairs use f, the next n_h use h, the last n_w use w, each axis
// restarting its frequencies at 1 (j = 0).
TEST(WanRope, AxisSplitAndTokenOrder) {
  wan::DiTConfig c = wan_dit_test::tiny_config();  // head dim 24: 4 + 4 + 4 pairs
  const std::array<int64_t, 3> grid{2, 3, 4};
  wan::RopeTables r = wan::rope_tables(c, grid);
  ASSERT_EQ(r.cos.shape(), (Shape{24, 12}));
  ASSERT_EQ(r.cos.dtype(), DType::F64);
  const std::vector<double> cs = r.cos.to_f64_vector(), sn = r.sin.to_f64_vector();
  const int64_t n = (1 * 3 + 2) * 4 + 3;  // token (1, 2, 3), row-major (f, h, w)
  EXPECT_DOUBLE_EQ(cs[n * 12 + 0], std::cos(1.0));   // t pair 0: f * 1
  EXPECT_DOUBLE_EQ(cs[n * 12 + 4], std::cos(2.0));   // h pair 0: h * 1
  EXPECT_DOUBLE_EQ(cs[n * 12 + 8], std::cos(3.0));   // w pair 0: w * 1
  EXPECT_DOUBLE_EQ(sn[n * 12 + 9], std::sin(3.0 / std::pow(10000.0, 2.0 / 8)));  // w pair 1
  EXPECT_DOUBLE_EQ(cs[0 * 12 + 5], 1.0);             // token 0: no rotation
  // 1.3B head dim 128: 22 + 21 + 21 pairs; the h axis starts at pair 22 with freq 1.
  wan::DiTConfig big = wan::DiTConfig::preset("wan2.1-t2v-1.3b");
  wan::RopeTables rb = wan::rope_tables(big, {1, 2, 1});
  const std::vector<double> cb = rb.cos.to_f64_vector();
  EXPECT_DOUBLE_EQ(cb[1 * 64 + 21], 1.0);  // last t pair, f = 0
  EXPECT_DOUBLE_EQ(cb[1 * 64 + 22], std::cos(1.0));
  EXPECT_DOUBLE_EQ(cb[1 * 64 + 23], std::cos(1.0 / std::pow(10000.0, 2.0 / 42)));
  EXPECT_DOUBLE_EQ(cb[1 * 64 + 43], 1.0);  // w = 0
}

TEST(WanRope, GridBeyondTheTableIsAnError) {
  wan::DiTConfig c = wan_dit_test::tiny_config();
  EXPECT_THROW(wan::rope_tables(c, {1, 1025, 1}), Error);
  wan::RopeTables m = wan::rope_tables(c, {21, 30, 52}, Device::Meta);
  EXPECT_EQ(m.cos.device(), Device::Meta);
  EXPECT_EQ(m.sin.shape(), (Shape{21 * 30 * 52, 12}));
}

// sinusoidal_embedding_1d: [cos(t w_k), sin(t w_k)], w_k = 10000^(-k/half), f64 then f32.
TEST(WanTimestep, SinusoidIsCosFirstInDouble) {
  Tensor s = wan::timestep_sinusoid({999.0, 0.0}, 8);
  ASSERT_EQ(s.shape(), (Shape{2, 8}));
  ASSERT_EQ(s.dtype(), DType::F32);
  const std::vector<float> v = s.to_f32_vector();
  for (int k = 0; k < 4; ++k) {
    const double arg = 999.0 * std::pow(10000.0, -k / 4.0);
    EXPECT_EQ(v[k], static_cast<float>(std::cos(arg))) << k;
    EXPECT_EQ(v[4 + k], static_cast<float>(std::sin(arg))) << k;
    EXPECT_EQ(v[8 + k], 1.0f);
    EXPECT_EQ(v[12 + k], 0.0f);
  }
  EXPECT_THROW(wan::timestep_sinusoid({1.0}, 7), Error);
  EXPECT_THROW(wan::timestep_sinusoid({}, 8), Error);
}
