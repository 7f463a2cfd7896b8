// Zero-copy: an 8 GB (sparse) safetensors file opens and serves tensors
// without reading them: time and resident memory stay small.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>

#include "io/checkpoint.h"
#include "io_test_util.h"

namespace vidax::io {
namespace {

// Resident set size of this process, from /proc/self/status (kB -> bytes).
size_t vm_rss_bytes() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmRSS:", 0) == 0) return std::stoull(line.substr(6)) * 1024;
  return 0;
}

TEST(ZeroCopy, EightGigabyteSparseFile) {
  test::TempDir dir;
  const std::string path = dir.file("big.safetensors");
  const uint64_t big = uint64_t(8) << 30;  // one 8 GiB BF16 tensor, then a small F32 one
  nlohmann::json h;
  h["big"] = {{"dtype", "BF16"}, {"shape", {uint64_t(1) << 16, big / 2 / (uint64_t(1) << 16)}}, {"data_offsets", {0, big}}};
  h["tail"] = {{"dtype", "F32"}, {"shape", {4}}, {"data_offsets", {big, big + 16}}};
  std::string text = h.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const std::string head = test::le64(text.size()) + text;
  const uint64_t data_start = head.size();
  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::pwrite(fd, head.data(), head.size(), 0), ssize_t(head.size()));
  const float tail[4] = {1.5f, -2.0f, 3.25f, 4.0f};
  ASSERT_EQ(::pwrite(fd, tail, 16, off_t(data_start + big)), 16);  // the rest is a hole
  const uint16_t mark = 0x3f80;  // bf16 1.0 at the big tensor's last element
  ASSERT_EQ(::pwrite(fd, &mark, 2, off_t(data_start + big - 2)), 2);
  ASSERT_EQ(::close(fd), 0);

  const size_t rss_before = vm_rss_bytes();
  const auto t0 = std::chrono::steady_clock::now();
  Checkpoint ck = Checkpoint::open(path);
  Tensor b = ck.get("big");
  Tensor t = ck.get("tail");
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_EQ(b.nbytes(), big);
  EXPECT_FALSE(b.buffer()->owned());
  EXPECT_EQ(t.to_f32_vector(), (std::vector<float>{1.5f, -2.0f, 3.25f, 4.0f}));
  const uint16_t* p = b.data<uint16_t>();
  EXPECT_EQ(p[0], 0);                       // a hole reads as zeros
  EXPECT_EQ(p[big / 2 - 1], 0x3f80);        // the last element, 8 GiB in
  const size_t rss_after = vm_rss_bytes();
  std::printf("[ zero-copy ] open+get of an 8 GiB file: %.3f ms, VmRSS %+.1f MiB\n", seconds * 1e3,
              (double(rss_after) - double(rss_before)) / (1 << 20));
  EXPECT_LT(seconds, 1.0);
  EXPECT_LT(rss_after, rss_before + (size_t(64) << 20));  // far below 8 GiB
}

}  // namespace
}  // namespace vidax::io
