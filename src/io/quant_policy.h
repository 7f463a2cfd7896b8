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
// The same rules for a scaled weight type (F8_E4M3, F8_E5M2, I8: no block, so no row rule).
QuantDecision quant_decision(const std::string& name, const Shape& shape, DType dtype, DType scaled_type);
// "fp8" (= fp8_e4m3fn), "fp8_e4m3fn", "fp8_e5m2", "int8" -> the scaled weight type; false otherwise.
bool scaled_type_from_name(const std::string& s, DType* out);

// A quantization target: a GGUF block type or a scaled weight type (`--quantize`, `--dtype`).
struct QuantTarget {
  QuantType block = QuantType::None;
  DType scaled = DType::F32;  // F8_E4M3, F8_E5M2 or I8 when a scaled type
  bool is_scaled() const { return scaled != DType::F32; }
  bool none() const { return block == QuantType::None && !is_scaled(); }
  // "q8_0", "fp8", "int8", ...; throws naming the valid names on anything else ("" is none).
  static QuantTarget parse(const std::string& name);
  QuantDecision decision(const std::string& name, const Shape& shape, DType dtype) const;
  Tensor apply(const Tensor& t) const;  // Tensor::quantize or Tensor::quantize_scaled
};

}  // namespace vidax::io
