// GGUF: files written by the gguf package (llama.cpp's writer) read back
// exactly, block-quantized tensors as zero-copy views whose values are the
// package's dequantization; our writer's files read back byte for byte;
// malformed files are clear errors naming the file and the tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <map>

#include "io/checkpoint.h"
#include "io/gguf.h"
#include "io_test_util.h"

namespace vidax::io {
namespace {

const std::string kGguf = test::data_dir() + "/gguf_fixture.gguf";
const std::string kQuantGguf = test::data_dir() + "/gguf_quant_fixture.gguf";
const std::string kQuantGolden = std::string(VIDAX_TEST_DATA_DIR) + "/io/data/ggml_quants.safetensors";

TEST(Gguf, ReadsQuantizedTensorsAsZeroCopyViews) {
  Checkpoint ck = Checkpoint::open(kQuantGguf);
  Checkpoint want = Checkpoint::open(kQuantGolden);
  const std::map<std::string, QuantType> types = {{"blk.0.attn_q.weight", QuantType::Q8_0},
                                                   {"blk.0.ffn.weight", QuantType::Q4_K},
                                                   {"blk.0.out.weight", QuantType::Q6_K},
                                                   {"blk.0.lo.weight", QuantType::Q5_0},
                                                   {"blk.0.norm.weight", QuantType::None}};
  ASSERT_EQ(ck.size(), types.size());
  for (const auto& [name, q] : types) {
    const TensorInfo& info = ck.info(name);
    EXPECT_EQ(info.quant, q) << name;
    Tensor t = ck.get(name);
    Tensor exp = want.get("gguf." + name);
    EXPECT_EQ(t.quant(), q) << name;
    EXPECT_EQ(t.shape(), exp.shape()) << name;
    EXPECT_EQ(t.nbytes(), info.nbytes()) << name;
    EXPECT_FALSE(t.buffer()->owned()) << name;
    const std::vector<float> got = t.to_f32_vector(), ref = exp.to_f32_vector();
    ASSERT_EQ(got.size(), ref.size());
    for (size_t i = 0; i < got.size(); ++i) ASSERT_EQ(f32_bits(got[i]), f32_bits(ref[i])) << name << " [" << i << "]";
  }
  EXPECT_EQ(ck.info("blk.0.ffn.weight").type_name(), "Q4_K");
  EXPECT_EQ(ck.info("blk.0.ffn.weight").nbytes(), 2u * 144u * 2u);
}

TEST(Gguf, WriterRoundTripsEveryTensorAndTheMetadata) {
  test::TempDir dir;
  Checkpoint ck = Checkpoint::open(kQuantGguf);
  std::map<std::string, Tensor> tensors;
  for (const auto& n : ck.names()) tensors.emplace(n, ck.get(n));
  tensors.emplace("extra.bf16", Tensor::from_f32({1.5f, -2.f, 3.25f}, {3}, DType::BF16));
  const std::string out = dir.file("copy.gguf");
  write_gguf(out, tensors, {{"general.name", "round trip"}});
  Checkpoint back = Checkpoint::open(out);
  EXPECT_EQ(back.names(), [&] { std::vector<std::string> v; for (auto& [k, t] : tensors) v.push_back(k); return v; }());
  for (const auto& [name, t] : tensors) {
    Tensor b = back.get(name);
    EXPECT_EQ(b.quant(), t.quant()) << name;
    EXPECT_EQ(b.dtype(), t.dtype()) << name;
    EXPECT_EQ(b.shape(), t.shape()) << name;
    ASSERT_EQ(b.nbytes(), t.nbytes()) << name;
    EXPECT_EQ(std::memcmp(b.data_ptr(), t.contiguous().data_ptr(), t.nbytes()), 0) << name;
  }
  EXPECT_EQ(back.metadata().at("general.name"), "round trip");
  EXPECT_EQ(back.metadata().at("general.alignment"), "32");
  // A tensor whose maker returns another type than declared is refused, naming it; nothing is left.
  std::vector<GgufWriteTensor> bad = {{"w", {2, 32}, DType::F32, QuantType::Q8_0, [] { return Tensor::zeros({2, 32}, DType::F32); }}};
  EXPECT_VIDAX_ERROR(write_gguf(dir.file("bad.gguf"), bad), "'w'", "Q8_0[2, 32]");
  EXPECT_FALSE(std::filesystem::exists(dir.file("bad.gguf")));
}

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

TEST_F(GgufMalformed, UnsupportedAndUnknownTypesAreNamed) {
  std::string b = good;
  const uint32_t iq2 = 16;
  std::memcpy(b.data() + tensor_field(b, "blk.0.w_f16", "type"), &iq2, 4);
  expect_error(b, {"'blk.0.w_f16'", "IQ2_XXS", "q8_0"});
  const uint32_t unknown = 77;
  std::memcpy(b.data() + tensor_field(b, "blk.0.w_f16", "type"), &unknown, 4);
  expect_error(b, {"'blk.0.w_f16'", "unknown GGML type 77"});
}

class GgufQuantMalformed : public GgufMalformed {
 protected:
  std::string qgood = test::read_bytes(kQuantGguf);
};

TEST_F(GgufQuantMalformed, KQuantRowsNotAMultipleOf256) {
  std::string b = qgood;
  const uint32_t q4k = 12;  // blk.0.attn_q.weight is [4, 64]: 64-value rows
  std::memcpy(b.data() + tensor_field(b, "blk.0.attn_q.weight", "type"), &q4k, 4);
  expect_error(b, {"'blk.0.attn_q.weight'", "Q4_K", "rows of 64 values", "256-value block"});
}

TEST_F(GgufQuantMalformed, ByteSizeNotMatchingTypeAndShape) {
  std::string b = qgood;
  const uint32_t q8 = 8;  // blk.0.lo.weight: Q5_0 [2, 64] is 88 bytes; as Q8_0 it would be 136
  std::memcpy(b.data() + tensor_field(b, "blk.0.lo.weight", "type"), &q8, 4);
  expect_error(b, {"'blk.0.lo.weight'", "Q8_0[2, 64]", "136 bytes", "does not match its type and shape"});
}

TEST_F(GgufQuantMalformed, EveryTruncationIsAnError) {
  const GgufHeader h = parse_gguf_header(reinterpret_cast<const uint8_t*>(qgood.data()), qgood.size(), "g");
  uint64_t end = 0;
  std::string last;
  for (const auto& t : h.tensors)
    if (h.data_start + t.offset + t.nbytes > end) { end = h.data_start + t.offset + t.nbytes; last = t.name; }
  for (size_t n = 0; n < end; ++n)
    EXPECT_THROW(parse_gguf_header(reinterpret_cast<const uint8_t*>(qgood.data()), n, "g"), Error) << n;
  test::write_bytes(path, qgood.substr(0, end - 1));
  EXPECT_VIDAX_ERROR(Checkpoint::open(path), path, "'" + last + "'", "truncated");
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
