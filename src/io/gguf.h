// GGUF (llama.cpp / ggml) files: the header's key-value metadata and tensor
// table, tensors as zero-copy views: the plain element types (F32, F16, BF16,
// F64, I8, I16, I32, I64) and the block-quantized types of core/quant.h (Q8_0,
// Q4_K, ...: Tensor::quantized views). Another ggml type (IQ*, TQ*, ...) makes
// open() fail naming the tensor and its type. write_gguf writes such files.
//   "GGUF" | u32 version (2, 3) | u64 n_tensors | u64 n_kv | kv... | tensor infos... | pad | data
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace vidax::io {

struct GgufTensor {
  std::string name;
  DType dtype;          // U8 when quantized
  QuantType quant = QuantType::None;
  Shape shape;          // outermost first (GGUF lists dimensions innermost first)
  uint64_t offset = 0;  // relative to the data section
  uint64_t nbytes = 0;
};

struct GgufHeader {
  uint32_t version = 0;
  std::map<std::string, std::string> metadata;  // strings as-is; numbers, bools and arrays as JSON text
  std::vector<GgufTensor> tensors;
  uint64_t alignment = 32;
  uint64_t data_start = 0;  // file offset of the data section
};

// Parses and validates a whole GGUF file held in memory. Throws vidax::Error naming `file`.
GgufHeader parse_gguf_header(const uint8_t* data, size_t size, const std::string& file);
std::string type_str(const GgufTensor& t);  // "Q8_0[64, 128]"

// Writes a GGUF v3 file (alignment 32) to a temporary renamed into place: tensors of the plain
// float/integer types and quantized tensors, in the given order; metadata values as strings.
// A tensor's bytes come from make(), called once, in order, when its turn comes (a converter
// quantizes one tensor at a time); what it returns must have the declared shape and type.
struct GgufWriteTensor {
  std::string name;
  Shape shape;
  DType dtype = DType::F32;           // ignored when quant is set
  QuantType quant = QuantType::None;
  std::function<Tensor()> make;
};
void write_gguf(const std::string& path, const std::vector<GgufWriteTensor>& tensors,
                const std::map<std::string, std::string>& metadata = {});
void write_gguf(const std::string& path, const std::map<std::string, Tensor>& tensors,
                const std::map<std::string, std::string>& metadata = {});

}  // namespace vidax::io
