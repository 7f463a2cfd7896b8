// `vidax bench` for the Wan family (pipeline/bench.h has what is measured):
//   text encoder (UMT5, optional)  one forward on a 512-token batch
//   DiT context                    encode_context (text embedding + every block's cross-attn K/V), once
//   DiT step                       one forward (CFG off), timed `steps x repeats` times
//   VAE decode (optional)          one decode of the latent of the requested video
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor.h"
#include "models/wan/dit_config.h"
#include "pipeline/bench.h"

namespace vidax::wan {

// Multiply-add FLOPs (2 per MAC) of one DiT forward at `tokens` patch tokens,
// CFG off, batch 1: every linear and both attentions; the cross-attention K/V
// (computed once per prompt by encode_context) are not part of a step.
double dit_step_flops(const DiTConfig& cfg, int64_t tokens);
// The same split into named parts (linear, self_attention, cross_attention).
nlohmann::json dit_step_flops_parts(const DiTConfig& cfg, int64_t tokens);

// The DiT's largest live activations at `tokens`: the FFN hidden state in fp32 and a few
// [tokens, dim] fp32 tensors, with a 2x margin (the estimate bench and the memory plan use).
double dit_activation_bytes(const DiTConfig& cfg, int64_t tokens);

// Bytes of the DiT weights of `cfg` stored in `dtype`.
double dit_weight_bytes(const DiTConfig& cfg, DType dtype);

// Runs the benchmark; `log` gets progress lines. Returns the JSON report (fields in
// docs/benchmarks.md). Throws vidax::Error when the model would not fit in memory.
nlohmann::json run_bench(const pipeline::BenchOptions& opt, const std::function<void(const std::string&)>& log);

}  // namespace vidax::wan
