// `vidax bench`: times a family's stages with random weights of the real
// shapes (no checkpoint needed) and relates them to this machine. This header
// has the options, the report's text form and the helpers every family's bench
// uses; the stages themselves live with the family (models/<family>/bench.cpp,
// e.g. Wan: text encoder, DiT context, DiT steps, VAE decode).
//
// Every stage is timed on the wall clock AND on this process's CPU time. The
// machine this was written on is shared by many builds: wall time then measures
// the scheduler, while CPU time counts only the time our threads ran (it does
// include OpenMP spin-waits). Model FLOPs utilisation (MFU) is therefore taken
// on CPU time: (step FLOPs / step CPU seconds) / (GEMM FLOPs per CPU second),
// where the GEMM peak is measured in the same process just before the steps
// with ops::linear at a DiT-like shape and the same precision.
// "mfu_wall" is the same on the wall clock (meaningful on an idle machine only).
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/quant_policy.h"
#include "pipeline/parts.h"
#include "translate/translate.h"

namespace vidax::pipeline {

struct BenchOptions {
  std::string model;  // a variant name (`vidax models`); the CLI defaults it
  int64_t frames = 9, height = 256, width = 256;
  int steps = 1;                 // denoiser forwards per repeat (0: none)
  int repeats = 1;
  std::string precision = "bf16";  // denoiser precision: fp32 | bf16
  bool vae = false;              // time a VAE decode of the video's latent (--time-vae: random weights)
  bool text_encoder = false;     // time the text encoder on one prompt (--time-text-encoder: random weights)
  // Real weights as single files (--diffusion-model, --vae, --text-encoder): the stage runs on
  // them (and is timed) instead of random weights.
  std::string diffusion_model_file, vae_file, text_encoder_file;
  bool offload = false;          // stream the DiT's blocks (random weights: from a scratch file)
  bool prefetch = true;          // --offload: overlap the next block's page-in with this one's compute
  std::string scratch_dir;       // --offload with random weights: where the weights file is written (and reused)
  int64_t vae_tile = 0;          // --vae-tile: tiled VAE decode
  std::string max_memory;        // --max-memory as given (memory_limit_bytes holds its value)
  int64_t prompt_tokens = 64;    // real tokens in the text encoder's batch / the context rows
  uint64_t seed = 0;
  bool profile = false;          // per-op-class breakdown of one extra step (and VAE decode)
  double memory_limit_bytes = 0; // 0: MemAvailable of /proc/meminfo
  std::string mesh;              // "" = one rank; e.g. "tp=2" under mpirun: the denoiser is sharded
  // --weights-dtype: "" = drawn in fp32 and cast to the precision (the default); a GGUF block
  // type (q8_0, q4_k, ...): the denoiser's matrices are made in it (io::quant_decision picks
  // which, as `vidax convert` does) and computed on without widening.
  std::string weights_dtype;
  // --device pjrt (docs/pjrt.md): the DiT steps are also timed through the PJRT plugin at
  // pjrt_plugin (compile time apart), and their ratio to the CPU backend's steps of the same run
  // is reported; cpu_baseline false skips the CPU steps (a size the CPU cannot run in time).
  std::string device = "cpu";
  std::string pjrt_plugin;
  bool cpu_baseline = true;
  bool pjrt_highest = true;      // dot precision HIGHEST (validation); false: the plugin's DEFAULT
  int64_t pjrt_attention_block = 0;  // keys per block of the lowered attention (0: ~256 MiB of scores)
  // --cfg: a step is two DiT forwards (the prompt and the negative prompt), as generate with guidance != 1.
  bool cfg = false;
  // --lora FILE[:SCALE] (repeatable): the DiT steps are timed again with these LoRAs kept at run
  // time (--lora-mode runtime), and the per-step overhead reported (`lora` in the report).
  std::vector<std::string> loras;
};

// ---- clocks and machine facts ----
double wall_now();
double cpu_now();  // every thread of this process
struct Sample {
  double wall = 0, cpu = 0;
};
template <class F>
Sample timed(F&& f) {
  const double w0 = wall_now(), c0 = cpu_now();
  f();
  return {wall_now() - w0, cpu_now() - c0};
}
nlohmann::json stats(const std::vector<Sample>& s);  // count, wall/cpu min and median
// Peak resident set of this process (VmHWM of /proc/self/status), bytes.
int64_t peak_rss_bytes();
double load_average_1min();
// cpu, logical_cpus, mem_total_bytes, load_average_1min_start.
nlohmann::json machine_json();
double gb(double bytes);

// ---- random weights of given shapes ----
uint64_t splitmix64(uint64_t z);
// Uniform values with a standard deviation that keeps activations O(1) through random
// layers (norm weights 1, biases small, weights 1/sqrt(fan_in)); F32 or BF16, or made directly
// in a GGUF block type (quant: 64 rows of those values quantized, every row one of them; never
// an f32 copy of the tensor).
Tensor random_param(const std::string& name, const Shape& shape, DType dtype, uint64_t seed,
                    QuantType quant = QuantType::None);
Tensor random_input(const Shape& shape, uint64_t seed);  // unit-variance uniform, F32

// ---- the machine's GEMM peak ----
struct GemmPeak {
  double flops_per_cpu_second = 0, flops_per_wall_second = 0;
  int64_t m = 1024, k = 1536, n = 8960;
};
// y = x W^T at a DiT FFN-like shape through ops::linear, best of `reps` after a warm-up.
GemmPeak measure_gemm_peak(DType dtype, int reps);

// Throws naming what does not fit; `remedy` is what the message suggests (default: --offload).
void check_fits(const std::string& what, double needed, double available, const std::string& remedy = "");
// Resets this process's peak resident set (VmHWM) to the current one (/proc/self/clear_refs),
// so that a stage's own peak can be read after it; false where the kernel does not allow it.
bool reset_peak_rss();

// ---- the pieces every family's bench shares ----
using BenchLog = std::function<void(const std::string&)>;

// Refuses, naming the option, what a family's bench does not run: --offload, --mesh, --device
// other than cpu, --lora and weight files (`family`: how the message names it, e.g. "LTX-2").
void refuse_unsupported_options(const BenchOptions& opt, const std::string& family);

// The latent grid of the requested video: --frames 1 + k * vae_stride_t, --height / --width
// multiples of the geometry's (VAE stride x patch); throws naming the value and what is valid.
struct BenchGrid {
  int64_t lat_f = 0, lat_h = 0, lat_w = 0;
  int64_t tokens = 0;  // the DiT's patch tokens of the video
};
BenchGrid bench_grid(const BenchOptions& opt, const Geometry& g);

// The DiT's random weights (--weights-dtype): "" = drawn in fp32 (the model casts what it runs
// in the compute dtype); a GGUF block type or a scaled type: the matrices io::QuantTarget picks
// are made in it (as `vidax convert` would store them) and computed on without widening.
struct RandomWeights {
  io::QuantTarget target;
  std::string type_name;  // the --weights-dtype value, "" for float weights
  uint64_t seed = 0;
  // Throws "--weights-dtype: ..." naming the valid types on an unknown one.
  static RandomWeights parse(const std::string& weights_dtype, uint64_t seed);
  bool narrow() const { return !target.none(); }
  Tensor draw(const std::string& name, const Shape& shape) const;
  // Resident bytes of these parameters: float matrices in `compute` twice (the weight and its packed
  // GEMM copy), fp32 for the rest; narrow matrices as their blocks (no packed copy), and the matrices
  // a narrow type keeps wide (modulations, embeddings, heads: run in fp32) as fp32 twice.
  double resident_bytes(const std::vector<std::pair<std::string, Shape>>& params, DType compute) const;
  std::string label() const;  // what the report's weights_dtype says
};

// A part's parameters as (name, shape) (resident_bytes, the memory checks).
std::vector<std::pair<std::string, Shape>> param_shapes(const translate::ParamSpec& spec);
// Bytes of every parameter of `spec` stored in `dtype`.
double param_bytes(const translate::ParamSpec& spec, DType dtype);
// A weight lookup by name over `spec`'s shapes, random_param values in `dtype` (a text encoder's or
// a VAE's random weights); an unknown name throws naming it.
std::function<Tensor(const std::string&)> random_lookup(const translate::ParamSpec& spec, DType dtype, uint64_t seed);

// The DiT steps as a family hands them to the timer: warm_up packs every weight (a one-token
// latent), step(t) runs one denoising step at timestep t (every forward of it, e.g. the CFG pair)
// and returns its output (checked finite).
struct DitSteps {
  std::function<void()> warm_up;
  std::function<Tensor(double t)> step;
};
// Times opt.repeats x opt.steps steps at t from 999 down after the warm-up, the GEMM peak measured
// before and after them. FLOPs are counted by the backend during the first step (every GEMM and
// attention as executed: pipeline/bench_profile.h); the fields report_dit_steps writes go into r.
void time_dit_steps(const BenchOptions& opt, DType compute, const DitSteps& dit, nlohmann::json& r,
                    const BenchLog& log);
// The report of timed steps (Wan's and every family's): dit_step, step_seconds_*, step_flops,
// gemm_peak, machine peak, mfu (CPU time), mfu_wall, step_vs_gemm.
void report_dit_steps(const std::vector<Sample>& steps, double flops, DType compute, const GemmPeak& before,
                      const GemmPeak& after, nlohmann::json& r, const BenchLog& log);

// Times opt.repeats decodes (decode returns the video, `check` throws on a wrong shape), the
// decode's own peak resident set (the process's peak reset first where the kernel allows it), and
// with opt.profile one profiled decode: vae_decode, vae_seconds, vae_cpu_seconds, ... into r.
void time_vae_decode(const BenchOptions& opt, const std::function<Tensor()>& decode,
                     const std::function<void(const Tensor&)>& check, nlohmann::json& r, const BenchLog& log);

// The header fields of every report (model, precision, frames, height, width, threads, machine,
// cpu_tier, cpu_features, omp_wait_policy), the wait-policy note logged.
nlohmann::json bench_report_header(const BenchOptions& opt, const std::string& precision, const BenchLog& log);

// Human-readable summary of a bench report.
std::string bench_report_text(const nlohmann::json& report);

}  // namespace vidax::pipeline
