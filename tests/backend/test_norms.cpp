#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>

#include "backend/ops.h"
#include "helpers.h"

using namespace vidax;
using namespace vidax::test;

namespace {

// Reference LayerNorm/RMSNorm over the last dim, in double.
std::vector<double> ref_norm(const Tensor& x, bool rms, const std::vector<double>& w, const std::vector<double>& b,
                             double eps) {
  const auto v = x.to_f64_vector();
  const int64_t D = x.size(-1), R = x.numel() / D;
  std::vector<double> o(v.size());
  for (int64_t r = 0; r < R; ++r) {
    const double* xr = v.data() + r * D;
    double mean = 0, var = 0;
    for (int64_t i = 0; i < D; ++i) mean += xr[i];
    mean /= D;
    if (rms) mean = 0;
    for (int64_t i = 0; i < D; ++i) var += (xr[i] - mean) * (xr[i] - mean);
    var /= D;
    for (int64_t i = 0; i < D; ++i) {
      double y = (xr[i] - mean) / std::sqrt(var + eps);
      if (!w.empty()) y *= w[i];
      if (!b.empty()) y += b[i];
      o[r * D + i] = y;
    }
  }
  return o;
}

}  // namespace

TEST(Norms, LayerNormAndRmsNorm) {
  for (DType dt : {DType::F32, DType::BF16}) {
    for (int64_t D : {1, 7, 64, 131}) {
      Tensor x = randn({3, 5, D}, 20 + D, dt, 2.0);
      x = ops::add_scalar(x, 0.7);
      Tensor w = randn({D}, 30), b = randn({D}, 31);
      const double tol = dt == DType::F32 ? 2e-6 : eps_of(dt);
      expect_close(ops::layer_norm(x, std::nullopt, std::nullopt, 1e-6), ref_norm(x, false, {}, {}, 1e-6), 1e-5, tol,
                   "layer_norm plain");
      expect_close(ops::layer_norm(x, w, b, 1e-5), ref_norm(x, false, w.to_f64_vector(), b.to_f64_vector(), 1e-5),
                   1e-5, tol, "layer_norm affine");
      expect_close(ops::rms_norm(x, w, 1e-6), ref_norm(x, true, w.to_f64_vector(), {}, 1e-6), 1e-5, tol, "rms_norm");
      expect_close(ops::rms_norm(x, std::nullopt, 1e-6), ref_norm(x, true, {}, {}, 1e-6), 1e-5, tol, "rms_norm plain");
    }
  }
  EXPECT_THROW(ops::layer_norm(randn({2, 8}, 1), randn({7}, 1), std::nullopt, 1e-6), Error);
}

TEST(Norms, NormOfStridedRows) {
  Tensor x = randn({9, 6}, 40).transpose(0, 1);  // [6, 9] rows with stride 6
  expect_close(ops::rms_norm(x, std::nullopt, 1e-6), ref_norm(x.contiguous(), true, {}, {}, 1e-6), 1e-6, 2e-6,
               "strided rms_norm");
}

TEST(Norms, LayerNormModulate) {
  Tensor x = randn({2, 13, 37}, 41, DType::F32, 3.0), shift = randn({2, 1, 37}, 42), sc = randn({2, 1, 37}, 43);
  auto n = ref_norm(x, false, {}, {}, 1e-6);
  auto sh = shift.to_f64_vector(), s = sc.to_f64_vector();
  std::vector<double> ref(n.size());
  for (int64_t b = 0; b < 2; ++b)
    for (int64_t l = 0; l < 13; ++l)
      for (int64_t d = 0; d < 37; ++d) {
        const size_t i = static_cast<size_t>((b * 13 + l) * 37 + d), j = static_cast<size_t>(b * 37 + d);
        ref[i] = n[i] * (1 + s[j]) + sh[j];
      }
  expect_close(ops::layer_norm_modulate(x, shift, sc, 1e-6), ref, 1e-5, 1e-5, "layer_norm_modulate");
}

TEST(Norms, GroupNorm) {
  const int64_t N = 2, C = 12, G = 3, S = 5 * 7;
  Tensor x = randn({N, C, 5, 7}, 50, DType::F32, 2.0);
  Tensor w = randn({C}, 51), b = randn({C}, 52);
  auto v = x.to_f64_vector(), wv = w.to_f64_vector(), bv = b.to_f64_vector();
  std::vector<double> ref(v.size());
  const int64_t Cg = C / G;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t g = 0; g < G; ++g) {
      const double* p = v.data() + (n * C + g * Cg) * S;
      double m = 0, var = 0;
      for (int64_t i = 0; i < Cg * S; ++i) m += p[i];
      m /= Cg * S;
      for (int64_t i = 0; i < Cg * S; ++i) var += (p[i] - m) * (p[i] - m);
      var /= Cg * S;
      for (int64_t c = 0; c < Cg; ++c)
        for (int64_t s = 0; s < S; ++s) {
          const int64_t ch = g * Cg + c;
          ref[static_cast<size_t>((n * C + ch) * S + s)] = (p[c * S + s] - m) / std::sqrt(var + 1e-5) * wv[ch] + bv[ch];
        }
    }
  expect_close(ops::group_norm(x, G, w, b, 1e-5), ref, 1e-5, 1e-5, "group_norm");
  EXPECT_THROW(ops::group_norm(x, 5, w, b, 1e-5), Error);
}

TEST(Norms, DimReductions) {
  Tensor x = randn({3, 17, 5}, 60, DType::F32, 2.0);
  auto v = x.to_f64_vector();
  // over dim 1 (not the last): l2_normalize, softmax, sum, mean.
  std::vector<double> l2(v.size()), sm(v.size()), su(15), me(15);
  for (int64_t a = 0; a < 3; ++a)
    for (int64_t c = 0; c < 5; ++c) {
      double ss = 0, mx = -1e300, s = 0, e = 0;
      for (int64_t b = 0; b < 17; ++b) {
        const double t = v[lin({3, 17, 5}, {a, b, c})];
        ss += t * t;
        mx = std::max(mx, t);
        s += t;
      }
      for (int64_t b = 0; b < 17; ++b) e += std::exp(v[lin({3, 17, 5}, {a, b, c})] - mx);
      for (int64_t b = 0; b < 17; ++b) {
        const size_t i = static_cast<size_t>(lin({3, 17, 5}, {a, b, c}));
        l2[i] = v[i] / std::max(std::sqrt(ss), 1e-12);
        sm[i] = std::exp(v[i] - mx) / e;
      }
      su[a * 5 + c] = s;
      me[a * 5 + c] = s / 17;
    }
  expect_close(ops::l2_normalize(x, 1), l2, 1e-7, 1e-6, "l2_normalize");
  expect_close(ops::softmax(x, 1), sm, 1e-7, 1e-6, "softmax");
  expect_close(ops::sum(x, 1), su, 1e-5, 1e-6, "sum");
  expect_close(ops::mean(x, -2), me, 1e-6, 1e-6, "mean");
  EXPECT_EQ(ops::sum(x, 1).shape(), (Shape{3, 5}));
  EXPECT_EQ(ops::sum(x, 1, true).shape(), (Shape{3, 1, 5}));
  // softmax over the last dim
  Tensor y = randn({4, 9}, 61);
  auto yv = y.to_f64_vector();
  std::vector<double> ref(yv.size());
  for (int r = 0; r < 4; ++r) {
    double mx = -1e300, e = 0;
    for (int i = 0; i < 9; ++i) mx = std::max(mx, yv[r * 9 + i]);
    for (int i = 0; i < 9; ++i) e += std::exp(yv[r * 9 + i] - mx);
    for (int i = 0; i < 9; ++i) ref[r * 9 + i] = std::exp(yv[r * 9 + i] - mx) / e;
  }
  expect_close(ops::softmax(y, -1), ref, 1e-7, 1e-6, "softmax last");
}
