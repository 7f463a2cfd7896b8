// The PJRT tests never write the user's compile cache (~/.cache/vidax/pjrt): before any test runs,
// VIDAX_PJRT_CACHE points at a fresh folder of this process (removed at exit) unless the caller set
// one. Sessions made by the code under test (pjrt::Session::get, `vidax parity --device pjrt`)
// read it; tests of the cache itself pass their own folder.
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

struct CacheDir {
  std::filesystem::path path;
  CacheDir() {
    if (const char* e = std::getenv("VIDAX_PJRT_CACHE"); e && *e) return;
    path = std::filesystem::temp_directory_path() / ("vidax_test_pjrt_cache_" + std::to_string(::getpid()));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
    ::setenv("VIDAX_PJRT_CACHE", path.c_str(), 1);
  }
  ~CacheDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
};
const CacheDir g_cache_dir;

}  // namespace
