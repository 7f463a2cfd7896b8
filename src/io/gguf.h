// GGUF (llama.cpp / ggml) files, read-only: the header's key-value metadata
// and tensor table, tensors as zero-copy views. Only the plain element types
// (F32, F16, BF16, F64, I8, I16, I32, I64) are held; a quantized tensor makes
// open() fail naming it and its type.
//   "GGUF" | u32 version (2, 3) | u64 n_tensors | u64 n_kv | kv... | tensor infos... | pad | data
#pragma once
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace vidax::io {

struct GgufTensor {
  std::string name;
  DType dtype;
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

}  // namespace vidax::io
