// measure_machine_peak (peak.h) and the avx2 fp32 micro-kernel (this file is compiled for the
// baseline, x86-64-v3; the other tiers' kernels are in peak_avx512*.cpp and peak_amx.cpp).
#include "backend/cpu/peak.h"

#include <immintrin.h>
#include <omp.h>
#include <time.h>

#include <algorithm>
#include <vector>

#include "backend/cpu/cpu_tier.h"
#include "core/error.h"

namespace vidax::cpu {

namespace peak {

// 12 independent FMA chains (latency 4-5 cycles x 2 pipes needs >= 10) on 8 lanes.
double fp32_avx2(int64_t iters) {
  constexpr int kChains = 12;
  __m256 acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = _mm256_set1_ps(static_cast<float>(c) * 1e-3f);
  const __m256 a = _mm256_set1_ps(0.999999f), b = _mm256_set1_ps(1e-7f);
  // Named accumulators (an array indexed in the loop was kept in memory by GCC: half the rate).
  __m256 a0 = acc[0], a1 = acc[1], a2 = acc[2], a3 = acc[3], a4 = acc[4], a5 = acc[5], a6 = acc[6], a7 = acc[7],
         a8 = acc[8], a9 = acc[9], a10 = acc[10], a11 = acc[11];
  for (int64_t i = 0; i < iters; ++i) {
#define VIDAX_PEAK_STEP(x) x = _mm256_fmadd_ps(x, a, b)
    VIDAX_PEAK_STEP(a0); VIDAX_PEAK_STEP(a1); VIDAX_PEAK_STEP(a2); VIDAX_PEAK_STEP(a3);
    VIDAX_PEAK_STEP(a4); VIDAX_PEAK_STEP(a5); VIDAX_PEAK_STEP(a6); VIDAX_PEAK_STEP(a7);
    VIDAX_PEAK_STEP(a8); VIDAX_PEAK_STEP(a9); VIDAX_PEAK_STEP(a10); VIDAX_PEAK_STEP(a11);
#undef VIDAX_PEAK_STEP
  }
  acc[0] = a0; acc[1] = a1; acc[2] = a2; acc[3] = a3; acc[4] = a4; acc[5] = a5;
  acc[6] = a6; acc[7] = a7; acc[8] = a8; acc[9] = a9; acc[10] = a10; acc[11] = a11;
  __m256 s = acc[0];
  for (int c = 1; c < kChains; ++c) s = _mm256_add_ps(s, acc[c]);
  volatile float sink = _mm256_cvtss_f32(s);
  (void)sink;
  return static_cast<double>(iters) * kChains * 8 * 2;
}

}  // namespace peak

namespace {

double thread_cpu_seconds() {
  timespec ts{};
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

}  // namespace

MachinePeak measure_machine_peak(DType compute, int threads, int reps) {
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16,
              "measure_machine_peak: compute dtype must be F32 or BF16, got " << dtype_name(compute));
  MachinePeak r;
  r.threads = std::max(1, threads);
  const CpuTier tier = cpu_tier();
  const bool bf16 = compute == DType::BF16 && has_bf16_arithmetic();
  double (*kernel)(int64_t) = peak::fp32_avx2;
  int64_t iters = 4'000'000;  // ~0.1 s per run on one core at a few GHz
  if (bf16 && tier == CpuTier::Amx) {
    kernel = peak::bf16_amx;
    iters = 400'000;
    r.method = "amx tdpbf16ps, 4 accumulator tiles, 16x16x32 x 2 FLOP per tile product";
  } else if (bf16) {
    kernel = peak::bf16_avx512;
    r.method = "avx512_bf16 vdpbf16ps, 16 zmm chains, 16 lanes x 4 FLOP";
  } else if (cpu_tier_at_least(CpuTier::Avx512)) {
    kernel = peak::fp32_avx512;
    r.method = std::string(cpu_tier_name(tier)) + " fp32 FMA, 12 zmm chains, 16 lanes x 2 FLOP";
  } else {
    r.method = "avx2 fp32 FMA, 12 ymm chains, 8 lanes x 2 FLOP";
  }
  if (compute == DType::BF16 && !bf16) r.method += " (bf16 computes in fp32 at this tier)";
  kernel(iters / 10);  // warm-up: clocks up, pages in
  for (int rep = 0; rep < std::max(1, reps); ++rep) {
    std::vector<double> rate(static_cast<size_t>(r.threads), 0.0);
#pragma omp parallel num_threads(r.threads)
    {
      const double c0 = thread_cpu_seconds();
      const double flops = kernel(iters);
      const double c1 = thread_cpu_seconds();
      rate[static_cast<size_t>(omp_get_thread_num())] = c1 > c0 ? flops / (c1 - c0) : 0.0;
    }
    r.flops_per_cpu_second = std::max(r.flops_per_cpu_second, *std::max_element(rate.begin(), rate.end()));
  }
  r.flops_per_second = r.flops_per_cpu_second * r.threads;
  return r;
}

}  // namespace vidax::cpu
