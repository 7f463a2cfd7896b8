// bench_kernels: GEMM (DiT shapes) and flash attention throughput through the
// engine's own op set (ops::linear packs and caches weights on the first call,
// as a model does at load), against the machine's measured peak.
//
//   bench_kernels [--quick] [--only gemm|attention] [--reps N]
//
// Each figure is the best of N timed runs after one warm-up run, with the peak
// re-measured right before it (the machine is shared: a contemporaneous peak
// keeps the ratio honest under load).
#include <omp.h>
#include <sys/utsname.h>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>

#include "backend/cpu/gemm.h"
#include "backend/ops.h"
#include "peak.h"

using namespace vidax;

namespace {

Tensor random_tensor(const Shape& shape, DType dt, uint32_t seed) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.f, 1.f);
  std::vector<float> v(static_cast<size_t>(shape_numel(shape)));
  for (auto& x : v) x = d(g);
  return Tensor::from_f32(v, shape, dt);
}

double best_seconds(int reps, const std::function<void()>& f) {
  f();  // warm-up (packs weights, creates primitives)
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

std::string cpu_model() {
  std::ifstream f("/proc/cpuinfo");
  std::string line;
  while (std::getline(f, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "?";
}

double loadavg() {
  std::ifstream f("/proc/loadavg");
  double l = 0;
  f >> l;
  return l;
}

struct Peaks { double fp32, bf16, amx; };
Peaks measure_peaks() {
  return {bench::measured_peak_fp32_gflops(3), bench::measured_peak_bf16_gflops(3), bench::measured_peak_amx_bf16_gflops(3)};
}

}  // namespace

int main(int argc, char** argv) {
  bool quick = false;
  std::string only;
  int reps = 3;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else {
      std::printf("usage: bench_kernels [--quick] [--only gemm|attention] [--reps N]\n");
      return 2;
    }
  }
  std::printf("machine: %s, %d OpenMP threads, GEMM library: %s, load average at start: %.2f\n", cpu_model().c_str(),
              omp_get_max_threads(), cpu::gemm_library().c_str(), loadavg());
  Peaks p = measure_peaks();
  std::printf("measured peak (GFLOP/s): fp32 FMA %.1f, AVX512-BF16 %.1f, AMX-BF16 %.1f\n\n", p.fp32, p.bf16, p.amx);

  double gemm_ref[2] = {0, 0};  // f32, bf16 GFLOP/s at the attention comparison shape
  if (only.empty() || only == "gemm") {
    struct Shape3 { int64_t M, K, N; const char* what; };
    std::vector<Shape3> shapes = {{768, 1536, 1536, "1.3B qkvo, 768 tok"},  {3120, 1536, 1536, "1.3B qkvo, 3120 tok"},
                                  {7800, 1536, 1536, "1.3B qkvo, 7800 tok"}, {3120, 1536, 8960, "1.3B ffn up"},
                                  {3120, 8960, 1536, "1.3B ffn down"},      {768, 5120, 13824, "14B ffn up, 768 tok"},
                                  {768, 13824, 5120, "14B ffn down, 768 tok"}};
    if (quick) shapes = {{768, 1536, 1536, "1.3B qkvo, 768 tok"}, {3120, 1536, 1536, "1.3B qkvo, 3120 tok"}};
    std::printf("%-6s %-24s %6s %6s %6s %10s %10s %8s\n", "dtype", "shape", "M", "K", "N", "GFLOP/s", "peak", "ratio");
    for (DType dt : {DType::F32, DType::BF16}) {
      for (const Shape3& s : shapes) {
        Tensor x = random_tensor({s.M, s.K}, dt, 1), w = random_tensor({s.N, s.K}, dt, 2), b = random_tensor({s.N}, DType::F32, 3);
        const double flops = 2.0 * s.M * s.K * s.N;
        const double t = best_seconds(reps, [&] { ops::linear(x, w, b); });
        const Peaks now = measure_peaks();
        const double g = flops / t * 1e-9;
        const double peak = dt == DType::F32 ? now.fp32 : now.amx;
        std::printf("%-6s %-24s %6ld %6ld %6ld %10.1f %10.1f %7.0f%%\n", dtype_name(dt), s.what, (long)s.M, (long)s.K,
                    (long)s.N, g, peak, 100.0 * g / peak);
        if (s.M == 3120 && s.K == 1536 && s.N == 1536) gemm_ref[dt == DType::F32 ? 0 : 1] = g;
        std::fflush(stdout);
      }
    }
    std::printf("(bf16 ratio against the AMX-BF16 peak; AVX512-BF16 VDPBF16PS peak %.1f)\n\n", p.bf16);
  }

  if (only.empty() || only == "attention") {
    std::printf("%-6s %-34s %10s %10s %12s\n", "dtype", "attention", "GFLOP/s", "fp32 peak", "vs GEMM");
    const int64_t N = quick ? 2048 : 4096, D = 128, H = 2;
    for (DType dt : {DType::F32, DType::BF16}) {
      Tensor q = random_tensor({1, N, H, D}, dt, 4), k = random_tensor({1, N, H, D}, dt, 5), v = random_tensor({1, N, H, D}, dt, 6);
      const double flops = 4.0 * N * N * D * H;  // QK^T and PV
      const double t = best_seconds(reps, [&] { ops::attention(q, k, v); });
      const Peaks now = measure_peaks();
      const double g = flops / t * 1e-9, ref = gemm_ref[dt == DType::F32 ? 0 : 1];
      char what[64];
      std::snprintf(what, sizeof what, "N=%ld d=%ld heads=%ld", (long)N, (long)D, (long)H);
      if (ref > 0) std::printf("%-6s %-34s %10.1f %10.1f %11.0f%%\n", dtype_name(dt), what, g, now.fp32, 100.0 * g / ref);
      else std::printf("%-6s %-34s %10.1f %10.1f %12s\n", dtype_name(dt), what, g, now.fp32, "(run gemm)");
      std::fflush(stdout);
    }
    std::printf("(vs GEMM: ratio to the same-dtype linear at M=3120, K=N=1536 measured above)\n");
  }
  std::printf("\nload average at end: %.2f\n", loadavg());
  return 0;
}
