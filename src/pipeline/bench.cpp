// The generic half of `vidax bench` (bench.h): clocks, machine facts, random
// weights of given shapes, the machine's GEMM peak, the text report. Each
// family's own stages live with the family (src/models/<family>/bench.cpp).
#include "pipeline/bench.h"
#include "pipeline/memory_plan.h"

#include <omp.h>
#include <time.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>
#include <vector>

#include "backend/cpu/cpu_tier.h"
#include "backend/ops.h"
#include "core/error.h"

namespace vidax::pipeline {

using nlohmann::json;

// ---- clocks, memory ---------------------------------------------------------------------

double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double cpu_now() {  // every thread of this process
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

namespace {
double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

json stats(const std::vector<Sample>& s) {
  std::vector<double> w, c;
  for (const auto& x : s) w.push_back(x.wall), c.push_back(x.cpu);
  return json{{"count", s.size()},
              {"wall_min", *std::min_element(w.begin(), w.end())},
              {"wall_median", median(w)},
              {"cpu_min", *std::min_element(c.begin(), c.end())},
              {"cpu_median", median(c)}};
}

namespace {


std::string cpu_model_name() {
  std::ifstream in("/proc/cpuinfo");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("model name", 0) == 0) return line.substr(line.find(':') + 2);
  return "unknown";
}

}  // namespace

double gb(double bytes) { return bytes / 1e9; }

double load_average_1min() {
  std::ifstream in("/proc/loadavg");
  double l = -1;
  in >> l;
  return l;
}


int64_t peak_rss_bytes() { return proc_bytes_field("/proc/self/status", "VmHWM"); }

json machine_json() {
  return json{{"cpu", cpu_model_name()},
              {"logical_cpus", omp_get_num_procs()},
              {"mem_total_bytes", mem_total_bytes()},
              {"load_average_1min_start", load_average_1min()},
              {"cpu_tier", cpu::cpu_tier_name(cpu::cpu_tier())},
              {"cpu_features", cpu::cpu_features()},
              {"cpu_tier_report", cpu::cpu_tier_report()}};
}

// ---- random weights of the real shapes ----------------------------------------------------

namespace {

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

}  // namespace

uint64_t splitmix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

namespace {

uint64_t name_hash(const std::string& s) {  // FNV-1a
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

}  // namespace

// Uniform values with the standard deviation that keeps activations O(1) through
// random layers (norm weights 1, biases small, weights 1/sqrt(fan_in), embeddings 1).
// Timing does not depend on the values, only finiteness matters; uniform (not
// normal) because 1.3B values must be drawn in seconds.
Tensor random_param(const std::string& name, const Shape& shape, DType dtype, uint64_t seed, QuantType quant) {
  const int64_t n = shape_numel(shape);
  Tensor t = quant != QuantType::None ? Tensor::empty_quantized(shape, quant) : Tensor::empty(shape, dtype);
  const bool is_norm = ends_with(name, ".gamma") || name.find("norm") != std::string::npos;
  double std = 1.0, offset = 0.0;
  if (is_norm) {
    std = 0.0;
    offset = ends_with(name, ".bias") ? 0.0 : 1.0;
  } else if (ends_with(name, ".bias")) {
    std = 0.02;
  } else if (ends_with(name, "modulation")) {
    std = 1.0 / std::sqrt(static_cast<double>(shape.back()));
  } else if (name.find("pos_embedding") != std::string::npos) {
    std = 0.1;
  } else if (name.find("token_embedding") != std::string::npos) {
    std = 1.0;
  } else if (shape.size() >= 2) {
    std = 1.0 / std::sqrt(static_cast<double>(n / shape[0]));
  }
  const double half_width = std * std::sqrt(3.0);
  const uint64_t base = seed ^ name_hash(name);
  auto value = [&](int64_t i) {
    const uint64_t z = splitmix64(base + static_cast<uint64_t>(i + 1) * 0x9e3779b97f4a7c15ull);
    const double u = (static_cast<double>(z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    return static_cast<float>((2 * u - 1) * half_width + offset);
  };
  if (quant != QuantType::None) {
    // Made in the blocks, never as an f32 copy of the tensor: kRowPool distinct random rows are
    // quantized with ggml's reference quantizer and every row of the tensor is one of them (the
    // K-quant quantizers take ~0.1 us a value: 14B values would take tens of minutes on 2 cores;
    // the timings do not depend on the values).
    constexpr int64_t kRowPool = 64;
    const int64_t row = shape.back(), rows = n / row, pool = std::min(rows, kRowPool);
    const size_t rb = quant_row_bytes(quant, row);
    auto* q = static_cast<uint8_t*>(t.data_ptr());
#pragma omp parallel
    {
      std::vector<float> buf(static_cast<size_t>(row));
#pragma omp for schedule(static)
      for (int64_t r = 0; r < pool; ++r) {
        for (int64_t i = 0; i < row; ++i) buf[static_cast<size_t>(i)] = value(r * row + i);
        quantize_row(quant, buf.data(), q + static_cast<size_t>(r) * rb, row);
      }
    }
#pragma omp parallel for schedule(static)
    for (int64_t r = pool; r < rows; ++r) {
      const int64_t from = static_cast<int64_t>(splitmix64(base + static_cast<uint64_t>(r)) % static_cast<uint64_t>(pool));
      std::memcpy(q + static_cast<size_t>(r) * rb, q + static_cast<size_t>(from) * rb, rb);
    }
  } else if (dtype == DType::F32) {
    float* p = t.data<float>();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) p[i] = value(i);
  } else {
    VIDAX_CHECK(dtype == DType::BF16, "bench: random weights in " << dtype_name(dtype) << " are not supported");
    uint16_t* p = t.data<uint16_t>();
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) p[i] = f32_to_bf16(value(i));
  }
  return t;
}

Tensor random_input(const Shape& shape, uint64_t seed) {
  // Unit-variance uniform values (the DiT's latent is N(0,1) noise; any O(1) values time the same).
  Tensor t = Tensor::empty(shape, DType::F32);
  float* p = t.data<float>();
  const int64_t n = shape_numel(shape);
  for (int64_t i = 0; i < n; ++i) {
    const uint64_t z = splitmix64(seed + static_cast<uint64_t>(i + 1) * 0x9e3779b97f4a7c15ull);
    const double u = (static_cast<double>(z >> 11) + 0.5) * (1.0 / 9007199254740992.0);
    p[i] = static_cast<float>((2 * u - 1) * std::sqrt(3.0));
  }
  return t;
}

// ---- the machine's GEMM peak --------------------------------------------------------------

// y = x W^T at a DiT FFN-like shape (M 1024, K 1536, N 8960) through ops::linear (the default
// dispatch: in bf16 our AMX kernel, in fp32 oneDNN), in the DiT's precision, best of `reps`
// after a warm-up (which packs the weight).
// Returns FLOPs per CPU second and per wall second.
GemmPeak measure_gemm_peak(DType dtype, int reps) {
  GemmPeak g;
  const Tensor x = random_param("peak.x", {g.m, g.k}, dtype, 1);
  const Tensor w = random_param("peak.w", {g.n, g.k}, dtype, 2);
  const double flops = 2.0 * static_cast<double>(g.m * g.k * g.n);
  (void)ops::linear(x, w);
  for (int r = 0; r < reps; ++r) {
    const Sample s = timed([&] { (void)ops::linear(x, w); });
    g.flops_per_cpu_second = std::max(g.flops_per_cpu_second, flops / s.cpu);
    g.flops_per_wall_second = std::max(g.flops_per_wall_second, flops / s.wall);
  }
  return g;
}

void check_fits(const std::string& what, double needed, double available) {
  VIDAX_CHECK(needed < available,
              "bench: " << what << " needs about " << gb(needed) << " GB (weights, their packed GEMM copy and "
                        << "activations) but " << gb(available)
                        << " GB are available with every weight resident: stream the DiT's weights (--offload), "
                           "or use a machine with more memory or a smaller model");
}

bool reset_peak_rss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

// ---- text summary -----------------------------------------------------------------------

std::string bench_report_text(const json& r) {
  std::ostringstream o;
  o.precision(4);
  o << r["model"].get<std::string>() << " " << r["precision"].get<std::string>() << ", " << r["width"] << "x"
    << r["height"] << "x" << r["frames"] << " (" << r["tokens"] << " tokens), " << r["threads"] << " threads\n";
  if (r.contains("text_encoder"))
    o << "  text encoder     " << r["text_encoder"]["wall_median"].get<double>() << " s wall, "
      << r["text_encoder"]["cpu_median"].get<double>() << " s CPU (median)\n";
  if (r.contains("dit_step")) {
    o << "  DiT step         " << r["step_seconds_median"].get<double>() << " s wall median ("
      << r["step_seconds_min"].get<double>() << " min), " << r["step_cpu_seconds_median"].get<double>()
      << " s CPU median; idle-machine estimate " << r["step_seconds_idle_estimate"].get<double>() << " s\n";
    o << "  step FLOPs       " << r["step_flops"].get<double>() / 1e12 << " TFLOP; "
      << r["achieved_flops_per_cpu_second"].get<double>() / 1e9 << " GFLOP per CPU second\n";
    o << "  GEMM peak        " << r["gemm_peak"]["flops_per_cpu_second"].get<double>() / 1e9
      << " GFLOP per CPU second (" << r["gemm_peak"]["dtype"].get<std::string>() << ")\n";
    if (r.contains("machine_peak_flops_per_second"))
      o << "  machine peak     " << r["machine_peak_flops_per_cpu_second"].get<double>() / 1e9
        << " GFLOP per CPU second, " << r["machine_peak_flops_per_second"].get<double>() / 1e9 << " GFLOP/s on "
        << r["threads"] << " threads (" << r["machine_peak_method"].get<std::string>() << ")\n";
    o << "  MFU              " << 100 * r["mfu"].get<double>() << " % of the machine peak (CPU time), "
      << 100 * r["mfu_wall"].get<double>() << " % (wall)";
    if (r.contains("step_vs_gemm")) o << "; step at " << 100 * r["step_vs_gemm"].get<double>() << " % of the GEMM rate";
    o << "\n";
  }
  if (r.contains("pjrt")) {
    const json& p = r["pjrt"];
    o << "  PJRT             " << p["session"]["platform"].get<std::string>() << " plugin, "
      << (p["cache_hit"].get<bool>() ? "compile cache hit " : "compile ") << p["compile_seconds"].get<double>()
      << " s (first step " << p["first_step_seconds"].get<double>() << " s)";
    if (p.contains("step_seconds_median"))
      o << "; step " << p["step_seconds_median"].get<double>() << " s wall median ("
        << p["step_seconds_min"].get<double>() << " min)";
    if (p.contains("vs_cpu_step_ratio")) o << "; " << p["vs_cpu_step_ratio"].get<double>() << "x the CPU backend's step";
    if (p.contains("vs_cpu_output_rel_l2")) o << "; output vs CPU rel_l2 " << p["vs_cpu_output_rel_l2"].get<double>();
    o << "\n";
  }
  if (r.contains("dit_profile")) o << "  profile          " << r["dit_profile"]["summary"].dump() << "\n";
  if (r.contains("vae_decode"))
    o << "  VAE decode       " << r["vae_seconds"].get<double>() << " s wall median, "
      << r["vae_cpu_seconds"].get<double>() << " s CPU median\n";
  o << "  peak RSS         " << r["peak_rss_bytes"].get<double>() / 1e9 << " GB\n";
  o << "  load average     " << r["machine"]["load_average_1min_start"] << " -> "
    << r["machine"]["load_average_1min_end"] << "\n";
  return o.str();
}

}  // namespace vidax::pipeline
