// Synthetic parameters that a golden file describes instead of storing
// (a real-width block is ~70M parameters; the file keeps a seed and a bound
// per tensor). The stream is defined bit-exactly so that the Python generator
// (tools/golden/wan_dit.py, synthetic_uniform) and this one agree:
//   state = seed XOR fnv1a64(name); z_i = splitmix64(state + (i+1) * 0x9E3779B97F4A7C15)
//   u_i = ((z_i >> 40) + 0.5) * 2^-24                (exact, in (0, 1))
//   v_i = float32((u_i * 2 - 1) * bound) + offset    (double math, one rounding, then f32 add)
#pragma once
#include <cstdint>
#include <map>
#include <string>

#include "core/tensor.h"

namespace vidax::nn {

uint64_t fnv1a64(const std::string& s);
// F32 CPU tensor of `shape` from the stream above. Generator name: "splitmix64_uniform_v1".
Tensor synthetic_uniform(uint64_t seed, const std::string& name, const Shape& shape, double bound,
                         double offset = 0.0);

// The tensors a golden file's __metadata__.synthetic_params describes (JSON text:
// {"generator": "splitmix64_uniform_v1", "seed": S, "tensors": {name: {"shape", "bound", "offset"}}}).
// Throws naming `origin` on bad JSON or another generator.
std::map<std::string, Tensor> synthetic_from_description(const std::string& json_text, const std::string& origin);

}  // namespace vidax::nn
