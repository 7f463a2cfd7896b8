// A per-process scratch directory for tests/pipeline, removed at exit.
#pragma once
#include <unistd.h>

#include <filesystem>
#include <string>

namespace vidax::test {

inline const std::filesystem::path& scratch_root() {
  struct Root {
    std::filesystem::path path;
    Root() {
      path = std::filesystem::temp_directory_path() / ("vidax_test_pipeline_" + std::to_string(::getpid()));
      std::filesystem::remove_all(path);
      std::filesystem::create_directories(path);
    }
    ~Root() {
      std::error_code ec;
      std::filesystem::remove_all(path, ec);
    }
  };
  static Root root;
  return root.path;
}

// scratch_root()/name, created empty.
inline std::filesystem::path scratch_dir(const std::string& name) {
  const auto d = scratch_root() / name;
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

}  // namespace vidax::test
