#include <gtest/gtest.h>

#include <cmath>

#include "backend/ops.h"
#include "helpers.h"

using namespace vidax;
using namespace vidax::test;

TEST(Movement, CopyAndCast) {
  Tensor x = randn({5, 3}, 1).transpose(0, 1);
  Tensor c = ops::copy(x);
  EXPECT_TRUE(c.is_contiguous());
  EXPECT_EQ(c.to_f32_vector(), x.contiguous().to_f32_vector());
  Tensor b = ops::cast(x, DType::BF16);
  EXPECT_TRUE(same_bits(b, x.contiguous().to(DType::BF16)));  // RNE as core's converter (checked vs torch)
  Tensor h = ops::cast(b, DType::F16);
  EXPECT_EQ(h.dtype(), DType::F16);
  EXPECT_EQ(h.to_f32_vector(), b.to_f32_vector());  // bf16 values with small exponents are exact in f16
}

TEST(Movement, ConcatAnyDim) {
  Tensor a = randn({2, 3, 4}, 2), b = randn({2, 1, 4}, 3), c = randn({2, 5, 4}, 4);
  Tensor y = ops::concat({a, b, c}, 1);
  ASSERT_EQ(y.shape(), (Shape{2, 9, 4}));
  auto av = a.to_f32_vector(), bv = b.to_f32_vector(), cv = c.to_f32_vector(), yv = y.to_f32_vector();
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 9; ++j)
      for (int k = 0; k < 4; ++k) {
        float want = j < 3 ? av[(i * 3 + j) * 4 + k] : j < 4 ? bv[i * 4 + k] : cv[(i * 5 + j - 4) * 4 + k];
        ASSERT_EQ(yv[(i * 9 + j) * 4 + k], want);
      }
  Tensor z = ops::concat({a, a}, -1);
  EXPECT_EQ(z.shape(), (Shape{2, 3, 8}));
  EXPECT_THROW(ops::concat({a, randn({2, 3, 4}, 1, DType::BF16)}, 0), Error);
  EXPECT_THROW(ops::concat({a, b}, 0), Error);
}

TEST(Movement, PadZeroAndReplicate) {
  Tensor x = Tensor::from_f32({1, 2, 3, 4, 5, 6}, {2, 3});
  EXPECT_EQ(ops::pad(x, {1, 2}).to_f32_vector(), (std::vector<float>{0, 1, 2, 3, 0, 0, 0, 4, 5, 6, 0, 0}));
  EXPECT_EQ(ops::pad(x, {0, 1, 1, 0}, ops::PadMode::Replicate).to_f32_vector(),
            (std::vector<float>{1, 2, 3, 3, 1, 2, 3, 3, 4, 5, 6, 6}));
  EXPECT_EQ(ops::pad(x, {-1, 0}).to_f32_vector(), (std::vector<float>{2, 3, 5, 6}));  // negative crops, as torch
  Tensor big = randn({2, 3, 4, 5, 6}, 5, DType::BF16);
  Tensor p = ops::pad(big, {1, 1, 2, 0, 3, 1}, ops::PadMode::Replicate);
  ASSERT_EQ(p.shape(), (Shape{2, 3, 8, 7, 8}));
  auto bv = big.to_f32_vector(), pv = p.to_f32_vector();
  for (int64_t n = 0; n < 6; ++n)
    for (int64_t t = 0; t < 8; ++t)
      for (int64_t h = 0; h < 7; ++h)
        for (int64_t w = 0; w < 8; ++w) {
          int64_t it = std::clamp<int64_t>(t - 3, 0, 3), ih = std::clamp<int64_t>(h - 2, 0, 4),
                  iw = std::clamp<int64_t>(w - 1, 0, 5);
          ASSERT_EQ(pv[((n * 8 + t) * 7 + h) * 8 + w], bv[((n * 4 + it) * 5 + ih) * 6 + iw]);
        }
}

TEST(Movement, Embedding) {
  Tensor table = randn({10, 6}, 6, DType::BF16);
  Tensor ids = Tensor::from_i64({3, 0, 9, 3}, {2, 2});
  Tensor e = ops::embedding(ids, table);
  ASSERT_EQ(e.shape(), (Shape{2, 2, 6}));
  EXPECT_EQ(e.dtype(), DType::BF16);
  auto tv = table.to_f32_vector(), ev = e.to_f32_vector();
  const int idx[] = {3, 0, 9, 3};
  for (int i = 0; i < 4; ++i)
    for (int d = 0; d < 6; ++d) ASSERT_EQ(ev[i * 6 + d], tv[idx[i] * 6 + d]);
  EXPECT_THROW(ops::embedding(Tensor::from_i64({10}, {1}), table), Error);
}

// Both gather paths: a contiguous table (row memcpy) and a strided one, with
// enough rows for the parallel loop (T5's position bias gathers L*L rows).
TEST(Movement, EmbeddingManyRowsContiguousAndStrided) {
  Tensor base = randn({16, 40}, 7, DType::F32);
  Tensor strided = base.transpose(0, 1);  // [40, 16], not contiguous
  Tensor contiguous = strided.contiguous();
  std::vector<int64_t> idv;
  for (int i = 0; i < 4000; ++i) idv.push_back((i * 7919) % 40);
  Tensor ids = Tensor::from_i64(idv, {40, 100});
  const auto cv = contiguous.to_f32_vector();
  for (const Tensor& table : {contiguous, strided}) {
    Tensor e = ops::embedding(ids, table);
    ASSERT_EQ(e.shape(), (Shape{40, 100, 16}));
    const auto ev = e.to_f32_vector();
    for (size_t i = 0; i < idv.size(); ++i)
      for (size_t d = 0; d < 16; ++d) ASSERT_EQ(ev[i * 16 + d], cv[static_cast<size_t>(idv[i]) * 16 + d]);
  }
}

TEST(Movement, UpsampleNearest) {
  Tensor x = Tensor::from_f32({1, 2, 3, 4}, {1, 1, 2, 2});
  Tensor y = ops::upsample_nearest(x, {2, 3});
  EXPECT_EQ(y.shape(), (Shape{1, 1, 4, 6}));
  EXPECT_EQ(y.to_f32_vector(), (std::vector<float>{1, 1, 1, 2, 2, 2, 1, 1, 1, 2, 2, 2,
                                                   3, 3, 3, 4, 4, 4, 3, 3, 3, 4, 4, 4}));
}

TEST(Movement, PixelShuffle3d) {
  const int64_t N = 2, C = 3, T = 2, H = 3, W = 4;
  const std::array<int64_t, 3> r{2, 2, 3};
  Tensor x = randn({N, C * 12, T, H, W}, 7);
  Tensor y = ops::pixel_shuffle3d(x, r);
  ASSERT_EQ(y.shape(), (Shape{N, C, T * 2, H * 2, W * 3}));
  auto xv = x.to_f32_vector(), yv = y.to_f32_vector();
  for (int64_t n = 0; n < N; ++n)
    for (int64_t c = 0; c < C; ++c)
      for (int64_t i = 0; i < 2; ++i)
        for (int64_t j = 0; j < 2; ++j)
          for (int64_t k = 0; k < 3; ++k)
            for (int64_t t = 0; t < T; ++t)
              for (int64_t h = 0; h < H; ++h)
                for (int64_t w = 0; w < W; ++w) {
                  const int64_t ch = ((c * 2 + i) * 2 + j) * 3 + k;
                  ASSERT_EQ(yv[lin(y.shape(), {n, c, t * 2 + i, h * 2 + j, w * 3 + k})],
                            xv[lin(x.shape(), {n, ch, t, h, w})]);
                }
  EXPECT_TRUE(same_bits(ops::pixel_unshuffle3d(y, r), x));
  EXPECT_THROW(ops::pixel_shuffle3d(randn({1, 5, 1, 1, 1}, 1), r), Error);
}

TEST(Movement, RopeBothModes) {
  const int64_t B = 2, L = 5, H = 3, D = 10;
  for (DType tdt : {DType::F32, DType::F64}) {
    for (auto mode : {ops::RopeMode::InterleavedPairs, ops::RopeMode::SplitHalf}) {
      Tensor x = randn({B, L, H, D}, 8);
      std::vector<double> cs, sn;
      for (int64_t l = 0; l < L; ++l)
        for (int64_t i = 0; i < D / 2; ++i) {
          const double th = l * std::pow(10000.0, -2.0 * i / D);
          cs.push_back(std::cos(th));
          sn.push_back(std::sin(th));
        }
      Tensor c = Tensor::from_f64(cs, {L, D / 2}, tdt), s = Tensor::from_f64(sn, {L, D / 2}, tdt);
      Tensor y = ops::rope(x, c, s, mode);
      auto xv = x.to_f64_vector(), cv = c.to_f64_vector(), sv = s.to_f64_vector();
      std::vector<double> ref(xv.size());
      for (int64_t b = 0; b < B; ++b)
        for (int64_t l = 0; l < L; ++l)
          for (int64_t h = 0; h < H; ++h)
            for (int64_t i = 0; i < D / 2; ++i) {
              const int64_t base = ((b * L + l) * H + h) * D;
              const int64_t i0 = mode == ops::RopeMode::InterleavedPairs ? 2 * i : i;
              const int64_t i1 = mode == ops::RopeMode::InterleavedPairs ? 2 * i + 1 : i + D / 2;
              const double co = cv[l * D / 2 + i], si = sv[l * D / 2 + i];
              ref[base + i0] = xv[base + i0] * co - xv[base + i1] * si;
              ref[base + i1] = xv[base + i0] * si + xv[base + i1] * co;
            }
      // f64 tables: the rotation is done in f64 and rounded once to f32.
      const auto yv = y.to_f64_vector();
      for (size_t i = 0; i < ref.size(); ++i) {
        if (tdt == DType::F64) ASSERT_EQ(static_cast<float>(yv[i]), static_cast<float>(ref[i])) << i;
        else ASSERT_NEAR(yv[i], ref[i], 1e-6) << i;
      }
    }
  }
  EXPECT_THROW(ops::rope(randn({1, 2, 1, 4}, 1), randn({3, 2}, 1), randn({3, 2}, 1), ops::RopeMode::SplitHalf), Error);
}
