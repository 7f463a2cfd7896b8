// `vidax bench`: times the Wan 2.1 text-to-video stages with random weights of
// the real shapes (no checkpoint needed) and relates them to this machine.
//
//   text encoder (UMT5, optional)  one forward on a 512-token batch
//   DiT context                    encode_context (text embedding + every block's cross-attn K/V), once
//   DiT step                       one forward (CFG off), timed `steps x repeats` times
//   VAE decode (optional)          one decode of the latent of the requested video
//
// Every stage is timed on the wall clock AND on this process's CPU time. The
// machine this was written on is shared by many builds: wall time then measures
// the scheduler, while CPU time counts only the time our threads ran (it does
// include OpenMP spin-waits). Model FLOPs utilisation (MFU) is therefore taken
// on CPU time: (step FLOPs / step CPU seconds) / (GEMM FLOPs per CPU second),
// where the GEMM peak is measured in the same process just before the steps
// with ops::linear (oneDNN) at a DiT-like shape and the same precision.
// "mfu_wall" is the same on the wall clock (meaningful on an idle machine only).
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor.h"
#include "models/wan/dit_config.h"

namespace vidax::pipeline {

struct BenchOptions {
  std::string model = "wan2.1-t2v-1.3b";  // a preset name (wan_presets.h)
  int64_t frames = 9, height = 256, width = 256;
  int steps = 1;                 // DiT forwards per repeat (0: no DiT)
  int repeats = 1;
  std::string precision = "bf16";  // DiT precision: fp32 | bf16
  bool vae = false;              // time a VAE decode of the video's latent (fp32, as the reference)
  bool text_encoder = false;     // time UMT5 (bf16 weights, as published) on one prompt
  int64_t prompt_tokens = 64;    // real tokens in the text encoder's 512-row batch / DiT context rows
  uint64_t seed = 0;
  bool profile = false;          // per-op-class breakdown of one extra DiT step (and VAE decode)
  double memory_limit_bytes = 0; // 0: MemAvailable of /proc/meminfo
  std::string mesh;              // "" = one rank; e.g. "tp=2" under mpirun: the DiT is sharded
};

// Multiply-add FLOPs (2 per MAC) of one DiT forward at `tokens` patch tokens,
// CFG off, batch 1: every linear and both attentions; the cross-attention K/V
// (computed once per prompt by encode_context) are not part of a step.
double dit_step_flops(const wan::DiTConfig& cfg, int64_t tokens);
// The same split into named parts (linear, self_attention, cross_attention).
nlohmann::json dit_step_flops_parts(const wan::DiTConfig& cfg, int64_t tokens);

// Bytes of the DiT weights of `cfg` stored in `dtype`.
double dit_weight_bytes(const wan::DiTConfig& cfg, DType dtype);

// Peak resident set of this process (VmHWM of /proc/self/status), bytes.
int64_t peak_rss_bytes();
// MemAvailable of /proc/meminfo, bytes.
int64_t mem_available_bytes();

// Runs the benchmark; `log` gets progress lines (stderr in the CLI). Returns the
// JSON report (fields documented in docs/benchmarks.md). Throws vidax::Error
// when the model would not fit in memory (it does not stream weights).
nlohmann::json run_bench(const BenchOptions& opt, const std::function<void(const std::string&)>& log);

// Human-readable summary of run_bench's report.
std::string bench_report_text(const nlohmann::json& report);

}  // namespace vidax::pipeline
