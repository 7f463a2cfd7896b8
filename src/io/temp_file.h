// Writing a file whole or not at all (internal to src/io): a temporary next to the target,
// removed unless the write completed and was renamed into place.
#pragma once
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "core/error.h"
#include "io/output_target.h"

namespace vidax::io {

struct TempFile {
  std::string path;
  int fd = -1;
  bool keep = false;
  ~TempFile() {
    if (fd >= 0) ::close(fd);
    if (!keep && !path.empty()) ::unlink(path.c_str());
  }
  // Creates `target`.tmp-XXXXXX (mode 0644).
  void open_next_to(const std::string& target) {
    std::string pattern = target + ".tmp-XXXXXX";
    std::vector<char> name(pattern.begin(), pattern.end());
    name.push_back('\0');
    fd = ::mkstemp(name.data());
    VIDAX_CHECK(fd >= 0, target << ": cannot create a temporary file next to it: " << std::strerror(errno));
    path = name.data();
    ::fchmod(fd, 0644);
  }
  // Closes and renames over `target` (checked again just before: -o /dev/null is never replaced).
  void commit(const std::string& target) {
    VIDAX_CHECK(::close(fd) == 0, target << ": close failed: " << std::strerror(errno));
    fd = -1;
    check_output_target(target);
    VIDAX_CHECK(::rename(path.c_str(), target.c_str()) == 0,
                target << ": cannot rename the temporary file into place: " << std::strerror(errno));
    keep = true;
  }
};

inline void write_all(int fd, const void* data, size_t n, const std::string& path) {
  const char* p = static_cast<const char*>(data);
  while (n > 0) {
    ssize_t w = ::write(fd, p, std::min<size_t>(n, size_t(1) << 30));
    if (w < 0 && errno == EINTR) continue;
    VIDAX_CHECK(w > 0, path << ": write failed: " << std::strerror(errno));
    p += w;
    n -= static_cast<size_t>(w);
  }
}

}  // namespace vidax::io
