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

// Throws naming what does not fit (every weight resident: suggests --offload).
void check_fits(const std::string& what, double needed, double available);
// Resets this process's peak resident set (VmHWM) to the current one (/proc/self/clear_refs),
// so that a stage's own peak can be read after it; false where the kernel does not allow it.
bool reset_peak_rss();

// Human-readable summary of a bench report.
std::string bench_report_text(const nlohmann::json& report);

}  // namespace vidax::pipeline
