// What each file-format reader hands to io::Checkpoint: the tensors of one
// file (header facts plus a loader that makes the zero-copy view or the copy)
// and the file's metadata. Internal to src/io.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "io/checkpoint.h"

namespace vidax::io {

struct SourceTensor {
  TensorInfo info;
  std::function<Tensor()> load;  // thread-safe; may be called many times
};

struct SourceFile {
  std::vector<SourceTensor> tensors;
  std::map<std::string, std::string> metadata;
};

enum class FileFormat { Safetensors, TorchZip, TorchLegacy, GGUF, Unknown };
// Sniffs the first bytes (extensions lie: a .bin may be safetensors or torch).
FileFormat detect_format(const uint8_t* data, size_t size);
const char* format_name(FileFormat f);

SourceFile read_safetensors_file(const std::string& path);
SourceFile read_torch_file(const std::string& path);  // zip (torch >= 1.6) or the legacy pickle stream
SourceFile read_gguf_file(const std::string& path);

}  // namespace vidax::io
