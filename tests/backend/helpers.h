// Test helpers: seeded random tensors and closeness checks against double
// precision references.
#pragma once
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace vidax::test {

inline Tensor randn(const Shape& shape, uint32_t seed, DType dtype = DType::F32, double scale = 1.0) {
  std::mt19937 g(seed);
  std::normal_distribution<double> d(0.0, scale);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = d(g);
  return Tensor::from_f64(v, shape, dtype);
}

inline Tensor uniform(const Shape& shape, uint32_t seed, double lo, double hi, DType dtype = DType::F32) {
  std::mt19937 g(seed);
  std::uniform_real_distribution<double> d(lo, hi);
  std::vector<double> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = d(g);
  return Tensor::from_f64(v, shape, dtype);
}

// Row-major linear index of a multi-index.
inline int64_t lin(const Shape& s, std::initializer_list<int64_t> idx) {
  int64_t o = 0;
  size_t d = 0;
  for (int64_t i : idx) o = o * s[d++] + i;
  return o;
}

// |got - ref| <= atol + rtol * |ref| for every element; reports the first few misses.
inline void expect_close(const Tensor& got, const std::vector<double>& ref, double atol, double rtol,
                         const std::string& what = "") {
  ASSERT_EQ(got.numel(), static_cast<int64_t>(ref.size())) << what;
  const std::vector<double> g = got.to_f64_vector();
  int bad = 0;
  double worst = 0;
  for (size_t i = 0; i < ref.size(); ++i) {
    const double err = std::fabs(g[i] - ref[i]);
    const bool ok = (std::isnan(ref[i]) && std::isnan(g[i])) || err <= atol + rtol * std::fabs(ref[i]);
    if (!ok) {
      worst = std::max(worst, err);
      if (++bad <= 5) ADD_FAILURE() << what << " element " << i << ": got " << g[i] << " want " << ref[i];
    }
  }
  EXPECT_EQ(bad, 0) << what << ": " << bad << " of " << ref.size() << " elements off (worst abs err " << worst << ")";
}

// Bitwise equality of two tensors' bytes.
inline bool same_bits(const Tensor& a, const Tensor& b) {
  if (a.shape() != b.shape() || a.dtype() != b.dtype()) return false;
  Tensor ac = a.contiguous(), bc = b.contiguous();
  return std::memcmp(ac.data_ptr(), bc.data_ptr(), ac.nbytes()) == 0;
}

// Tolerance of a value rounded to dtype (relative).
inline double eps_of(DType t) {
  switch (t) {
    case DType::BF16: return 1.0 / 128;
    case DType::F16: return 1.0 / 1024;
    default: return 2e-6;
  }
}

// Sets the OpenMP thread count for a scope.
struct ThreadCount {
  explicit ThreadCount(int n) : saved(omp_get_max_threads()) { omp_set_num_threads(n); }
  ~ThreadCount() { omp_set_num_threads(saved); }
  ThreadCount(const ThreadCount&) = delete;
  ThreadCount& operator=(const ThreadCount&) = delete;
  int saved;
};

// Runs `run` (returning std::vector<Tensor>) on one thread, then on each thread
// count in `counts`, and expects the same bits for every output every time.
template <class Run>
void expect_bit_identical_across_threads(Run run, std::initializer_list<int> counts = {2, 3}) {
  std::vector<Tensor> ref;
  {
    ThreadCount one(1);
    ref = run();
  }
  for (int n : counts) {
    ThreadCount t(n);
    const std::vector<Tensor> got = run();
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < ref.size(); ++i) EXPECT_TRUE(same_bits(got[i], ref[i])) << "output " << i << ", " << n << " threads";
  }
}

}  // namespace vidax::test
