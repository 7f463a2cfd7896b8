// Helpers shared by the io tests: a scratch directory, raw file writers and
// an assertion on vidax::Error messages.
#pragma once
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "core/error.h"

namespace vidax::io::test {

// A fresh directory removed (with its contents) at scope exit.
struct TempDir {
  std::filesystem::path path;
  TempDir() {
    static int counter = 0;
    path = std::filesystem::temp_directory_path() /
           ("vidax_io_test_" + std::to_string(::getpid()) + "_" + std::to_string(counter++));
    std::filesystem::remove_all(path);
    std::filesystem::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  std::string file(const std::string& name) const { return (path / name).string(); }
};

inline void write_bytes(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
}

inline std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

inline std::string le64(uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<size_t>(i)] = static_cast<char>(v >> (8 * i));
  return s;
}

// A safetensors file from a header text and a data section, with an optional
// forged header length.
inline std::string safetensors_bytes(const std::string& header, const std::string& data, int64_t forged_len = -1) {
  return le64(forged_len >= 0 ? static_cast<uint64_t>(forged_len) : header.size()) + header + data;
}

inline std::string data_dir() { return std::string(VIDAX_TEST_DATA_DIR) + "/io/data"; }

}  // namespace vidax::io::test

// Expects `stmt` to throw vidax::Error whose message contains every listed part.
#define EXPECT_VIDAX_ERROR(stmt, ...)                                                         \
  do {                                                                                        \
    try {                                                                                     \
      stmt;                                                                                   \
      ADD_FAILURE() << "expected a vidax::Error from: " #stmt;                                \
    } catch (const ::vidax::Error& e_) {                                                      \
      for (const std::string& part_ : std::vector<std::string>{__VA_ARGS__})                  \
        EXPECT_NE(std::string(e_.what()).find(part_), std::string::npos)                      \
            << "message \"" << e_.what() << "\" lacks \"" << part_ << "\"";                   \
    }                                                                                         \
  } while (0)
