// The AMX bf16 GEMM behind linear (gemm_amx.cpp): every tail in M, N and K,
// strided x, bias, bf16 and f32 outputs against a double reference with an
// error bound for fp32 accumulation plus one rounding; agreement with the
// oneDNN path; bit-identity across thread counts and blockings; the pack cache.
#include <gtest/gtest.h>
#include <omp.h>

#include <cmath>
#include <cstdio>
#include <cstring>

#include "backend/cpu/amx.h"
#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_amx.h"
#include "backend/cpu/kernels.h"
#include "backend/ops.h"
#include "helpers.h"

using namespace vidax;
using namespace vidax::test;

namespace {

#define REQUIRE_AMX()                                                                         \
  cpu::set_amx_gemm_enabled(true); /* every shape on the AMX kernel (default: by size) */ \
  if (!cpu::amx_gemm_active()) GTEST_SKIP() << "no AMX on this CPU/build: the AMX GEMM is not used"

// y = x W^T + b in double from the (bf16) inputs, and sum_k |x w| + |b| per
// element (the scale of the fp32 accumulation error).
struct Reference {
  std::vector<double> y, magnitude;
};
Reference reference(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias) {
  const std::vector<double> xv = x.contiguous().to_f64_vector(), wv = w.contiguous().to_f64_vector();
  const std::vector<double> bv = bias ? bias->to_f64_vector() : std::vector<double>{};
  const int64_t K = w.size(1), N = w.size(0), M = x.numel() / std::max<int64_t>(K, 1);
  Reference r;
  r.y.resize(static_cast<size_t>(M * N));
  r.magnitude.resize(r.y.size());
  for (int64_t m = 0; m < M; ++m)
    for (int64_t n = 0; n < N; ++n) {
      double s = bv.empty() ? 0.0 : bv[n], a = std::fabs(s);
      for (int64_t k = 0; k < K; ++k) {
        const double p = xv[m * K + k] * wv[n * K + k];
        s += p;
        a += std::fabs(p);
      }
      r.y[m * N + n] = s;
      r.magnitude[m * N + n] = a;
    }
  return r;
}

// |got - y| <= (K + 2) 2^-24 magnitude (fp32 accumulation) + half an ulp of the
// output dtype (one RNE rounding: unit roundoff 2^-8 for bf16, 2^-24 for f32) of |y|.
void expect_within_bound(const Tensor& got, const Reference& ref, int64_t K, const std::string& what) {
  const std::vector<double> g = got.to_f64_vector();
  ASSERT_EQ(g.size(), ref.y.size()) << what;
  const double round = got.dtype() == DType::BF16 ? std::ldexp(1.0, -8) : std::ldexp(1.0, -24);
  int bad = 0;
  for (size_t i = 0; i < g.size(); ++i) {
    const double acc = static_cast<double>(K + 2) * std::ldexp(1.0, -24) * ref.magnitude[i];
    const double bound = acc + round * (std::fabs(ref.y[i]) + acc) * 1.0001;
    if (!(std::fabs(g[i] - ref.y[i]) <= bound) && ++bad <= 5)
      ADD_FAILURE() << what << " element " << i << ": got " << g[i] << " want " << ref.y[i] << " (bound " << bound << ")";
  }
  EXPECT_EQ(bad, 0) << what;
}

// cpu::linear straight into an output of the given dtype (ops::linear always
// returns x's dtype; the kernel supports f32 output of bf16 inputs too).
Tensor run_linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, DType out_dtype) {
  Shape s = x.shape();
  s.back() = w.size(0);
  Tensor out = Tensor::empty(s, out_dtype);
  cpu::linear(x, w, bias, out);
  return out;
}

std::string name_of(int64_t M, int64_t K, int64_t N, bool bias, DType out) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "M%ld K%ld N%ld%s %s", static_cast<long>(M), static_cast<long>(K), static_cast<long>(N),
                bias ? " +bias" : "", dtype_name(out));
  return buf;
}

// Restores the thread count, the AMX switch and the blocking a test changes.
struct Restore {
  int threads = omp_get_max_threads();
  cpu::amx::Blocking blocking = cpu::amx::blocking();
  ~Restore() {
    omp_set_num_threads(threads);
    cpu::set_amx_gemm_policy(cpu::AmxGemmPolicy::BySize);
    cpu::amx::set_blocking(blocking);
  }
};

}  // namespace

TEST(GemmAmx, EveryTailAgainstDoubleReference) {
  REQUIRE_AMX();
  const std::vector<int64_t> sizes = {1, 2, 15, 16, 17, 31, 33, 47, 64, 100, 129};
  uint32_t seed = 1;
  for (int64_t M : sizes)
    for (int64_t K : sizes)
      for (int64_t N : sizes) {
        ++seed;
        Tensor x = randn({M, K}, seed, DType::BF16), w = randn({N, K}, seed + 7000, DType::BF16);
        const bool with_bias = seed % 2 == 0;
        std::optional<Tensor> b;
        if (with_bias) b = randn({N}, seed + 9000);
        const Reference ref = reference(x, w, b);
        const DType out = seed % 3 == 0 ? DType::F32 : DType::BF16;
        expect_within_bound(run_linear(x, w, b, out), ref, K, name_of(M, K, N, with_bias, out));
        if (HasFailure()) return;
      }
}

TEST(GemmAmx, LargeShapesBothOutputDtypes) {
  REQUIRE_AMX();
  struct Case { int64_t M, K, N; };
  for (Case c : {Case{100, 1536, 129}, Case{33, 1537, 1535}, Case{129, 1000, 200}, Case{257, 64, 1536}}) {
    Tensor x = randn({c.M, c.K}, 11, DType::BF16), w = randn({c.N, c.K}, 12, DType::BF16), b = randn({c.N}, 13);
    const Reference ref = reference(x, w, b);
    for (DType out : {DType::BF16, DType::F32})
      expect_within_bound(run_linear(x, w, b, out), ref, c.K, name_of(c.M, c.K, c.N, true, out));
  }
}

TEST(GemmAmx, StridedAndBatchedInput) {
  REQUIRE_AMX();
  Tensor w = randn({47, 70}, 21, DType::BF16), b = randn({47}, 22);
  // Rows of a wider matrix (row stride 100 > K = 70): read in place.
  Tensor wide = randn({33, 100}, 23, DType::BF16);
  Tensor xs = wide.slice(1, 5, 75);
  expect_within_bound(run_linear(xs, w, b, DType::BF16), reference(xs, w, b), 70, "row-strided x");
  // A transposed view (column stride != 1): staged.
  Tensor xt = randn({70, 19}, 24, DType::BF16).transpose(0, 1);
  expect_within_bound(run_linear(xt, w, b, DType::F32), reference(xt, w, b), 70, "transposed x");
  // Batched [2, 3, 17, 70] input and a weight that is a row slice of a fused weight (offset view).
  Tensor x4 = randn({2, 3, 17, 70}, 25, DType::BF16);
  Tensor fused = randn({3 * 47, 70}, 26, DType::BF16);
  Tensor wv = fused.slice(0, 47, 94);
  Tensor y = ops::linear(x4, wv, b);
  EXPECT_EQ(y.shape(), (Shape{2, 3, 17, 47}));
  expect_within_bound(y, reference(x4, wv, b), 70, "batched x, weight view");
  // A transposed weight (column-major W): packed through its strides.
  Tensor wt = randn({70, 47}, 27, DType::BF16).transpose(0, 1);
  expect_within_bound(run_linear(xs, wt, std::nullopt, DType::BF16), reference(xs, wt, std::nullopt), 70,
                      "transposed weight");
}

TEST(GemmAmx, RoundsOnceToNearestEven) {
  REQUIRE_AMX();
  // 1 + 2^-8 and 1 + 3 * 2^-8 are exact in fp32 and halfway between bf16
  // neighbours: RNE gives 1 and 1 + 2^-6 (truncation or double rounding would not).
  Tensor x = Tensor::from_f64({1.0, 1.0 / 256, 1.0, 3.0 / 256}, {2, 2}, DType::BF16);
  Tensor w = Tensor::from_f64({1.0, 1.0}, {1, 2}, DType::BF16);
  const std::vector<double> y = run_linear(x, w, std::nullopt, DType::BF16).to_f64_vector();
  EXPECT_EQ(y[0], 1.0);
  EXPECT_EQ(y[1], 1.0 + 1.0 / 64);
  // The bias joins the fp32 sum before the single rounding.
  Tensor b = Tensor::from_f64({1.0 / 256}, {1}, DType::F32);
  Tensor x1 = Tensor::from_f64({1.0, 0.0}, {1, 2}, DType::BF16);
  EXPECT_EQ(run_linear(x1, w, b, DType::BF16).to_f64_vector()[0], 1.0);
  EXPECT_EQ(run_linear(x1, w, b, DType::F32).to_f64_vector()[0], 1.0 + 1.0 / 256);
  // NaN in x poisons its row only.
  Tensor xn = Tensor::from_f64({std::nan(""), 1.0, 2.0, 1.0}, {2, 2}, DType::BF16);
  const std::vector<double> yn = run_linear(xn, w, std::nullopt, DType::BF16).to_f64_vector();
  EXPECT_TRUE(std::isnan(yn[0]));
  EXPECT_EQ(yn[1], 3.0);
}

TEST(GemmAmx, AgreesWithOneDnnPath) {
  REQUIRE_AMX();
  Restore restore;
  for (auto [M, K, N] : {std::tuple<int64_t, int64_t, int64_t>{300, 256, 520}, {17, 1536, 33}, {64, 100, 129}}) {
    Tensor x = randn({M, K}, 31, DType::BF16), w = randn({N, K}, 32, DType::BF16), b = randn({N}, 33);
    cpu::set_amx_gemm_enabled(false);
    const Tensor y_onednn = ops::linear(x, w, b);
    cpu::set_amx_gemm_enabled(true);
    const Tensor y_amx = ops::linear(x, w, b);
    // Both are within half a bf16 ulp of nearly the same fp32 sum: at most one ulp apart.
    const Reference ref = reference(x, w, b);
    expect_close(y_amx, y_onednn.to_f64_vector(), 1e-6 * K, 1.0 / 128, name_of(M, K, N, true, DType::BF16) + " vs oneDNN");
    expect_within_bound(y_onednn, ref, K, "oneDNN " + name_of(M, K, N, true, DType::BF16));
  }
}

// The default policy sends small K and N to oneDNN and K or N >= 1024 to ours
// (measured crossover, gemm.cpp); the result is bit-identical to the forced path.
TEST(GemmAmx, DefaultPolicyPicksTheKernelBySize) {
  REQUIRE_AMX();
  Restore restore;
  for (auto [M, K, N, ours] : {std::tuple<int64_t, int64_t, int64_t, bool>{33, 256, 520, false},
                               {33, 1023, 1000, false}, {33, 1024, 40, true}, {20, 96, 4100, true},
                               {40, 1536, 1536, true}}) {
    Tensor x = randn({M, K}, 51, DType::BF16), w = randn({N, K}, 52, DType::BF16), b = randn({N}, 53);
    cpu::set_amx_gemm_enabled(ours);
    const Tensor forced = run_linear(x, w, b, DType::F32);
    cpu::set_amx_gemm_policy(cpu::AmxGemmPolicy::BySize);
    const uint64_t before = cpu::amx_gemm_calls();
    const Tensor by_size = run_linear(x, w, b, DType::F32);
    EXPECT_EQ(cpu::amx_gemm_calls() - before, ours ? 1u : 0u) << name_of(M, K, N, true, DType::F32);
    EXPECT_TRUE(same_bits(by_size, forced)) << name_of(M, K, N, true, DType::F32);
  }
}

TEST(GemmAmx, BitIdenticalAcrossThreadsAndBlockings) {
  REQUIRE_AMX();
  Restore restore;
  Tensor x = randn({200, 1100}, 41, DType::BF16), w = randn({300, 1100}, 42, DType::BF16), b = randn({300}, 43);
  omp_set_num_threads(1);
  const Tensor y1 = run_linear(x, w, b, DType::F32);
  omp_set_num_threads(2);
  const Tensor y2 = run_linear(x, w, b, DType::F32);
  EXPECT_TRUE(same_bits(y1, y2)) << "1 vs 2 threads";
  // Other cache blockings (k split into several passes and blocks through fp32 memory) change nothing.
  for (cpu::amx::Blocking bl : {cpu::amx::Blocking{32, 32, 32, 32}, cpu::amx::Blocking{96, 160, 224, 448},
                                cpu::amx::Blocking{64, 96, 64, 4096}}) {
    cpu::amx::set_blocking(bl);
    EXPECT_TRUE(same_bits(run_linear(x, w, b, DType::F32), y1))
        << "blocking " << bl.mb << "," << bl.nc << "," << bl.kc << "," << bl.kb;
  }
  for (int i = 0; i < 2; ++i) EXPECT_TRUE(same_bits(run_linear(x, w, b, DType::F32), y1)) << "run " << i;
  // Few rows: the two threads split the columns instead.
  cpu::amx::set_blocking(restore.blocking);
  Tensor xs = randn({3, 1100}, 44, DType::BF16), ws = randn({1000, 1100}, 45, DType::BF16);
  omp_set_num_threads(1);
  const Tensor s1 = run_linear(xs, ws, std::nullopt, DType::BF16);
  omp_set_num_threads(2);
  EXPECT_TRUE(same_bits(run_linear(xs, ws, std::nullopt, DType::BF16), s1)) << "few rows, 1 vs 2 threads";
  expect_within_bound(s1, reference(xs, ws, std::nullopt), 1100, "few rows");
}

// Streaming (non-temporal) output stores change no bit: rows that fill whole
// aligned lines (N a multiple of 32 for bf16, 16 for f32) take them, the rest
// (N = 1000, 48, tails) the ordinary stores, for the plain, GELU and gated
// residual output stages, on 1 and 2 threads. Auto streams large outputs only.
TEST(GemmAmx, StreamingStoresChangeNoBit) {
  REQUIRE_AMX();
  Restore restore;
  struct StoreScope {
    ~StoreScope() { cpu::amx::set_stream_stores(cpu::amx::StreamStores::Auto); }
  } store_scope;
  auto run_all = [](cpu::amx::StreamStores mode) {
    cpu::amx::set_stream_stores(mode);
    std::vector<Tensor> outs;
    for (int64_t N : {1024, 1000, 48, 2080})
      for (int threads : {1, 2}) {
        omp_set_num_threads(threads);
        const int64_t M = 77, K = 300;
        const Tensor x = randn({M, K}, 60 + N, DType::BF16), w = randn({N, K}, 61 + N, DType::BF16, 0.06);
        const Tensor b = randn({N}, 62 + N, DType::BF16);
        outs.push_back(run_linear(x, w, b, DType::BF16));
        outs.push_back(run_linear(x, w, b, DType::F32));
        outs.push_back(ops::linear_gelu(x, w, b, ops::GeluMode::Tanh));
        outs.push_back(ops::linear_gated_residual(x, w, b, randn({M, N}, 63 + N), randn({N}, 64 + N)));
      }
    return outs;
  };
  const uint64_t before = cpu::amx::streaming_calls();
  const std::vector<Tensor> cached = run_all(cpu::amx::StreamStores::Never);
  EXPECT_EQ(cpu::amx::streaming_calls(), before);
  const std::vector<Tensor> streamed = run_all(cpu::amx::StreamStores::Always);
  EXPECT_EQ(cpu::amx::streaming_calls(), before + cached.size());
  ASSERT_EQ(cached.size(), streamed.size());
  for (size_t i = 0; i < cached.size(); ++i) EXPECT_TRUE(same_bits(cached[i], streamed[i])) << "output " << i;
  // Auto: a 77 x 1024 output stays in the cache; 1024 x 2048 f32 (8 MiB) streams.
  cpu::amx::set_stream_stores(cpu::amx::StreamStores::Auto);
  const Tensor xs = randn({77, 64}, 65, DType::BF16), xl = randn({1024, 64}, 66, DType::BF16);
  const Tensor ws = randn({1024, 64}, 67, DType::BF16), wl = randn({2048, 64}, 68, DType::BF16);
  const uint64_t auto_before = cpu::amx::streaming_calls();
  run_linear(xs, ws, std::nullopt, DType::F32);
  EXPECT_EQ(cpu::amx::streaming_calls(), auto_before) << "small output";
  const Tensor large = run_linear(xl, wl, std::nullopt, DType::F32);
  EXPECT_EQ(cpu::amx::streaming_calls(), auto_before + 1) << "8 MiB output";
  expect_within_bound(large, reference(xl, wl, std::nullopt), 64, "8 MiB output, streamed");
}

TEST(GemmAmx, PackCacheNeverServesStaleWeights) {
  REQUIRE_AMX();
  Restore restore;
  cpu::clear_weight_pack_cache();
  Tensor x = randn({9, 40}, 50, DType::BF16), w = randn({24, 40}, 51, DType::BF16);
  (void)ops::linear(x, w);
  EXPECT_EQ(cpu::weight_pack_cache_size(), 1u);
  // Rewritten in place: repacked.
  Tensor w2 = randn({24, 40}, 52, DType::BF16);
  std::memcpy(w.data_ptr(), w2.data_ptr(), w.nbytes());
  expect_within_bound(ops::linear(x, w), reference(x, w2, std::nullopt), 40, "after in-place rewrite");
  // The oneDNN path on the same weight shares the cache entry and sees the same values.
  cpu::set_amx_gemm_enabled(false);
  expect_close(ops::linear(x, w), reference(x, w2, std::nullopt).y, 1e-4, 1.0 / 128, "oneDNN after rewrite");
  cpu::set_amx_gemm_enabled(true);
  EXPECT_EQ(cpu::weight_pack_cache_size(), 1u);
  // Fresh weights (maybe at a reused address) never hit an old pack.
  for (uint32_t i = 0; i < 3; ++i) {
    Tensor wi = randn({24, 40}, 60 + i, DType::BF16);
    expect_within_bound(ops::linear(x, wi), reference(x, wi, std::nullopt), 40, "fresh weight " + std::to_string(i));
  }
  cpu::clear_weight_pack_cache();
  EXPECT_EQ(cpu::weight_pack_cache_size(), 0u);
}

TEST(GemmAmx, PackedLayout) {
  // The documented tile layout, element by element (no AMX needed to pack).
  const int64_t N = 37, K = 45;
  Tensor w = randn({N, K}, 70, DType::BF16);
  const cpu::amx::PackedWeight p = cpu::amx::pack_weight(w);
  EXPECT_EQ(p.Np, 64);
  EXPECT_EQ(p.Kp, 64);
  const uint16_t* src = w.data<uint16_t>();
  const uint16_t* t = p.tiles();
  for (int64_t n = 0; n < p.Np; ++n)
    for (int64_t k = 0; k < p.Kp; ++k) {
      const int64_t nb = n / 32, half = (n % 32) / 16, c = n % 16, kc = k / 32, pr = (k % 32) / 2, e = k % 2;
      const uint16_t want = n < N && k < K ? src[n * K + k] : uint16_t(0);
      ASSERT_EQ(t[((nb * (p.Kp / 32) + kc) * 2 + half) * 512 + pr * 32 + c * 2 + e], want) << "n " << n << " k " << k;
    }
}
