#include <gtest/gtest.h>

#include "backend/cpu/kernels.h"
#include "backend/ops.h"
#include "helpers.h"

using namespace vidax;
using namespace vidax::test;

namespace {

// Direct 3-D convolution in double (conv2d = depth 1), zero padding, groups.
std::vector<double> ref_conv3d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
                               std::array<int64_t, 3> st, std::array<int64_t, 3> pd, const Shape& os) {
  const auto xv = x.to_f64_vector(), wv = w.to_f64_vector();
  const int64_t N = x.size(0), C = x.size(1), T = x.size(2), H = x.size(3), W = x.size(4);
  const int64_t O = w.size(0), Cg = w.size(1), kT = w.size(2), kH = w.size(3), kW = w.size(4), G = C / Cg, Og = O / G;
  const int64_t To = os[2], Ho = os[3], Wo = os[4];
  std::vector<double> out(static_cast<size_t>(shape_numel(os)));
  for (int64_t n = 0; n < N; ++n)
    for (int64_t o = 0; o < O; ++o)
      for (int64_t t = 0; t < To; ++t)
        for (int64_t h = 0; h < Ho; ++h)
          for (int64_t ww = 0; ww < Wo; ++ww) {
            double s = bias ? bias->to_f64_vector()[o] : 0.0;
            const int64_t g = o / Og;
            for (int64_t c = 0; c < Cg; ++c)
              for (int64_t a = 0; a < kT; ++a)
                for (int64_t b = 0; b < kH; ++b)
                  for (int64_t e = 0; e < kW; ++e) {
                    const int64_t it = t * st[0] - pd[0] + a, ih = h * st[1] - pd[1] + b, iw = ww * st[2] - pd[2] + e;
                    if (it < 0 || it >= T || ih < 0 || ih >= H || iw < 0 || iw >= W) continue;
                    s += xv[(((n * C + g * Cg + c) * T + it) * H + ih) * W + iw] *
                         wv[(((o * Cg + c) * kT + a) * kH + b) * kW + e];
                  }
            out[static_cast<size_t>((((n * O + o) * To + t) * Ho + h) * Wo + ww)] = s;
          }
  return out;
}

}  // namespace

TEST(Conv, Conv3dStridesPaddingGroups) {
  struct Case { int64_t C, O, groups; std::array<int64_t, 3> k, st, pd; };
  for (const Case& c : {Case{3, 5, 1, {3, 3, 3}, {1, 1, 1}, {1, 1, 1}}, Case{4, 6, 2, {1, 3, 3}, {1, 2, 2}, {0, 1, 1}},
                        Case{2, 3, 1, {3, 1, 1}, {2, 1, 1}, {0, 0, 0}}, Case{5, 7, 1, {1, 1, 1}, {1, 1, 1}, {0, 0, 0}}}) {
    Tensor x = randn({2, c.C, 5, 7, 11}, 1);
    Tensor w = randn({c.O, c.C / c.groups, c.k[0], c.k[1], c.k[2]}, 2), b = randn({c.O}, 3);
    Tensor y = ops::conv3d(x, w, b, c.st, c.pd);
    expect_close(y, ref_conv3d(x, w, b, c.st, c.pd, y.shape()), 1e-5, 1e-5, "conv3d C=" + std::to_string(c.C));
  }
  EXPECT_THROW(ops::conv3d(randn({1, 3, 2, 2, 2}, 1), randn({4, 2, 1, 1, 1}, 1), std::nullopt, {1, 1, 1}, {0, 0, 0}),
               Error);
}

TEST(Conv, CausalConv3dViaPad) {
  // Wan's CausalConv3d: pad (W, W, H, H, 2*T, 0) then a conv without padding.
  Tensor x = randn({1, 3, 4, 6, 5}, 4), w = randn({4, 3, 3, 3, 3}, 5);
  Tensor xp = ops::pad(x, {1, 1, 1, 1, 2, 0});
  EXPECT_EQ(xp.shape(), (Shape{1, 3, 6, 8, 7}));
  Tensor y = ops::conv3d(xp, w, std::nullopt, {1, 1, 1}, {0, 0, 0});
  EXPECT_EQ(y.shape(), (Shape{1, 4, 4, 6, 5}));
  expect_close(y, ref_conv3d(xp, w, std::nullopt, {1, 1, 1}, {0, 0, 0}, y.shape()), 1e-5, 1e-5, "causal conv3d");
}

TEST(Conv, Conv2dAndBf16) {
  Tensor x = randn({2, 3, 9, 13}, 6, DType::BF16), w = randn({8, 3, 3, 3}, 7, DType::BF16), b = randn({8}, 8);
  Tensor y = ops::conv2d(x, w, b, {2, 1}, {1, 1});
  EXPECT_EQ(y.dtype(), DType::BF16);
  EXPECT_EQ(y.shape(), (Shape{2, 8, 5, 13}));
  auto ref = ref_conv3d(x.unsqueeze(2), w.unsqueeze(2), b, {1, 2, 1}, {0, 1, 1}, {2, 8, 1, 5, 13});
  expect_close(y, ref, 1e-2, eps_of(DType::BF16), "conv2d bf16");
}

TEST(Conv, SmallColumnTilesStartMidRow) {
  // Column tiles of 7 output positions: tiles start in the middle of output rows and frames.
  cpu::set_conv_column_budget(7 * 4 * 2 * 27);
  Tensor x = randn({1, 2, 3, 5, 6}, 9), w = randn({3, 2, 3, 3, 3}, 10), b = randn({3}, 11);
  Tensor y = ops::conv3d(x, w, b, {1, 2, 1}, {1, 1, 1});
  cpu::set_conv_column_budget(int64_t(8) << 20);
  expect_close(y, ref_conv3d(x, w, b, {1, 2, 1}, {1, 1, 1}, y.shape()), 1e-5, 1e-5, "tiled conv3d");
}
