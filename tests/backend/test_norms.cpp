#include <gtest/gtest.h>

#include <omp.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <utility>

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

// Contiguous inputs are widened block by block, strided ones staged whole: same bits either way,
// in every dtype, with inner sizes past one 256-position block.
TEST(Norms, DimReductionsOfStridedInputsMatchContiguous) {
  for (DType dt : {DType::F32, DType::BF16, DType::F64}) {
    const Tensor base = randn({3, 300, 7}, 62, dt, 2.0);
    const Tensor strided = base.transpose(1, 2);  // [3, 7, 300], not contiguous
    const Tensor packed = strided.contiguous();
    ASSERT_FALSE(strided.is_contiguous());
    for (int64_t dim : {0, 1, 2}) {
      SCOPED_TRACE(testing::Message() << dtype_name(dt) << " dim " << dim);
      EXPECT_TRUE(same_bits(ops::l2_normalize(strided, dim), ops::l2_normalize(packed, dim)));
      EXPECT_TRUE(same_bits(ops::softmax(strided, dim), ops::softmax(packed, dim)));
      EXPECT_TRUE(same_bits(ops::sum(strided, dim), ops::sum(packed, dim)));
      EXPECT_TRUE(same_bits(ops::mean(strided, dim), ops::mean(packed, dim)));
    }
  }
}

// ---- the fast path (unit-stride F32/BF16 rows) ---------------------------------------

namespace {

// The reference's layer_norm_modulate in f32: LN(x) (double, rounded to f32), then
// n * (1 + scale) + shift with each op rounded to f32 (volatile: no FMA contraction here).
// Returns the values and, per element, |n * (1 + scale)| + |shift| (the scale of one f32 rounding).
std::pair<std::vector<double>, std::vector<double>> ref_ln_modulate(const Tensor& x, const Tensor& shift,
                                                                    const Tensor& scale, double eps) {
  const std::vector<double> n = ref_norm(x, false, {}, {}, eps);
  const Tensor zero = Tensor::zeros(x.shape(), DType::F32);
  const std::vector<double> shv = ops::add(zero, shift).to_f64_vector(), scv = ops::add(zero, scale).to_f64_vector();
  std::vector<double> o(n.size()), mag(n.size());
  for (size_t i = 0; i < n.size(); ++i) {
    volatile float onep = 1.0f + static_cast<float>(scv[i]);
    volatile float p = static_cast<float>(n[i]) * onep;
    o[i] = static_cast<float>(p + static_cast<float>(shv[i]));
    mag[i] = std::fabs(p) + std::fabs(shv[i]);
  }
  return {o, mag};
}

// x [2, 5, D] with a nonzero mean, as `dt`.
Tensor norm_input(int64_t D, DType dt, uint32_t seed) { return ops::add_scalar(randn({2, 5, D}, seed, dt, 2.0), 0.7); }

}  // namespace

// Row lengths 1, primes and non-multiples of the 16 lanes; bf16 in and out; an output dtype
// other than x's. F32 results are within one rounding of the f64 value (1 ulp), bf16 within
// one bf16 rounding.
TEST(Norms, FastPathMatchesDoubleReference) {
  for (DType in : {DType::F32, DType::BF16})
    for (DType out : {DType::F32, DType::BF16})
      for (int64_t D : {1, 2, 13, 16, 17, 31, 48, 97, 1536}) {
        const std::string what = std::string(dtype_name(in)) + "->" + dtype_name(out) + " D=" + std::to_string(D);
        const Tensor x = norm_input(D, in, static_cast<uint32_t>(70 + D));
        const Tensor w = randn({D}, 71), b = randn({D}, 72, DType::BF16);
        const double rtol = out == DType::F32 ? 1.2e-7 : 1.0 / 256;
        auto norm = [&](const Tensor& t) { return ops::cast(t, out); };  // rms_norm has no out dtype: cast
        expect_close(ops::layer_norm(x, std::nullopt, std::nullopt, 1e-6, out), ref_norm(x, false, {}, {}, 1e-6),
                     1e-12, rtol, "layer_norm " + what);
        expect_close(ops::layer_norm(x, w, b, 1e-5, out), ref_norm(x, false, w.to_f64_vector(), b.to_f64_vector(), 1e-5),
                     1e-12, rtol, "layer_norm affine " + what);
        expect_close(norm(ops::rms_norm(x, w, 1e-6)), ref_norm(x, true, w.to_f64_vector(), {}, 1e-6), 1e-12,
                     in == DType::F32 ? rtol : 1.0 / 256, "rms_norm " + what);
        // shift/scale [2, 1, D] per sample, [D], and as full as x.
        const Tensor shift = randn({2, 1, D}, 73), scale = randn({2, 1, D}, 74, DType::BF16);
        for (const auto& [sh, sc] : {std::pair{shift, scale}, std::pair{randn({D}, 75), randn({D}, 76)},
                                     std::pair{randn({2, 5, D}, 77), randn({2, 5, D}, 78)}}) {
          const auto [ref, mag] = ref_ln_modulate(x, sh, sc, 1e-6);
          const Tensor got = ops::layer_norm_modulate(x, sh, sc, 1e-6, out);
          ASSERT_EQ(got.dtype(), out);
          // LN(x)'s f32 rounding may differ by one ulp (f64 sums in another order), then one f32 rounding
          // of the product and the sum; bf16 adds its own rounding.
          const std::vector<double> g = got.to_f64_vector();
          int bad = 0;
          for (size_t i = 0; i < ref.size(); ++i) {
            const double tol = 2.4e-7 * mag[i] + (out == DType::BF16 ? std::fabs(ref[i]) / 256 : 0.0) + 1e-30;
            if (std::fabs(g[i] - ref[i]) > tol && ++bad <= 3)
              ADD_FAILURE() << "layer_norm_modulate " << what << " element " << i << ": " << g[i] << " want " << ref[i];
          }
          EXPECT_EQ(bad, 0) << "layer_norm_modulate " << what;
        }
      }
}

// The output dtype rounds on store: exactly the op followed by a cast (the fusion the DiT uses).
TEST(Norms, OutputDtypeIsTheOpThenACast) {
  for (int64_t D : {7, 33, 1536}) {
    const Tensor x = norm_input(D, DType::F32, 80), w = randn({D}, 81), b = randn({D}, 82);
    const Tensor sh = randn({2, 1, D}, 83), sc = randn({2, 1, D}, 84);
    EXPECT_TRUE(same_bits(ops::layer_norm(x, w, b, 1e-6, DType::BF16),
                          ops::cast(ops::layer_norm(x, w, b, 1e-6), DType::BF16)));
    EXPECT_TRUE(same_bits(ops::layer_norm_modulate(x, sh, sc, 1e-6, DType::BF16),
                          ops::cast(ops::layer_norm_modulate(x, sh, sc, 1e-6), DType::BF16)));
  }
  EXPECT_THROW(ops::layer_norm(randn({2, 8}, 1), std::nullopt, std::nullopt, 1e-6, DType::I64), Error);
}

// Rows with unit stride inside a wider tensor take the fast path with per-row offsets (same bits
// as on a contiguous copy); rows with a non-unit stride take the generic f64 path (within 1 ulp).
TEST(Norms, RowOffsetsAndStridedRows) {
  for (DType dt : {DType::F32, DType::BF16}) {
    const Tensor wide = randn({3, 4, 40}, 90, dt, 2.0), w = randn({37}, 91);
    const Tensor x = wide.slice(-1, 2, 39);  // [3, 4, 37], row stride 40
    const Tensor xc = ops::copy(x), sh = randn({3, 1, 37}, 92), sc = randn({3, 1, 37}, 93);
    EXPECT_TRUE(same_bits(ops::layer_norm(x, w, w, 1e-6), ops::layer_norm(xc, w, w, 1e-6)));
    EXPECT_TRUE(same_bits(ops::rms_norm(x, w, 1e-6), ops::rms_norm(xc, w, 1e-6)));
    EXPECT_TRUE(same_bits(ops::layer_norm_modulate(x, sh, sc, 1e-6), ops::layer_norm_modulate(xc, sh, sc, 1e-6)));
    // shift/scale given as strided views
    const Tensor sht = randn({37, 3}, 94).transpose(0, 1).unsqueeze(1);
    EXPECT_TRUE(same_bits(ops::layer_norm_modulate(x, sht, sc, 1e-6), ops::layer_norm_modulate(xc, ops::copy(sht), sc, 1e-6)));
  }
  const Tensor t = randn({37, 12}, 95, DType::F32, 2.0).transpose(0, 1);  // [12, 37], inner stride 12: generic path
  const Tensor tc = ops::copy(t), w = randn({37}, 96);
  expect_close(ops::layer_norm(t, w, w, 1e-6), ops::layer_norm(tc, w, w, 1e-6).to_f64_vector(), 1e-12, 2.4e-7,
               "generic vs fast layer_norm");
  expect_close(ops::rms_norm(t, w, 1e-6), ops::rms_norm(tc, w, 1e-6).to_f64_vector(), 1e-12, 2.4e-7,
               "generic vs fast rms_norm");
}

// rms_norm_with_sum_sq with the row's own sum of squares is rms_norm (within the f64 sum order).
TEST(Norms, RmsNormWithSumSqOnTheFastPath) {
  for (DType dt : {DType::F32, DType::BF16}) {
    const Tensor x = randn({3, 7, 45}, 97, dt), w = randn({45}, 98);
    const Tensor x64 = ops::cast(x, DType::F64), ss = ops::sum(ops::mul(x64, x64), -1, true);
    expect_close(ops::rms_norm_with_sum_sq(x, ss, 45, w, 1e-6), ops::rms_norm(x, w, 1e-6).to_f64_vector(), 1e-12,
                 dt == DType::F32 ? 2.4e-7 : 1.0 / 128, "rms_norm_with_sum_sq");
  }
}

// Each row is reduced by one thread in a fixed lane order: the same bits on 1, 2 and 3 threads.
TEST(Norms, FastPathBitIdenticalAcrossThreadCounts) {
  const Tensor x = norm_input(1536, DType::F32, 99).view({10, 1536});
  const Tensor xb = randn({4, 300, 97}, 100, DType::BF16, 3.0), w = randn({97}, 101);
  const Tensor sh = randn({4, 1, 97}, 102), sc = randn({4, 1, 97}, 103);
  auto run = [&] {
    return std::vector<Tensor>{ops::layer_norm(xb, w, w, 1e-6), ops::rms_norm(xb, w, 1e-6),
                               ops::layer_norm_modulate(xb, sh, sc, 1e-6, DType::BF16),
                               ops::layer_norm_modulate(ops::cast(xb, DType::F32), sh, sc, 1e-6),
                               ops::rms_norm(ops::concat({x, x, x, x, x}, 0), std::nullopt, 1e-6)};
  };
  expect_bit_identical_across_threads(run);
}
