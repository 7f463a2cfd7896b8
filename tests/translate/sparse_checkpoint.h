// Test helper: real safetensors files whose data section is sparse (made with
// ftruncate), so checkpoints shaped like the published 1.3B/14B models cost
// no disk space or write time. Reading such data gives zeros.
#pragma once
#include <fcntl.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <optional>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>
#include <vector>

#include "translate/source.h"

namespace vidax::testing {

// Writes `names` of `src` (all when empty) as a safetensors file; `dtype`
// overrides every tensor's dtype when set. Returns the file size.
inline uint64_t write_sparse_safetensors(const std::string& path, const translate::TensorSource& src,
                                         const std::vector<std::string>& names_in = {},
                                         const std::optional<DType>& dtype = std::nullopt,
                                         const std::map<std::string, std::string>& metadata = {}) {
  std::vector<std::string> names = names_in.empty() ? src.names() : names_in;
  nlohmann::ordered_json h = nlohmann::ordered_json::object();
  if (!metadata.empty()) h["__metadata__"] = metadata;
  uint64_t off = 0;
  for (const auto& n : names) {
    const translate::TensorInfo* ti = src.find(n);
    VIDAX_CHECK(ti, "write_sparse_safetensors: no tensor " << n);
    DType dt = dtype ? *dtype : ti->dtype;
    uint64_t bytes = static_cast<uint64_t>(shape_numel(ti->shape)) * dtype_size(dt);
    h[n] = {{"dtype", dtype_name(dt)}, {"shape", ti->shape}, {"data_offsets", {off, off + bytes}}};
    off += bytes;
  }
  std::string header = h.dump();
  while ((header.size() + 8) % 8) header += ' ';
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  VIDAX_CHECK(fd >= 0, "cannot create " << path);
  uint64_t len = header.size();
  uint8_t le[8];
  for (int i = 0; i < 8; ++i) le[i] = static_cast<uint8_t>(len >> (8 * i));
  bool ok = ::write(fd, le, 8) == 8 && ::write(fd, header.data(), header.size()) == static_cast<ssize_t>(header.size());
  uint64_t total = 8 + header.size() + off;
  ok = ok && ::ftruncate(fd, static_cast<off_t>(total)) == 0;
  ::close(fd);
  VIDAX_CHECK(ok, "cannot write " << path);
  return total;
}

// A fresh directory under the system temp dir, removed with the object.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    std::random_device rd;
    path = std::filesystem::temp_directory_path() / ("vidax_translate_" + std::to_string(::getpid()) + "_" +
                                                     std::to_string(rd()));
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string operator/(const std::string& name) const { return (path / name).string(); }
};

// Resident set size of this process, from /proc/self/status (bytes).
inline uint64_t resident_bytes() {
  FILE* f = std::fopen("/proc/self/status", "r");
  if (!f) return 0;
  char line[256];
  uint64_t kb = 0;
  while (std::fgets(line, sizeof line, f))
    if (std::strncmp(line, "VmRSS:", 6) == 0) kb = std::strtoull(line + 6, nullptr, 10);
  std::fclose(f);
  return kb * 1024;
}

}  // namespace vidax::testing
