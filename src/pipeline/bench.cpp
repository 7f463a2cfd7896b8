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
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <vector>

#include "backend/cpu/cpu_tier.h"
#include "backend/cpu/peak.h"
#include "pipeline/bench_profile.h"
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

void check_fits(const std::string& what, double needed, double available, const std::string& remedy) {
  VIDAX_CHECK(needed < available,
              "bench: " << what << " needs about " << gb(needed) << " GB (weights, their packed GEMM copy and "
                        << "activations) but " << gb(available) << " GB are available with every weight resident: "
                        << (remedy.empty() ? "stream the DiT's weights (--offload), or use a machine with more "
                                             "memory or a smaller model"
                                           : remedy));
}

bool reset_peak_rss() {
  std::FILE* f = std::fopen("/proc/self/clear_refs", "w");
  if (!f) return false;
  const bool ok = std::fputs("5", f) >= 0;
  return std::fclose(f) == 0 && ok;
}

// ---- the pieces every family's bench shares ------------------------------------------------

void refuse_unsupported_options(const BenchOptions& opt, const std::string& family) {
  const std::string f = "bench: " + family + ": ";
  VIDAX_CHECK(!opt.offload, f << "--offload: its DiT is not streamed yet (use --weights-dtype q8_0 or q4_k to fit a "
                                 "large model)");
  VIDAX_CHECK(opt.mesh.empty(), f << "--mesh " << opt.mesh << ": its DiT runs on one rank");
  VIDAX_CHECK(opt.device == "cpu", f << "--device " << opt.device << ": the CPU backend only (--device cpu)");
  VIDAX_CHECK(opt.loras.empty(), f << "--lora: runtime LoRAs are not benchmarked for this family");
  VIDAX_CHECK(opt.diffusion_model_file.empty() && opt.vae_file.empty() && opt.text_encoder_file.empty(),
              f << "--diffusion-model / --vae FILE / --text-encoder FILE: random weights only (give --vae and "
                   "--text-encoder without a file)");
}

BenchGrid bench_grid(const BenchOptions& opt, const Geometry& g) {
  VIDAX_CHECK(opt.steps >= 0 && opt.repeats >= 1,
              "bench: --steps must be >= 0 and --repeats >= 1, got " << opt.steps << " and " << opt.repeats);
  VIDAX_CHECK(opt.frames >= 1 && (opt.frames - 1) % g.frame_multiple() == 0,
              "bench: --frames must be 1 + " << g.frame_multiple() << "k for " << g.vae_label << ", got " << opt.frames);
  VIDAX_CHECK(opt.height > 0 && opt.width > 0 && opt.height % g.height_multiple() == 0 &&
                  opt.width % g.width_multiple() == 0,
              "bench: --height and --width must be positive multiples of "
                  << g.height_multiple() << " and " << g.width_multiple() << " (" << g.vae_label << "'s stride x the "
                  << "patch), got " << opt.height << "x" << opt.width);
  VIDAX_CHECK(opt.prompt_tokens >= 1, "bench: prompt tokens " << opt.prompt_tokens << " must be >= 1");
  BenchGrid b;
  b.lat_f = (opt.frames - 1) / g.vae_stride_t + 1;
  b.lat_h = opt.height / g.vae_stride_s;
  b.lat_w = opt.width / g.vae_stride_s;
  VIDAX_CHECK(b.lat_f % g.patch_t == 0, "bench: " << b.lat_f << " latent frames are not a multiple of the patch's "
                                                  << g.patch_t);
  b.tokens = (b.lat_f / g.patch_t) * (b.lat_h / g.patch_h) * (b.lat_w / g.patch_w);
  return b;
}

RandomWeights RandomWeights::parse(const std::string& weights_dtype, uint64_t seed) {
  RandomWeights w;
  try {
    w.target = io::QuantTarget::parse(weights_dtype);  // a GGUF block type, fp8, fp8_e5m2 or int8
  } catch (const Error& e) {
    throw Error(msg() << "--weights-dtype: " << e.what());
  }
  w.type_name = weights_dtype;
  w.seed = seed;
  return w;
}

Tensor RandomWeights::draw(const std::string& name, const Shape& shape) const {
  const bool q = narrow() && target.decision(name, shape, DType::F32).quantize;
  if (q && target.is_scaled())  // drawn in fp32 one matrix at a time, then quantized
    return Tensor::quantize_scaled(random_param(name, shape, DType::F32, seed, QuantType::None), target.scaled);
  return random_param(name, shape, DType::F32, seed, q ? target.block : QuantType::None);
}

double RandomWeights::resident_bytes(const std::vector<std::pair<std::string, Shape>>& params, DType compute) const {
  double bytes = 0;
  for (const auto& [name, shape] : params) {
    const double n = static_cast<double>(shape_numel(shape));
    const bool matrix = shape.size() == 2;
    if (narrow() && target.decision(name, shape, DType::F32).quantize)
      bytes += target.is_scaled() ? n : n * quant_traits(target.block).block_bytes / quant_traits(target.block).block;
    else if (matrix && narrow())  // kept wide (modulations, embeddings, heads): run in fp32, packed
      bytes += 2.0 * 4.0 * n;
    else if (matrix)
      bytes += 2.0 * n * static_cast<double>(dtype_size(compute));  // the weight and its packed copy
    else
      bytes += 4.0 * n;
  }
  return bytes;
}

std::string RandomWeights::label() const { return narrow() ? type_name : "fp32 drawn, cast to the precision"; }

std::vector<std::pair<std::string, Shape>> param_shapes(const translate::ParamSpec& spec) {
  std::vector<std::pair<std::string, Shape>> out;
  for (const auto& p : spec.params) out.emplace_back(p.name, p.shape);
  return out;
}

double param_bytes(const translate::ParamSpec& spec, DType dtype) {
  return static_cast<double>(spec.parameter_count()) * static_cast<double>(dtype_size(dtype));
}

std::function<Tensor(const std::string&)> random_lookup(const translate::ParamSpec& spec, DType dtype, uint64_t seed) {
  auto shapes = std::make_shared<std::map<std::string, Shape>>();
  for (const auto& p : spec.params) (*shapes)[p.name] = p.shape;
  return [shapes, dtype, seed](const std::string& name) {
    auto it = shapes->find(name);
    VIDAX_CHECK(it != shapes->end(), "bench: no shape for the parameter " << name);
    return random_param(name, it->second, dtype, seed);
  };
}

json bench_report_header(const BenchOptions& opt, const std::string& precision, const BenchLog& log) {
  json r;
  r["model"] = opt.model;
  r["precision"] = precision;
  r["frames"] = opt.frames;
  r["height"] = opt.height;
  r["width"] = opt.width;
  r["threads"] = omp_get_max_threads();
  r["weights"] = "random (real shapes)";
  r["machine"] = machine_json();
  r["cpu_tier"] = r["machine"]["cpu_tier"];
  r["cpu_features"] = r["machine"]["cpu_features"];
  log(r["machine"]["cpu_tier_report"].get<std::string>());
  // CPU time is only the work done when idle OpenMP threads sleep (bench.h).
  const char* wait_policy = std::getenv("OMP_WAIT_POLICY");
  r["omp_wait_policy"] = wait_policy ? wait_policy : "";
  if (omp_get_max_threads() > 1 && !(wait_policy && std::string(wait_policy) == "passive"))
    log("note: OMP_WAIT_POLICY is not 'passive': CPU times include OpenMP spin-waits (inflated on a loaded machine)");
  return r;
}

void report_dit_steps(const std::vector<Sample>& steps, double flops, DType compute, const GemmPeak& before,
                      const GemmPeak& after, json& r, const BenchLog& log) {
  GemmPeak peak = before;
  peak.flops_per_cpu_second = std::max(before.flops_per_cpu_second, after.flops_per_cpu_second);
  peak.flops_per_wall_second = std::max(before.flops_per_wall_second, after.flops_per_wall_second);
  r["gemm_peak"] = {{"dtype", dtype_name(compute)},
                    {"shape_mkn", {peak.m, peak.k, peak.n}},
                    {"flops_per_cpu_second", peak.flops_per_cpu_second},
                    {"flops_per_wall_second", peak.flops_per_wall_second},
                    {"flops_per_cpu_second_before_steps", before.flops_per_cpu_second},
                    {"flops_per_cpu_second_after_steps", after.flops_per_cpu_second},
                    {"note", "ops::linear (default dispatch), best of 5 before and 5 after the steps, same threads"}};
  log("GEMM peak after the steps: " + std::to_string(after.flops_per_cpu_second / 1e9) + " GFLOP per CPU second");

  const json st = stats(steps);
  const int threads = omp_get_max_threads();
  r["dit_step"] = st;
  r["step_seconds_median"] = st["wall_median"];
  r["step_seconds_min"] = st["wall_min"];
  r["step_cpu_seconds_median"] = st["cpu_median"];
  r["step_cpu_seconds_min"] = st["cpu_min"];
  // What the wall time would be if every thread ran all the time (an idle machine).
  r["step_seconds_idle_estimate"] = st["cpu_min"].get<double>() / threads;
  r["step_flops"] = flops;
  const double achieved_cpu = flops / st["cpu_min"].get<double>();  // FLOPs per CPU second
  r["achieved_flops_per_cpu_second"] = achieved_cpu;
  r["achieved_flops_per_second_wall"] = flops / st["wall_min"].get<double>();
  // MFU against the machine's arithmetic peak for the compute dtype (register-only micro-kernel,
  // backend/cpu/peak.h), per CPU second as the achieved rate; the step's share of the engine's own
  // GEMM rate is its own field.
  const cpu::MachinePeak mp = cpu::measure_machine_peak(compute, threads);
  r["machine_peak_flops_per_second"] = mp.flops_per_second;
  r["machine_peak_flops_per_cpu_second"] = mp.flops_per_cpu_second;
  r["machine_peak_method"] = mp.method;
  r["gemm_fraction_of_machine_peak"] = peak.flops_per_cpu_second / mp.flops_per_cpu_second;
  if (peak.flops_per_cpu_second > 1.05 * mp.flops_per_cpu_second)
    r["machine_peak_warning"] = "the GEMM ran faster than the measured machine peak: the peak measurement is wrong";
  r["mfu"] = achieved_cpu / mp.flops_per_cpu_second;
  r["mfu_wall"] = flops / st["wall_min"].get<double>() / mp.flops_per_second;
  r["step_vs_gemm"] = achieved_cpu / peak.flops_per_cpu_second;
  log("machine peak (" + mp.method + "): " + std::to_string(mp.flops_per_cpu_second / 1e9) +
      " GFLOP per CPU second; GEMM at " + std::to_string(100 * peak.flops_per_cpu_second / mp.flops_per_cpu_second) +
      " % of it");
}

void time_dit_steps(const BenchOptions& opt, DType compute, const DitSteps& dit, json& r, const BenchLog& log) {
  const Sample warm = timed([&] { dit.warm_up(); });
  r["dit_warmup_seconds"] = warm.wall;
  log("DiT: warm-up (weight packing) " + std::to_string(warm.wall) + " s");
  // The peak before and after the steps, the higher kept (a shared host's GEMM rate drifts).
  const GemmPeak before = measure_gemm_peak(compute, 5);
  log("GEMM peak before the steps (" + std::string(dtype_name(compute)) + "): " +
      std::to_string(before.flops_per_cpu_second / 1e9) + " GFLOP per CPU second");
  std::vector<Sample> steps;
  OpProfile counted;  // the first step's ops: its FLOPs as executed
  for (int rep = 0; rep < opt.repeats; ++rep)
    for (int s = 0; s < opt.steps; ++s) {
      const double t = 999.0 * (1.0 - static_cast<double>(s) / std::max(1, opt.steps));
      Tensor y;
      if (steps.empty()) {
        steps.push_back(timed([&] {
          const ScopedOpProfiler scope(counted);
          y = dit.step(t);
        }));
      } else {
        steps.push_back(timed([&] { y = dit.step(t); }));
      }
      VIDAX_CHECK(ops::all_finite(y), "bench: the DiT output is not finite (random weights out of range?)");
      log("DiT step " + std::to_string(steps.size()) + ": " + std::to_string(steps.back().wall) + " s wall, " +
          std::to_string(steps.back().cpu) + " s CPU, load " + std::to_string(load_average_1min()));
    }
  const GemmPeak after = measure_gemm_peak(compute, 5);
  const double flops = counted.total_flops();
  VIDAX_CHECK(flops > 0, "bench: the DiT step ran no counted GEMM");
  report_dit_steps(steps, flops, compute, before, after, r, log);
  json parts = json::object();
  for (const auto& [name, t] : counted.ops)
    if (t.flops > 0) parts[OpProfile::op_class(name)] = parts.value(OpProfile::op_class(name), 0.0) + t.flops;
  r["step_flops_parts"] = parts;
  r["step_flops_method"] = "counted by the backend during the first step (GEMMs and attention as executed)";
  if (opt.profile) {
    log("DiT: profiled step");
    OpProfile prof;
    {
      const ScopedOpProfiler scope(prof);
      (void)dit.step(500.0);
    }
    r["dit_profile"] = prof.to_json();
  }
}

void time_vae_decode(const BenchOptions& opt, const std::function<Tensor()>& decode,
                     const std::function<void(const Tensor&)>& check, json& r, const BenchLog& log) {
  const int64_t rss_before = peak_rss_bytes();
  // The decode's own peak: the process's peak reset to the current resident set first (where the
  // kernel allows it), read after the decodes.
  const bool peak_reset = reset_peak_rss();
  const double rss_at_start = proc_bytes_field("/proc/self/status", "VmRSS");
  std::vector<Sample> s;
  for (int rep = 0; rep < opt.repeats; ++rep) {
    Tensor video;
    s.push_back(timed([&] { video = decode(); }));
    check(video);
    VIDAX_CHECK(ops::all_finite(video), "bench: the VAE decode's output is not finite");
    log("VAE decode: " + std::to_string(s.back().wall) + " s wall, " + std::to_string(s.back().cpu) + " s CPU");
  }
  r["vae_decode"] = stats(s);
  r["vae_seconds"] = r["vae_decode"]["wall_median"];
  r["vae_cpu_seconds"] = r["vae_decode"]["cpu_median"];
  r["vae_seconds_idle_estimate"] = r["vae_decode"]["cpu_min"].get<double>() / omp_get_max_threads();
  r["vae_peak_rss_before_bytes"] = rss_before;
  if (peak_reset) {
    r["vae_decode_peak_rss_bytes"] = peak_rss_bytes();  // the process's peak during the decodes
    r["vae_decode_peak_rss_above_start_bytes"] = std::max(0.0, static_cast<double>(peak_rss_bytes()) - rss_at_start);
  }
  if (opt.profile) {
    log("VAE: profiled decode");
    OpProfile prof;
    {
      const ScopedOpProfiler scope(prof);
      (void)decode();
    }
    r["vae_profile"] = prof.to_json();
  }
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
