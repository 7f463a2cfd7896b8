#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <random>

#include "io/checkpoint.h"
#include "io/safetensors.h"
#include "io_test_util.h"

namespace vidax::io {
namespace {

using test::safetensors_bytes;
using test::TempDir;
using test::write_bytes;

constexpr DType kAllDTypes[] = {DType::F64, DType::F32, DType::F16,  DType::BF16, DType::F8_E4M3,
                                DType::F8_E5M2, DType::I64, DType::I32, DType::I16, DType::I8,
                                DType::U64, DType::U32, DType::U16,  DType::U8,   DType::Bool};

// A tensor of random bytes (booleans kept 0/1, as the format expects).
Tensor random_tensor(const Shape& shape, DType dt, std::mt19937& rng) {
  Tensor t = Tensor::empty(shape, dt);
  auto* p = static_cast<uint8_t*>(t.data_ptr());
  for (size_t i = 0; i < t.nbytes(); ++i) p[i] = static_cast<uint8_t>(dt == DType::Bool ? rng() & 1 : rng());
  return t;
}

bool same_bytes(const Tensor& a, const Tensor& b) {
  Tensor ca = a.contiguous(), cb = b.contiguous();
  return ca.dtype() == cb.dtype() && ca.shape() == cb.shape() &&
         (ca.nbytes() == 0 || std::memcmp(ca.data_ptr(), cb.data_ptr(), ca.nbytes()) == 0);
}

TEST(Safetensors, RoundTripEveryDType) {
  TempDir dir;
  std::mt19937 rng(7);
  std::map<std::string, Tensor> tensors;
  for (DType dt : kAllDTypes) {
    tensors[std::string("t.") + dtype_name(dt)] = random_tensor({3, 5}, dt, rng);
    tensors[std::string("s.") + dtype_name(dt)] = random_tensor({}, dt, rng);  // 0-d
  }
  tensors["empty"] = Tensor::empty({0, 4}, DType::F32);
  tensors["transposed"] = random_tensor({4, 6}, DType::F32, rng).transpose(0, 1);  // stored contiguous
  const std::map<std::string, std::string> meta = {{"kind", "test"}, {"config", "{\"a\": 1}"}};
  const std::string path = dir.file("all.safetensors");
  save_safetensors(path, tensors, meta);

  Checkpoint ck = Checkpoint::open(path);
  EXPECT_EQ(ck.size(), tensors.size());
  EXPECT_EQ(ck.metadata(), meta);
  for (const auto& [name, want] : tensors) {
    ASSERT_TRUE(ck.contains(name)) << name;
    EXPECT_EQ(ck.info(name).dtype, want.dtype()) << name;
    EXPECT_EQ(ck.info(name).shape, want.shape()) << name;
    EXPECT_EQ(ck.info(name).file, path);
    Tensor got = ck.get(name);
    EXPECT_TRUE(same_bytes(got, want)) << name;
    EXPECT_TRUE(got.is_contiguous()) << name;
    // Zero-copy: a view of the mapping, aligned for its element type.
    EXPECT_FALSE(got.buffer()->owned()) << name;
    if (got.numel() > 0) {
      EXPECT_EQ(reinterpret_cast<uintptr_t>(got.data_ptr()) % dtype_size(got.dtype()), 0u) << name;
    }
  }
}

TEST(Safetensors, ReadsFilesWrittenByTheSafetensorsPackage) {
  // Made by the reference writer (tools/golden/make_pth_fixture.py).
  Checkpoint ck = Checkpoint::open(test::data_dir() + "/torch_fixture_expected.safetensors");
  EXPECT_EQ(ck.metadata().at("kind"), "io.torch_fixture");
  EXPECT_EQ(ck.info("state_dict.w_bf16").dtype, DType::BF16);
  EXPECT_EQ(ck.get("state_dict.shared_full").to_f32_vector(),
            (std::vector<float>{0, 0.5, 1, 1.5, 2, 2.5, 3, 3.5, 4, 4.5, 5, 5.5}));
  EXPECT_EQ(ck.get("state_dict.scalar").dim(), 0);
  EXPECT_EQ(ck.get("state_dict.scalar").to_f32_vector(), std::vector<float>{2.5f});
}

TEST(Safetensors, ViewsOutliveTheCheckpoint) {
  TempDir dir;
  const std::string path = dir.file("a.safetensors");
  save_safetensors(path, {{"x", Tensor::from_f32({1, 2, 3}, {3})}});
  Tensor x;
  { x = Checkpoint::open(path).get("x"); }
  std::filesystem::remove(path);  // the mapping keeps the bytes
  EXPECT_EQ(x.to_f32_vector(), (std::vector<float>{1, 2, 3}));
}

TEST(Safetensors, WriterLeavesNoTemporaryFiles) {
  TempDir dir;
  save_safetensors(dir.file("w.safetensors"), {{"x", Tensor::from_f32({1}, {1})}});
  save_safetensors(dir.file("w.safetensors"), {{"y", Tensor::from_f32({2}, {1})}});  // replaces
  int files = 0;
  for (auto& e : std::filesystem::directory_iterator(dir.path)) (void)e, ++files;
  EXPECT_EQ(files, 1);
  EXPECT_EQ(Checkpoint::open(dir.file("w.safetensors")).names(), std::vector<std::string>{"y"});
  EXPECT_VIDAX_ERROR(save_safetensors(dir.file("missing/dir/w.safetensors"), {{"x", Tensor::from_f32({1}, {1})}}),
                     "missing/dir/w.safetensors", "temporary");
  EXPECT_VIDAX_ERROR(save_safetensors(dir.file("m.safetensors"), {{"__metadata__", Tensor::from_f32({1}, {1})}}),
                     "reserved");
}

TEST(Safetensors, HeaderIsPaddedAndDataAligned) {
  TempDir dir;
  const std::string path = dir.file("p.safetensors");
  save_safetensors(path, {{"a", Tensor::from_f32({1}, {1}, DType::BF16)}, {"b", Tensor::from_f64({1, 2}, {2})}});
  const std::string bytes = test::read_bytes(path);
  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | static_cast<uint8_t>(bytes[static_cast<size_t>(i)]);
  EXPECT_EQ((8 + n) % 8, 0u);
  EXPECT_EQ(bytes.size(), 8 + n + 16 + 2);
}

// ---- malformed files: each a clear vidax::Error naming the file (and tensor) ----

class Malformed : public ::testing::Test {
 protected:
  TempDir dir;
  std::string path = dir.file("bad.safetensors");
  void open_expecting(const std::string& bytes, std::vector<std::string> parts) {
    write_bytes(path, bytes);
    parts.push_back(path);
    try {
      Checkpoint::open(path);
      ADD_FAILURE() << "no error for " << bytes.substr(8, 200);
    } catch (const Error& e) {
      for (const auto& p : parts)
        EXPECT_NE(std::string(e.what()).find(p), std::string::npos) << "message \"" << e.what() << "\" lacks \"" << p << "\"";
    }
  }
};

TEST_F(Malformed, TruncatedFiles) {
  open_expecting("", {"too short"});
  open_expecting(std::string("\x10\0\0", 3), {"too short"});
  const std::string good = safetensors_bytes(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", std::string(8, '\1'));
  open_expecting(good.substr(0, 20), {"runs past the end of the file", "truncated"});
  open_expecting(good.substr(0, good.size() - 3), {"'x'", "run past the data section", "truncated"});
}

TEST_F(Malformed, OversizedHeaderLength) {
  open_expecting(safetensors_bytes("{}", "", int64_t(1) << 40), {"header length 1099511627776", "exceeds"});
  open_expecting(safetensors_bytes("{}", "", 100'000'001), {"exceeds"});
  open_expecting(safetensors_bytes("{}", "", 1000), {"header length 1000 runs past the end"});
}

TEST_F(Malformed, BadJson) {
  open_expecting(safetensors_bytes(R"({"x":{"dtype":"F32",)", ""), {"not valid JSON"});
  open_expecting(safetensors_bytes("[1, 2]", ""), {"does not start with '{'"});
  open_expecting(safetensors_bytes(R"({"x":{"dtype":"F32","shape":[],"data_offsets":[0,4]}} trailing)", "1234"),
                 {"not valid JSON"});
  open_expecting(safetensors_bytes(R"({"x":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},)"
                                   R"("x":{"dtype":"U8","shape":[1],"data_offsets":[1,2]}})", "12"),
                 {"key 'x' twice"});
}

TEST_F(Malformed, EntryFields) {
  auto one = [](const std::string& entry) { return safetensors_bytes(R"({"w":)" + entry + "}", std::string(16, '\0')); };
  open_expecting(one(R"({"shape":[2],"data_offsets":[0,8]})"), {"'w'", "missing \"dtype\""});
  open_expecting(one(R"({"dtype":5,"shape":[2],"data_offsets":[0,8]})"), {"'w'", "\"dtype\" must be a string"});
  open_expecting(one(R"({"dtype":"C64","shape":[2],"data_offsets":[0,16]})"), {"'w'", "unknown dtype 'C64'"});
  open_expecting(one(R"({"dtype":"F32","data_offsets":[0,8]})"), {"'w'", "missing \"shape\""});
  open_expecting(one(R"({"dtype":"F32","shape":[-2],"data_offsets":[0,8]})"), {"'w'", "non-negative integers"});
  open_expecting(one(R"({"dtype":"F32","shape":[2.0],"data_offsets":[0,8]})"), {"'w'", "non-negative integers"});
  open_expecting(one(R"({"dtype":"F32","shape":"2","data_offsets":[0,8]})"), {"'w'", "must be an array"});
  open_expecting(one(R"({"dtype":"F32","shape":[2]})"), {"'w'", "missing \"data_offsets\""});
  open_expecting(one(R"({"dtype":"F32","shape":[2],"data_offsets":[0]})"), {"'w'", "[begin, end]"});
  open_expecting(one(R"({"dtype":"F32","shape":[2],"data_offsets":[8,0]})"), {"'w'", "end before they begin"});
  open_expecting(one(R"({"dtype":"F32","shape":[4294967296,4294967296,4294967296],"data_offsets":[0,8]})"),
                 {"'w'", "overflows"});
  open_expecting(one("[1]"), {"'w'", "must be an object"});
  open_expecting(safetensors_bytes(R"({"__metadata__":{"a":1}})", ""), {"__metadata__", "'a'", "must be a string"});
  open_expecting(safetensors_bytes(R"({"__metadata__":[]})", ""), {"__metadata__"});
}

TEST_F(Malformed, DeeplyNestedJsonIsNotACrash) {
  const size_t depth = 1'000'000;  // ~2 MB of header, far below the 100 MB bound
  std::string header = "{\"__metadata__\":" + std::string(depth, '[') + std::string(depth, ']') + "}";
  open_expecting(safetensors_bytes(header, ""), {"__metadata__"});
  header = "{\"w\":{\"dtype\":\"F32\",\"x\":" + std::string(depth, '[') + std::string(depth, ']') +
           ",\"shape\":[],\"data_offsets\":[0,4]}}";
  write_bytes(path, safetensors_bytes(header, "abcd"));  // unknown fields are ignored, as the reference does
  EXPECT_EQ(Checkpoint::open(path).size(), 1u);
}

TEST_F(Malformed, WrongByteCount) {
  open_expecting(safetensors_bytes(R"({"w":{"dtype":"F32","shape":[2,3],"data_offsets":[0,20]}})", std::string(24, '\0')),
                 {"'w'", "F32[2, 3] needs 24 bytes", "hold 20"});
  open_expecting(safetensors_bytes(R"({"w":{"dtype":"BF16","shape":[3],"data_offsets":[0,8]}})", std::string(8, '\0')),
                 {"'w'", "needs 6 bytes"});
}

TEST_F(Malformed, OffsetsOutOfRange) {
  open_expecting(safetensors_bytes(R"({"w":{"dtype":"U8","shape":[4],"data_offsets":[10,14]}})", std::string(12, '\0')),
                 {"'w'", "[10, 14]", "run past the data section (12 bytes)"});
  open_expecting(safetensors_bytes(R"({"w":{"dtype":"U8","shape":[1],"data_offsets":[18446744073709551615,0]}})", ""),
                 {"'w'"});
}

TEST_F(Malformed, OverlappingTensors) {
  open_expecting(safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                   R"("b":{"dtype":"F32","shape":[2],"data_offsets":[4,12]}})", std::string(12, '\0')),
                 {"'a'", "'b'", "overlap"});
  // Empty tensors own no bytes and may sit anywhere in range.
  write_bytes(path, safetensors_bytes(R"({"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},)"
                                      R"("e":{"dtype":"F32","shape":[0],"data_offsets":[4,4]}})", std::string(8, '\0')));
  EXPECT_EQ(Checkpoint::open(path).size(), 2u);
}

TEST_F(Malformed, UnalignedTensorIsCopiedAligned) {
  // A legal but unpadded file: a 1-byte tensor first, an F32 at data offset 1.
  std::string header = R"({"a":{"dtype":"U8","shape":[1],"data_offsets":[0,1]},"b":{"dtype":"F32","shape":[1],"data_offsets":[1,5]}})";
  header.append((8 - header.size() % 8) % 8, ' ');
  float v = 3.25f;
  std::string data(1, '\7');
  data.append(reinterpret_cast<const char*>(&v), 4);
  write_bytes(path, safetensors_bytes(header, data));
  Tensor b = Checkpoint::open(path).get("b");
  EXPECT_EQ(b.to_f32_vector(), std::vector<float>{3.25f});
  EXPECT_EQ(reinterpret_cast<uintptr_t>(b.data_ptr()) % 4, 0u);
}

TEST(Safetensors, ParseHeaderNeverCrashesOnTruncations) {
  TempDir dir;
  const std::string path = dir.file("t.safetensors");
  std::mt19937 rng(3);
  save_safetensors(path, {{"a", random_tensor({2, 3}, DType::BF16, rng)}, {"b", random_tensor({5}, DType::I64, rng)}},
                   {{"k", "v"}});
  const std::string bytes = test::read_bytes(path);
  size_t errors = 0;
  for (size_t n = 0; n < bytes.size(); ++n) {
    try {
      parse_safetensors_header(reinterpret_cast<const uint8_t*>(bytes.data()), n, "t");
    } catch (const Error&) {
      ++errors;
    }
  }
  EXPECT_EQ(errors, bytes.size());  // every strict prefix is rejected
}

}  // namespace
}  // namespace vidax::io
