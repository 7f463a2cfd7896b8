// GGUF: a file written by the gguf package (llama.cpp's writer) reads back
// exactly; malformed or quantized files are clear errors.
#include <gtest/gtest.h>

#include <cstring>

#include "io/checkpoint.h"
#include "io/gguf.h"
#include "io_test_util.h"

namespace vidax::io {
namespace {

const std::string kGguf = test::data_dir() + "/gguf_fixture.gguf";

TEST(Gguf, ReadsTheReferenceWriter) {
  Checkpoint ck = Checkpoint::open(kGguf);
  Checkpoint want = Checkpoint::open(test::data_dir() + "/torch_fixture_expected.safetensors");
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"blk.0.w_bf16", "blk.0.w_f16", "blk.0.w_f32", "ids_i32"}));
  for (const auto& name : ck.names()) {
    Tensor got = ck.get(name), exp = want.get("gguf." + name);
    EXPECT_EQ(got.dtype(), exp.dtype()) << name;
    EXPECT_EQ(got.shape(), exp.shape()) << name;  // GGUF's innermost-first dims, reversed
    EXPECT_EQ(std::memcmp(got.data_ptr(), exp.data_ptr(), exp.nbytes()), 0) << name;
    EXPECT_FALSE(got.buffer()->owned()) << name;
  }
  EXPECT_EQ(ck.metadata().at("general.name"), "io fixture");
  EXPECT_EQ(ck.metadata().at("general.architecture"), "vidaxtest");
  EXPECT_EQ(ck.metadata().at("vidaxtest.block_count"), "1");
  EXPECT_EQ(ck.metadata().at("vidaxtest.eps"), "0.5");
  EXPECT_EQ(ck.metadata().at("vidaxtest.flag"), "true");
  EXPECT_EQ(ck.metadata().at("vidaxtest.list"), "[1,2,3]");
}

// Byte position of a field of the named tensor's info record.
size_t tensor_field(const std::string& bytes, const std::string& name, const char* field) {
  size_t p = bytes.find(name);
  EXPECT_NE(p, std::string::npos);
  p += name.size();
  uint32_t n_dims;
  std::memcpy(&n_dims, bytes.data() + p, 4);
  const size_t type_at = p + 4 + 8 * n_dims;
  return std::string(field) == "type" ? type_at : type_at + 4;
}

class GgufMalformed : public ::testing::Test {
 protected:
  test::TempDir dir;
  std::string path = dir.file("bad.gguf");
  std::string good = test::read_bytes(kGguf);
  void expect_error(const std::string& bytes, const std::vector<std::string>& parts) {
    test::write_bytes(path, bytes);
    try {
      Checkpoint::open(path);
      ADD_FAILURE() << "no error";
    } catch (const Error& e) {
      for (const auto& p : parts) EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << e.what() << " lacks " << p;
      EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
    }
  }
};

TEST_F(GgufMalformed, QuantizedTensorIsNamed) {
  std::string b = good;
  const uint32_t q4k = 12;
  std::memcpy(b.data() + tensor_field(b, "blk.0.w_f16", "type"), &q4k, 4);
  expect_error(b, {"'blk.0.w_f16'", "Q4_K"});
  const uint32_t unknown = 77;
  std::memcpy(b.data() + tensor_field(b, "blk.0.w_f16", "type"), &unknown, 4);
  expect_error(b, {"'blk.0.w_f16'", "unknown GGML type 77"});
}

TEST_F(GgufMalformed, OffsetsAndCounts) {
  std::string b = good;
  uint64_t off = 1;
  std::memcpy(b.data() + tensor_field(b, "ids_i32", "offset"), &off, 8);
  expect_error(b, {"'ids_i32'", "not a multiple of the alignment 32"});
  off = 1 << 20;
  std::memcpy(b.data() + tensor_field(b, "ids_i32", "offset"), &off, 8);
  expect_error(b, {"'ids_i32'", "runs past the data section"});
  off = 0;  // onto blk.0.w_f32's bytes
  std::memcpy(b.data() + tensor_field(b, "ids_i32", "offset"), &off, 8);
  expect_error(b, {"'ids_i32'", "overlap"});

  b = good;
  const uint64_t huge = uint64_t(1) << 60;
  std::memcpy(b.data() + 8, &huge, 8);  // tensor count
  expect_error(b, {"more than the file can hold"});
  b = good;
  const uint32_t v = 7;
  std::memcpy(b.data() + 4, &v, 4);
  expect_error(b, {"GGUF version 7"});
}

TEST_F(GgufMalformed, EveryTruncationIsAnError) {
  // Every cut into the header or the tensors' bytes (the writer pads the tail; cutting padding is fine).
  const GgufHeader h = parse_gguf_header(reinterpret_cast<const uint8_t*>(good.data()), good.size(), "g");
  uint64_t end = 0;
  for (const auto& t : h.tensors) end = std::max(end, h.data_start + t.offset + t.nbytes);
  ASSERT_GT(end, good.size() - 32);
  for (size_t n = 0; n < end; ++n)
    EXPECT_THROW(parse_gguf_header(reinterpret_cast<const uint8_t*>(good.data()), n, "g"), Error) << n;
  test::write_bytes(path, good.substr(0, end - 1));
  EXPECT_VIDAX_ERROR(Checkpoint::open(path), path, "'ids_i32'", "truncated");
}

}  // namespace
}  // namespace vidax::io
