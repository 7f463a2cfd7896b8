// Which tensors of a checkpoint take a block-quantized type (`vidax convert --dtype q8_0`,
// `vidax parity --quantize`, random quantized weights in `vidax bench`), and why the others
// keep a wider type. The rules follow the public ComfyUI-GGUF conversions (city96's
// tools/convert.py and its llama.cpp patch), so that files we write hold the same tensors
// quantized as the files users download:
//  - only 2-D tensors (matrices: the Linear weights) of more than 1024 values are quantized;
//    1-D tensors (norms, biases) and small tensors stay wide;
//  - tensors an embedding, a modulation or the output head reads stay wide (kKeepWide);
//  - a row (the last dimension) must be a multiple of the type's block (32, or 256 for the
//    K-quants): a tensor whose rows are not keeps a wider type instead of failing.
#pragma once
#include <string>

#include "io/checkpoint.h"

namespace vidax::io {

struct QuantDecision {
  bool quantize = false;
  std::string reason;  // why it stays wide (empty when quantized)
};

QuantDecision quant_decision(const std::string& name, const Shape& shape, DType dtype, QuantType type);

}  // namespace vidax::io
