#include "io/mapped_file.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "core/error.h"

namespace vidax::io {

std::shared_ptr<MappedFile> MappedFile::open(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  VIDAX_CHECK(fd >= 0, path << ": cannot open: " << std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    int e = errno;
    ::close(fd);
    throw Error(msg() << path << ": cannot stat: " << std::strerror(e));
  }
  if (!S_ISREG(st.st_mode)) {
    ::close(fd);
    throw Error(msg() << path << ": not a regular file");
  }
  std::shared_ptr<MappedFile> f(new MappedFile());
  f->path_ = path;
  f->size_ = static_cast<size_t>(st.st_size);
  if (f->size_ > 0) {
    // MAP_PRIVATE + PROT_READ: pages come from the page cache on first touch,
    // so opening a 10 GB checkpoint costs nothing until tensors are read.
    void* p = ::mmap(nullptr, f->size_, PROT_READ, MAP_PRIVATE, fd, 0);
    if (p == MAP_FAILED) {
      int e = errno;
      ::close(fd);
      throw Error(msg() << path << ": cannot mmap " << f->size_ << " bytes: " << std::strerror(e));
    }
    f->map_ = p;
    f->data_ = static_cast<const uint8_t*>(p);
  }
  ::close(fd);  // the mapping keeps the file referenced
  return f;
}

MappedFile::~MappedFile() {
  if (map_) ::munmap(map_, size_);
}

std::shared_ptr<Buffer> MappedFile::view(const std::shared_ptr<MappedFile>& file, size_t offset, size_t bytes) {
  VIDAX_CHECK(offset <= file->size_ && bytes <= file->size_ - offset,
              file->path_ << ": view [" << offset << ", +" << bytes << ") past the file's " << file->size_
                          << " bytes");
  // Buffers are mutable in type only; the mapping is read-only (a write faults).
  auto* p = const_cast<uint8_t*>(file->data_ ? file->data_ + offset : nullptr);
  static uint8_t empty_byte = 0;
  if (!p) p = &empty_byte;
  return Buffer::view(p, bytes, std::static_pointer_cast<void>(file));
}

}  // namespace vidax::io
