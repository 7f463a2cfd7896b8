// bench_kernels: GEMM (DiT shapes) and flash attention throughput through the
// engine's own op set (ops::linear packs and caches weights on the first call,
// as a model does at load), against the machine's measured peak.
//
//   bench_kernels [--quick] [--only gemm|gemm-bf16|attention|conv] [--reps N] [--clock wall|cpu]
//                 [--gemm-shapes M,K,N[;M,K,N...]] [--amx-blocking MB,NC,KC[,KB]]
//
// bf16 GEMM rows run twice when our AMX kernel is active: once on it ("amx")
// and once on oneDNN ("onednn", via cpu::set_amx_gemm_enabled(false)).
//
// Each figure is the best of N timed runs after one warm-up run, with the peak
// re-measured right before and after it (the machine is shared: a contemporaneous peak
// keeps the ratio honest under load).
#include <omp.h>
#include <sys/utsname.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <random>
#include <string>

#include "backend/cpu/gemm.h"
#include "backend/cpu/gemm_amx.h"
#include "backend/cpu/kernels.h"
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

// Wall-clock time, or (--clock cpu, meant for 1 thread) this process's CPU time:
// on a shared machine the CPU time only counts the moments the work actually
// ran, so it is immune to time slicing by other processes.
bool g_cpu_clock = false;
double now_seconds() {
  if (!g_cpu_clock)
    return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts;
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

[[maybe_unused]] double best_seconds(int reps, const std::function<void()>& f) {
  f();  // warm-up (packs weights, creates primitives)
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    const double t0 = now_seconds();
    f();
    best = std::min(best, now_seconds() - t0);
  }
  return best;
}

// One figure: for each repetition the relevant peak is measured right before and
// right after the kernel, the higher reading is its peak, and the repetition with
// the best kernel/peak ratio is reported, so both numbers come from the same
// moment of a shared machine's load. (With the reading before alone, a peak taken
// in one of this host's slow-AMX phases next to a kernel run after the phase
// ended gave ratios of 90-134%.)
struct Figure { double gflops = 0, peak = 0; double ratio() const { return peak > 0 ? gflops / peak : 0; } };
Figure measure(int reps, double flops, const std::function<double()>& peak, const std::function<void()>& f) {
  f();  // warm-up (packs weights, creates primitives)
  Figure best;
  for (int r = 0; r < reps; ++r) {
    const double pk_before = peak();
    const double t0 = now_seconds();
    f();
    const double seconds = now_seconds() - t0;
    const Figure fig{flops / seconds * 1e-9, std::max(pk_before, peak())};
    if (fig.ratio() > best.ratio()) best = fig;
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
  std::string gemm_shapes;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--quick")) quick = true;
    else if (!std::strcmp(argv[i], "--only") && i + 1 < argc) only = argv[++i];
    else if (!std::strcmp(argv[i], "--reps") && i + 1 < argc) reps = std::atoi(argv[++i]);
    else if (!std::strcmp(argv[i], "--clock") && i + 1 < argc) g_cpu_clock = !std::strcmp(argv[++i], "cpu");
    else if (!std::strcmp(argv[i], "--gemm-shapes") && i + 1 < argc) gemm_shapes = argv[++i];
    else if (!std::strcmp(argv[i], "--conv-budget-mb") && i + 1 < argc)
      cpu::set_conv_column_budget(static_cast<int64_t>(std::atof(argv[++i]) * (1 << 20)));
    else if (!std::strcmp(argv[i], "--amx-blocking") && i + 1 < argc) {
      cpu::amx::Blocking b = cpu::amx::blocking();  // kb optional
      const int got = std::sscanf(argv[++i], "%ld,%ld,%ld,%ld", &b.mb, &b.nc, &b.kc, &b.kb);
      if (got != 3 && got != 4) return 2;
      cpu::amx::set_blocking(b);
    } else {
      std::printf("usage: bench_kernels [--quick] [--only gemm|gemm-bf16|attention|conv|elementwise] [--reps N] [--clock wall|cpu]\n"
                  "                     [--gemm-shapes M,K,N[;M,K,N...]] [--amx-blocking MB,NC,KC[,KB]] [--conv-budget-mb MB]\n");
      return 2;
    }
  }
  if (g_cpu_clock && omp_get_max_threads() != 1) {
    std::printf("--clock cpu sums the CPU time of all threads: run it with OMP_NUM_THREADS=1\n");
    return 2;
  }
  std::printf("machine: %s, %d OpenMP threads, GEMM library: %s, clock: %s, load average at start: %.2f\n",
              cpu_model().c_str(), omp_get_max_threads(), cpu::gemm_library().c_str(),
              g_cpu_clock ? "process CPU time" : "wall", loadavg());
  bench::use_cpu_clock(g_cpu_clock);
  Peaks p = measure_peaks();
  std::printf("measured peak (GFLOP/s): fp32 FMA %.1f, AVX512-BF16 %.1f, AMX-BF16 %.1f\n\n", p.fp32, p.bf16, p.amx);

  const auto fp32_peak = [] { return bench::measured_peak_fp32_gflops(1); };
  const auto amx_peak = [] { return bench::measured_peak_amx_bf16_gflops(1); };
  // GEMM figure at the attention comparison shape, per dtype (its ratio to its own peak).
  Figure gemm_ref[2];
  if (only.empty() || only == "gemm" || only == "gemm-bf16") {
    struct Shape3 { int64_t M, K, N; const char* what; };
    std::vector<Shape3> shapes = {{768, 1536, 1536, "1.3B qkvo, 768 tok"},  {3120, 1536, 1536, "1.3B qkvo, 3120 tok"},
                                  {7800, 1536, 1536, "1.3B qkvo, 7800 tok"}, {3120, 1536, 8960, "1.3B ffn up"},
                                  {3120, 8960, 1536, "1.3B ffn down"},      {768, 5120, 13824, "14B ffn up, 768 tok"},
                                  {768, 13824, 5120, "14B ffn down, 768 tok"}};
    if (quick) shapes = {{768, 1536, 1536, "1.3B qkvo, 768 tok"}, {3120, 1536, 1536, "1.3B qkvo, 3120 tok"}};
    if (!gemm_shapes.empty()) {  // "M,K,N;M,K,N": ad-hoc shapes (tuning)
      shapes.clear();
      for (size_t pos = 0; pos < gemm_shapes.size();) {
        size_t end = gemm_shapes.find(';', pos);
        if (end == std::string::npos) end = gemm_shapes.size();
        long M = 0, K = 0, N = 0;
        if (std::sscanf(gemm_shapes.substr(pos, end - pos).c_str(), "%ld,%ld,%ld", &M, &K, &N) != 3) return 2;
        shapes.push_back({M, K, N, "(--gemm-shapes)"});
        pos = end + 1;
      }
    }
    const bool amx = cpu::amx_gemm_active();
    if (amx) {
      const cpu::amx::Blocking bl = cpu::amx::blocking();
      std::printf("AMX blocking: mb %ld, nc %ld, kc %ld, kb %ld\n", (long)bl.mb, (long)bl.nc, (long)bl.kc, (long)bl.kb);
    }
    std::printf("%-6s %-7s %-24s %6s %6s %6s %10s %10s %8s\n", "dtype", "path", "GEMM y = x W^T + b", "M", "K", "N",
                "GFLOP/s", "peak", "ratio");
    for (DType dt : {DType::F32, DType::BF16}) {
      if (only == "gemm-bf16" && dt != DType::BF16) continue;
      // bf16 on both paths when ours is active (ours last: it stays on for the attention rows).
      std::vector<bool> amx_paths = dt == DType::BF16 && amx ? std::vector<bool>{false, true} : std::vector<bool>{amx};
      for (const Shape3& s : shapes) {
        Tensor x = random_tensor({s.M, s.K}, dt, 1), w = random_tensor({s.N, s.K}, dt, 2), b = random_tensor({s.N}, DType::F32, 3);
        for (bool use_amx : amx_paths) {
          cpu::set_amx_gemm_enabled(use_amx);
          const Figure f = measure(reps, 2.0 * s.M * s.K * s.N, dt == DType::F32 ? fp32_peak : amx_peak,
                                   [&] { ops::linear(x, w, b); });
          const char* path = dt == DType::BF16 && use_amx ? "amx" : "onednn";
          std::printf("%-6s %-7s %-24s %6ld %6ld %6ld %10.1f %10.1f %7.0f%%\n", dtype_name(dt), path, s.what, (long)s.M,
                      (long)s.K, (long)s.N, f.gflops, f.peak, 100.0 * f.ratio());
          if (s.M == 3120 && s.K == 1536 && s.N == 1536) gemm_ref[dt == DType::F32 ? 0 : 1] = f;
          std::fflush(stdout);
        }
        cpu::clear_weight_pack_cache();  // the next shape's weights; keeps memory flat
      }
      cpu::set_amx_gemm_policy(cpu::AmxGemmPolicy::BySize);  // the default dispatch
    }
    // The fused output stages (ops::linear_gelu, ops::linear_gated_residual) at the FFN shapes,
    // next to the plain linear above (what the GELU / gated residual add inside the GEMM)
    // and to the same two ops run one after the other.
    if (amx && gemm_shapes.empty()) {
      cpu::set_amx_gemm_policy(cpu::AmxGemmPolicy::BySize);
      const int64_t M = 3120, D = 1536, F = 8960;
      Tensor x = random_tensor({M, D}, DType::BF16, 1), w_up = random_tensor({F, D}, DType::BF16, 2);
      Tensor h = random_tensor({M, F}, DType::BF16, 4), w_down = random_tensor({D, F}, DType::BF16, 5);
      Tensor residual = random_tensor({1, M, D}, DType::F32, 6), gate = random_tensor({1, 1, D}, DType::F32, 7);
      const Tensor h3 = h.reshape({1, M, F});
      const Figure up = measure(reps, 2.0 * M * D * F, amx_peak,
                                [&] { ops::linear_gelu(x, w_up, std::nullopt, ops::GeluMode::Tanh); });
      std::printf("%-6s %-7s %-24s %6ld %6ld %6ld %10.1f %10.1f %7.0f%%\n", "BF16", "amx", "ffn up + GELU (fused)",
                  (long)M, (long)D, (long)F, up.gflops, up.peak, 100.0 * up.ratio());
      const Figure up2 = measure(reps, 2.0 * M * D * F, amx_peak, [&] {
        ops::gelu(ops::linear(x, w_up, std::nullopt), ops::GeluMode::Tanh);
      });
      std::printf("%-6s %-7s %-24s %6ld %6ld %6ld %10.1f %10.1f %7.0f%%\n", "BF16", "amx", "ffn up; GELU (2 ops)",
                  (long)M, (long)D, (long)F, up2.gflops, up2.peak, 100.0 * up2.ratio());
      const Figure down = measure(reps, 2.0 * M * D * F, amx_peak,
                                  [&] { ops::linear_gated_residual(h3, w_down, std::nullopt, residual, gate); });
      std::printf("%-6s %-7s %-24s %6ld %6ld %6ld %10.1f %10.1f %7.0f%%\n", "BF16", "amx", "ffn down + gated res.",
                  (long)M, (long)F, (long)D, down.gflops, down.peak, 100.0 * down.ratio());
      const Figure down2 = measure(reps, 2.0 * M * D * F, amx_peak, [&] {
        ops::gated_residual(residual, gate, ops::linear(h3, w_down, std::nullopt));
      });
      std::printf("%-6s %-7s %-24s %6ld %6ld %6ld %10.1f %10.1f %7.0f%%\n", "BF16", "amx", "ffn down; g.res. (2 ops)",
                  (long)M, (long)F, (long)D, down2.gflops, down2.peak, 100.0 * down2.ratio());
      cpu::clear_weight_pack_cache();
    }
    std::printf("(peak: fp32 FMA for F32, AMX-BF16 for BF16, the higher of readings right before and after each run)\n\n");
  }

  if (only.empty() || only == "attention") {
    std::printf("%-6s %-30s %10s %10s %8s %10s\n", "dtype", "flash attention", "GFLOP/s", "peak", "ratio", "vs GEMM");
    // The comparison shape, then the Wan 1.3B DiT's own: self-attention over the
    // 832x480 latent tokens (1560 per latent frame: 3120 at 5 video frames, 7800 at
    // 17, where K and V of a head no longer fit L2; 32760 at 81, the published 480p
    // shape, 2 of its 12 heads) and text cross-attention (512 keys).
    struct AttnCase { DType dt; int64_t Lq, Lk, H, D; const char* what; };
    const int64_t N = quick ? 2048 : 4096;
    std::vector<AttnCase> cases = {{DType::F32, N, N, 2, 128, "N=%ld d=128 heads=2"},
                                   {DType::BF16, N, N, 2, 128, "N=%ld d=128 heads=2"},
                                   {DType::BF16, 3120, 3120, 12, 128, "Wan self L=3120 h=12"},
                                   {DType::BF16, 7800, 7800, 12, 128, "Wan self L=7800 h=12"},
                                   {DType::BF16, 32760, 32760, 2, 128, "Wan self L=32760 h=2"},
                                   {DType::BF16, 768, 512, 12, 128, "Wan cross 768x512 h=12"}};
    if (quick) cases.resize(2);
    // --only attention: measure just the reference GEMM shape for the "vs GEMM" column.
    for (DType dt : {DType::F32, DType::BF16}) {
      Figure& g = gemm_ref[dt == DType::F32 ? 0 : 1];
      if (g.ratio() > 0) continue;
      Tensor x = random_tensor({3120, 1536}, dt, 1), w = random_tensor({1536, 1536}, dt, 2);
      g = measure(reps, 2.0 * 3120 * 1536 * 1536, dt == DType::F32 ? fp32_peak : amx_peak, [&] { ops::linear(x, w, std::nullopt); });
      std::printf("%-6s %-30s %10.1f %10.1f %7.0f%%\n", dtype_name(dt), "(GEMM 3120x1536x1536)", g.gflops, g.peak,
                  100.0 * g.ratio());
    }
    for (const AttnCase& c : cases) {
      const DType dt = c.dt;
      Tensor q = random_tensor({1, c.Lq, c.H, c.D}, dt, 4), k = random_tensor({1, c.Lk, c.H, c.D}, dt, 5),
             v = random_tensor({1, c.Lk, c.H, c.D}, dt, 6);
      const Figure f = measure(reps, 4.0 * c.Lq * c.Lk * c.D * c.H, dt == DType::F32 ? fp32_peak : amx_peak,
                               [&] { ops::attention(q, k, v); });
      const Figure& g = gemm_ref[dt == DType::F32 ? 0 : 1];
      char what[64];
      std::snprintf(what, sizeof what, c.what, (long)N);
      std::printf("%-6s %-30s %10.1f %10.1f %7.0f%%", dtype_name(dt), what, f.gflops, f.peak, 100.0 * f.ratio());
      if (g.ratio() > 0) std::printf(" %9.0f%%\n", 100.0 * f.ratio() / g.ratio());
      else std::printf(" %10s\n", "(run gemm)");
      std::fflush(stdout);
    }
    std::printf("(flops = 4 Lq Lk d per head; vs GEMM = (attention / peak) / (GEMM M=3120 K=N=1536 / peak), same dtype)\n");
  }
  if (only.empty() || only == "conv") {
    // A Wan-VAE-like causal conv3d at 1/8 of 480x832: 96 -> 96 channels, 3x3x3, 5 latent frames.
    const int64_t C = 96, T = 5, Hh = 60, Ww = 104;
    Tensor x = random_tensor({1, C, T + 2, Hh + 2, Ww + 2}, DType::F32, 7), w = random_tensor({C, C, 3, 3, 3}, DType::F32, 8);
    const Figure f = measure(reps, 2.0 * C * C * 27 * T * Hh * Ww, fp32_peak,
                             [&] { ops::conv3d(x, w, std::nullopt, {1, 1, 1}, {0, 0, 0}); });
    std::printf("\n%-6s %-28s %10s %10s %8s\n", "dtype", "conv3d (im2col + GEMM)", "GFLOP/s", "peak", "ratio");
    std::printf("%-6s %-28s %10.1f %10.1f %7.0f%%\n", "F32", "96->96 k3 5x60x104", f.gflops, f.peak, 100.0 * f.ratio());
  }
  if (only.empty() || only == "elementwise") {
    // The DiT's largest elementwise passes at 7800 tokens (832x480x17, 1.3B), as separate ops:
    // what fusing them into a GEMM's output stage saves per call. ns per element, best of reps.
    const int64_t L = 7800, D = 1536, F = 8960;
    Tensor hidden = random_tensor({1, L, F}, DType::BF16, 9);
    Tensor residual = random_tensor({1, L, D}, DType::F32, 10), y = random_tensor({1, L, D}, DType::BF16, 11);
    Tensor gate = random_tensor({1, 1, D}, DType::F32, 12);
    const auto best_seconds = [&](const std::function<void()>& f) {
      f();
      double best = 1e30;
      for (int r = 0; r < std::max(reps, 1); ++r) {
        const double t0 = now_seconds();
        f();
        best = std::min(best, now_seconds() - t0);
      }
      return best;
    };
    const double g = best_seconds([&] { ops::gelu(hidden, ops::GeluMode::Tanh); });
    const double r = best_seconds([&] { ops::gated_residual(residual, gate, y); });
    std::printf("\n%-44s %10s %12s\n", "elementwise pass (7800 tokens, 1.3B)", "ms/call", "ns/element");
    std::printf("%-44s %10.2f %12.3f\n", "gelu tanh [7800, 8960] bf16 -> bf16", g * 1e3, g * 1e9 / (L * F));
    std::printf("%-44s %10.2f %12.3f\n", "gated_residual [7800, 1536] f32 + f32 * bf16", r * 1e3, r * 1e9 / (L * D));
  }
  std::printf("\nload average at end: %.2f\n", loadavg());
  return 0;
}
