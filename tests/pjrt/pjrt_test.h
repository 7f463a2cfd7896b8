// Shared by the PJRT tests: the pinned CPU plugin (.deps/pjrt, scripts/fetch-pjrt-plugin.sh), a
// session on it without a disk cache, and a check that runs one recorded computation through
// PJRT against the CPU backend.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <functional>
#include <vector>

#include "backend/pjrt/session.h"
#include "backend/recording.h"

namespace pjrt_test {

using namespace vidax;

// Skips (naming why) when this build has no PJRT or the plugin is missing.
#define VIDAX_REQUIRE_PJRT()                                                                     \
  do {                                                                                           \
    if (!::vidax::pjrt::available()) GTEST_SKIP() << "built without PJRT (VIDAX_PJRT off)";      \
    ASSERT_TRUE(std::filesystem::exists(VIDAX_PJRT_TEST_PLUGIN))                                 \
        << VIDAX_PJRT_TEST_PLUGIN << " missing: run scripts/fetch-pjrt-plugin.sh";                \
  } while (0)

inline pjrt::Session& session() {
  static pjrt::Session s(VIDAX_PJRT_TEST_PLUGIN, "");
  return s;
}

inline double rel_l2(const Tensor& a, const Tensor& b) {
  const auto x = a.to_f64_vector(), y = b.to_f64_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) num += (x[i] - y[i]) * (x[i] - y[i]), den += y[i] * y[i];
  return std::sqrt(num / (den > 0 ? den : 1));
}
inline double max_abs(const Tensor& a, const Tensor& b) {
  const auto x = a.to_f64_vector(), y = b.to_f64_vector();
  double m = 0;
  for (size_t i = 0; i < x.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

using Fn = std::function<Tensor(const std::vector<Tensor>&)>;

// f on the CPU tensors `xs`, then recorded on Meta copies of them and run through PJRT: the two
// results must agree within rel_l2 <= tol (and have the same shape and dtype).
inline void expect_same(const Fn& f, const std::vector<Tensor>& xs, double tol, const pjrt::LowerOptions& opt = {}) {
  const Tensor ref = f(xs);
  std::vector<Tensor> metas;
  std::vector<std::pair<Tensor, Tensor>> bind;
  for (const Tensor& x : xs) {
    metas.push_back(Tensor::empty(x.shape(), x.dtype(), Device::Meta));
    bind.emplace_back(metas.back(), x);
  }
  Trace trace;
  Tensor y;
  {
    RecordingScope rec(trace);
    y = f(metas);
  }
  const std::vector<Tensor> got = session().run(trace, {y}, bind, opt);
  ASSERT_EQ(got.size(), 1u);
  ASSERT_EQ(got[0].shape(), ref.shape()) << trace.str();
  ASSERT_EQ(got[0].dtype(), ref.dtype()) << trace.str();
  const double e = rel_l2(got[0], ref);
  EXPECT_LE(e, tol) << "max_abs " << max_abs(got[0], ref) << "\n" << trace.str();
}

// Deterministic values in [-a, a].
inline Tensor randt(const Shape& s, uint64_t seed, double a = 1.0, DType dt = DType::F32) {
  std::vector<float> v(static_cast<size_t>(shape_numel(s)));
  uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
  for (float& f : v) {
    x ^= x << 13, x ^= x >> 7, x ^= x << 17;
    f = static_cast<float>((static_cast<double>(x >> 11) / 9007199254740992.0 * 2 - 1) * a);
  }
  return Tensor::from_f32(v, s, dt);
}

}  // namespace pjrt_test
