// A read-only memory mapping of a whole file. Tensors read from it hold a
// shared_ptr to the MappedFile (through Buffer::view's keepalive), so the
// mapping lives exactly as long as the last view into it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>

#include "core/tensor.h"

namespace vidax::io {

class MappedFile {
 public:
  // Throws vidax::Error naming the path when it cannot be opened or mapped.
  static std::shared_ptr<MappedFile> open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  const uint8_t* data() const { return data_; }
  size_t size() const { return size_; }
  const std::string& path() const { return path_; }

  // A Buffer over [offset, offset + bytes) that keeps this mapping alive.
  static std::shared_ptr<Buffer> view(const std::shared_ptr<MappedFile>& file, size_t offset, size_t bytes);

 private:
  MappedFile() = default;
  std::string path_;
  const uint8_t* data_ = nullptr;
  size_t size_ = 0;
  void* map_ = nullptr;  // nullptr for an empty file
};

}  // namespace vidax::io
