#include <gtest/gtest.h>

#include <cstring>

#include "backend/ops.h"
#include "helpers.h"

using namespace vidax;
using namespace vidax::test;

namespace {

std::vector<double> ref_linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias) {
  const auto xv = x.to_f64_vector(), wv = w.to_f64_vector();
  const std::vector<double> bv = bias ? bias->to_f64_vector() : std::vector<double>{};
  const int64_t K = w.size(1), N = w.size(0), M = x.numel() / K;
  std::vector<double> y(static_cast<size_t>(M * N));
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = bv.empty() ? 0.0 : bv[n];
      for (int64_t k = 0; k < K; ++k) s += xv[m * K + k] * wv[n * K + k];
      y[m * N + n] = s;
    }
  return y;
}

}  // namespace

TEST(Gemm, LinearShapesAndDtypes) {
  struct Case { int64_t M, K, N; };
  for (Case c : {Case{1, 1, 1}, Case{1, 17, 3}, Case{7, 13, 31}, Case{33, 64, 16}, Case{61, 129, 97}}) {
    for (DType wdt : {DType::F32, DType::BF16, DType::F16}) {
      for (DType xdt : {DType::F32, DType::BF16}) {
        Tensor x = randn({c.M, c.K}, 1, xdt), w = randn({c.N, c.K}, 2, wdt), b = randn({c.N}, 3);
        Tensor y = ops::linear(x, w, b);
        EXPECT_EQ(y.dtype(), xdt);
        EXPECT_EQ(y.shape(), (Shape{c.M, c.N}));
        const double tol = xdt == DType::F32 ? 1e-5 : eps_of(xdt);
        expect_close(y, ref_linear(x, w, b), 1e-4, tol,
                     "linear M" + std::to_string(c.M) + " K" + std::to_string(c.K) + " N" + std::to_string(c.N) + " " +
                         dtype_name(wdt) + "/" + dtype_name(xdt));
      }
    }
  }
}

TEST(Gemm, LinearBatchedAndStridedInput) {
  Tensor x3 = randn({2, 5, 24}, 4), w = randn({10, 24}, 5);
  Tensor y = ops::linear(x3, w);
  EXPECT_EQ(y.shape(), (Shape{2, 5, 10}));
  expect_close(y, ref_linear(x3, w, std::nullopt), 1e-5, 1e-5, "batched linear");
  Tensor xs = randn({24, 7}, 6).transpose(0, 1);  // [7, 24] strided
  expect_close(ops::linear(xs, w), ref_linear(xs.contiguous(), w, std::nullopt), 1e-5, 1e-5, "strided x");
  Tensor wfused = randn({30, 24}, 7);
  Tensor wslice = wfused.slice(0, 10, 20);  // a row slice of a fused weight: a view with offset
  expect_close(ops::linear(x3, wslice), ref_linear(x3, wslice.contiguous(), std::nullopt), 1e-5, 1e-5, "weight view");
  EXPECT_THROW(ops::linear(randn({3, 5}, 1), w), Error);
  EXPECT_THROW(ops::linear(x3, w, randn({9}, 1)), Error);
}

TEST(Gemm, MatmulBroadcastBatch) {
  Tensor a = randn({2, 1, 5, 7}, 8), b = randn({3, 7, 4}, 9);
  Tensor c = ops::matmul(a, b);
  ASSERT_EQ(c.shape(), (Shape{2, 3, 5, 4}));
  auto av = a.to_f64_vector(), bv = b.to_f64_vector();
  std::vector<double> ref(2 * 3 * 5 * 4);
  for (int i = 0; i < 2; ++i)
    for (int j = 0; j < 3; ++j)
      for (int m = 0; m < 5; ++m)
        for (int n = 0; n < 4; ++n) {
          double s = 0;
          for (int k = 0; k < 7; ++k) s += av[(i * 5 + m) * 7 + k] * bv[(j * 7 + k) * 4 + n];
          ref[((i * 3 + j) * 5 + m) * 4 + n] = s;
        }
  expect_close(c, ref, 1e-5, 1e-5, "matmul");
  // transposed operand (strided), bf16
  Tensor bt = randn({4, 7}, 10, DType::BF16).transpose(0, 1);  // [7, 4]
  Tensor a2 = randn({5, 7}, 11);
  auto a2v = a2.to_f64_vector(), btv = bt.contiguous().to_f64_vector();
  std::vector<double> r2(20);
  for (int m = 0; m < 5; ++m)
    for (int n = 0; n < 4; ++n) {
      double s = 0;
      for (int k = 0; k < 7; ++k) s += a2v[m * 7 + k] * btv[k * 4 + n];
      r2[m * 4 + n] = s;
    }
  expect_close(ops::matmul(a2, bt), r2, 1e-5, 1e-5, "matmul strided bf16");
}

TEST(Gemm, WeightPackCacheNeverServesStaleWeights) {
  Tensor x = randn({9, 40}, 20), w = randn({24, 40}, 21, DType::BF16);
  Tensor y1 = ops::linear(x, w);
  // Rewrite the weight in place: the next call must see the new values.
  Tensor w2 = randn({24, 40}, 22, DType::BF16);
  std::memcpy(w.data_ptr(), w2.data_ptr(), w.nbytes());
  expect_close(ops::linear(x, w), ref_linear(x, w2, std::nullopt), 1e-4, 1e-5, "after in-place rewrite");
  // A fresh weight (maybe at a reused address) must never hit the old pack.
  for (int i = 0; i < 3; ++i) {
    Tensor wi = randn({24, 40}, 30 + i);
    expect_close(ops::linear(x, wi), ref_linear(x, wi, std::nullopt), 1e-4, 1e-5, "fresh weight " + std::to_string(i));
  }
  (void)y1;
}

TEST(Gemm, BitIdenticalRunToRun) {
  Tensor x = randn({257, 384}, 40), w = randn({160, 384}, 41), b = randn({160}, 42);
  Tensor xb = x.to(DType::BF16), wb = w.to(DType::BF16);
  Tensor y = ops::linear(x, w, b), yb = ops::linear(xb, wb, b);
  for (int i = 0; i < 3; ++i) {
    EXPECT_TRUE(same_bits(ops::linear(x, w, b), y));
    EXPECT_TRUE(same_bits(ops::linear(xb, wb, b), yb));
  }
}

TEST(Gemm, DiTLikeShapeBf16) {
  // Enough work for the blocked/AMX paths: M 300 tokens, K 256, N 512.
  Tensor x = randn({300, 256}, 50, DType::BF16), w = randn({512, 256}, 51, DType::BF16), b = randn({512}, 52);
  expect_close(ops::linear(x, w, b), ref_linear(x, w, b), 1e-3, eps_of(DType::BF16), "bf16 300x256x512");
  Tensor xf = randn({300, 256}, 53);
  expect_close(ops::linear(xf, w, b), ref_linear(xf, w, b), 1e-4, 1e-5, "f32 x bf16 w");
}
