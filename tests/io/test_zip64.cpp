// A torch.save zip past 4 GiB (as the 11 GB UMT5 .pth is): zip64 sizes and
// local-header offsets in the central directory, a zip64 end record, a 4.5 GiB
// stored storage served as a view. Built by hand, sparse, in a few ms.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>

#include "io/checkpoint.h"
#include "io_test_util.h"

namespace vidax::io {
namespace {

uint32_t crc32(const std::string& s) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : s) {
    c ^= b;
    for (int k = 0; k < 8; ++k) c = (c >> 1) ^ (0xEDB88320u & (0u - (c & 1u)));
  }
  return ~c;
}

struct Bytes {
  std::string s;
  Bytes& u16(uint32_t v) { for (int i = 0; i < 2; ++i) s += char(v >> (8 * i)); return *this; }
  Bytes& u32(uint32_t v) { for (int i = 0; i < 4; ++i) s += char(v >> (8 * i)); return *this; }
  Bytes& u64(uint64_t v) { for (int i = 0; i < 8; ++i) s += char(v >> (8 * i)); return *this; }
  Bytes& str(const std::string& v) { s += v; return *this; }
};

std::string local_header(const std::string& name, uint32_t crc, uint64_t size, bool zip64) {
  Bytes b;
  b.u32(0x04034b50).u16(zip64 ? 45 : 20).u16(0).u16(0).u16(0).u16(0x21).u32(crc);
  b.u32(zip64 ? 0xFFFFFFFF : uint32_t(size)).u32(zip64 ? 0xFFFFFFFF : uint32_t(size));
  b.u16(uint16_t(name.size())).u16(zip64 ? 20 : 0).str(name);
  if (zip64) b.u16(1).u16(16).u64(size).u64(size);
  return b.s;
}

std::string central_entry(const std::string& name, uint32_t crc, uint64_t size, uint64_t offset) {
  const bool big_size = size >= 0xFFFFFFFF, big_off = offset >= 0xFFFFFFFF;
  Bytes extra;
  if (big_size) extra.u64(size).u64(size);
  if (big_off) extra.u64(offset);
  Bytes b;
  b.u32(0x02014b50).u16(45).u16(big_size || big_off ? 45 : 20).u16(0).u16(0).u16(0).u16(0x21).u32(crc);
  b.u32(big_size ? 0xFFFFFFFF : uint32_t(size)).u32(big_size ? 0xFFFFFFFF : uint32_t(size));
  const uint16_t extra_len = extra.s.empty() ? 0 : uint16_t(4 + extra.s.size());
  b.u16(uint16_t(name.size())).u16(extra_len).u16(0).u16(0).u16(0).u32(0);
  b.u32(big_off ? 0xFFFFFFFF : uint32_t(offset)).str(name);
  if (extra_len) b.u16(1).u16(uint16_t(extra.s.size())).str(extra.s);
  return b.s;
}

std::string binunicode(const std::string& s) { return "X" + Bytes().u32(uint32_t(s.size())).s + s; }

// {"big": ByteStorage '0' of n bytes viewed as [n], "small": FloatStorage '1' of 4}
std::string state_dict_pickle(uint64_t n) {
  auto tensor = [](const std::string& name, const char* storage, const std::string& key, const std::string& numel,
                   const std::string& size) {
    return binunicode(name) + "ctorch._utils\n_rebuild_tensor_v2\n((" + binunicode("storage") + "ctorch\n" + storage +
           "\n" + binunicode(key) + binunicode("cpu") + numel + "tQK" + std::string(1, '\0') + size + "\x85" +
           "K\x01\x85" + "\x89" + "ccollections\nOrderedDict\n)Rt" + "R";
  };
  const std::string big_numel = "\x8a\x08" + Bytes().u64(n).s;
  return std::string("\x80\x02}(") + tensor("big", "ByteStorage", "0", big_numel, big_numel) +
         tensor("small", "FloatStorage", "1", "K\x04", "K\x04") + "u.";
}

TEST(Zip64, TorchArchivePastFourGigabytes) {
  test::TempDir dir;
  const std::string path = dir.file("big.pth");
  const uint64_t big = (uint64_t(9) << 29);  // 4.5 GiB
  const std::string pkl = state_dict_pickle(big);
  const float small[4] = {0.5f, -1.0f, 2.0f, 1e30f};
  const std::string small_bytes(reinterpret_cast<const char*>(small), 16);

  const std::string h0 = local_header("a/data.pkl", crc32(pkl), pkl.size(), false);
  const uint64_t off1 = h0.size() + pkl.size();
  const std::string h1 = local_header("a/data/0", 0 /* never read by libzip */, big, true);
  const uint64_t data1 = off1 + h1.size();
  const uint64_t off2 = data1 + big;
  const std::string h2 = local_header("a/data/1", crc32(small_bytes), 16, false);
  const uint64_t cd = off2 + h2.size() + 16;
  const std::string cdir = central_entry("a/data.pkl", crc32(pkl), pkl.size(), 0) +
                           central_entry("a/data/0", 0, big, off1) +
                           central_entry("a/data/1", crc32(small_bytes), 16, off2);
  const uint64_t end64 = cd + cdir.size();
  Bytes tail;
  tail.u32(0x06064b50).u64(44).u16(45).u16(45).u32(0).u32(0).u64(3).u64(3).u64(cdir.size()).u64(cd);
  tail.u32(0x07064b50).u32(0).u64(end64).u32(1);
  tail.u32(0x06054b50).u16(0).u16(0).u16(3).u16(3).u32(uint32_t(cdir.size())).u32(0xFFFFFFFF).u16(0);

  int fd = ::open(path.c_str(), O_CREAT | O_TRUNC | O_WRONLY, 0644);
  ASSERT_GE(fd, 0);
  auto put = [&](const std::string& s, uint64_t at) { ASSERT_EQ(::pwrite(fd, s.data(), s.size(), off_t(at)), ssize_t(s.size())); };
  put(h0, 0);
  put(pkl, h0.size());
  put(h1, off1);
  put("\x7f", data1 + big - 1);  // last byte of the big storage; the rest is a hole
  put(h2, off2);
  put(small_bytes, off2 + h2.size());
  put(cdir, cd);
  put(tail.s, end64);
  ASSERT_EQ(::close(fd), 0);

  Checkpoint ck = Checkpoint::open(path);
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"big", "small"}));
  Tensor b = ck.get("big");
  EXPECT_EQ(b.shape(), (Shape{int64_t(big)}));
  EXPECT_FALSE(b.buffer()->owned());
  EXPECT_EQ(b.data<uint8_t>()[big - 1], 0x7f);
  EXPECT_EQ(b.data<uint8_t>()[0], 0);
  Tensor s = ck.get("small");  // its local header lies past 4 GiB: found through the zip64 offset
  EXPECT_EQ(s.to_f32_vector(), (std::vector<float>{0.5f, -1.0f, 2.0f, 1e30f}));
}

}  // namespace
}  // namespace vidax::io
