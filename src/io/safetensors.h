// The safetensors format (https://github.com/huggingface/safetensors):
//   u64 little-endian N | N bytes of JSON header | data section
// The header maps tensor names to {dtype, shape, data_offsets: [begin, end)}
// (offsets relative to the data section) plus an optional "__metadata__"
// object of string -> string.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/mapped_file.h"

namespace vidax::io {

// Same bound as the reference implementation (MAX_HEADER_SIZE, 100 MB).
inline constexpr uint64_t kMaxSafetensorsHeaderBytes = 100'000'000;

struct SafetensorsEntry {
  std::string name;
  DType dtype;
  Shape shape;
  uint64_t begin = 0, end = 0;  // byte range inside the data section
};

struct SafetensorsHeader {
  std::vector<SafetensorsEntry> entries;  // in header order
  std::map<std::string, std::string> metadata;
  uint64_t data_start = 0;  // file offset of the data section (8 + N)
};

// Parses and strictly validates a whole safetensors file held in memory
// (only the header is read; the data section is bounds-checked, not touched).
// Throws vidax::Error naming `file` (and the tensor, when one is at fault).
SafetensorsHeader parse_safetensors_header(const uint8_t* data, size_t size, const std::string& file);

// A zero-copy view of one entry of a mapped safetensors file (a copy only when
// the bytes are not aligned to the element size).
Tensor safetensors_tensor(const std::shared_ptr<MappedFile>& file, const SafetensorsHeader& header,
                          const SafetensorsEntry& entry);

}  // namespace vidax::io
