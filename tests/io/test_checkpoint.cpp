// Checkpoint::open on directories and sharded *.safetensors.index.json files.
#include <gtest/gtest.h>

#include <filesystem>

#include "io/checkpoint.h"
#include "io_test_util.h"

namespace vidax::io {
namespace {

using test::TempDir;

struct Sharded {
  TempDir dir;
  std::string index = dir.file("model.safetensors.index.json");
  Sharded() {
    save_safetensors(dir.file("model-00001-of-00002.safetensors"),
                     {{"a.weight", Tensor::from_f32({1, 2}, {2})}, {"b.weight", Tensor::from_f32({3}, {1})}},
                     {{"format", "pt"}});
    save_safetensors(dir.file("model-00002-of-00002.safetensors"), {{"c.bias", Tensor::from_i64({4, 5}, {2})}},
                     {{"format", "pt"}});
  }
  void write_index(const std::string& weight_map) {
    test::write_bytes(index, R"({"metadata": {"total_size": 28}, "weight_map": )" + weight_map + "}");
  }
};

constexpr const char* kGoodMap = R"({"a.weight": "model-00001-of-00002.safetensors",
  "b.weight": "model-00001-of-00002.safetensors", "c.bias": "model-00002-of-00002.safetensors"})";

TEST(Checkpoint, ShardedIndex) {
  Sharded s;
  s.write_index(kGoodMap);
  Checkpoint ck = Checkpoint::open(s.index);
  EXPECT_EQ(ck.names(), (std::vector<std::string>{"a.weight", "b.weight", "c.bias"}));
  EXPECT_EQ(ck.get("c.bias").to_f64_vector(), (std::vector<double>{4, 5}));
  EXPECT_EQ(ck.info("c.bias").file, s.dir.file("model-00002-of-00002.safetensors"));
  EXPECT_EQ(ck.metadata().at("format"), "pt");
  EXPECT_VIDAX_ERROR(ck.get("d"), "no tensor 'd'");
  EXPECT_VIDAX_ERROR(ck.info("d"), "no tensor 'd'");
}

TEST(Checkpoint, ShardedIndexMustMatchItsShards) {
  Sharded s;
  s.write_index(R"({"a.weight": "model-00001-of-00002.safetensors", "b.weight": "model-00001-of-00002.safetensors",
                    "c.bias": "model-00002-of-00002.safetensors", "zz": "model-00002-of-00002.safetensors"})");
  EXPECT_VIDAX_ERROR(Checkpoint::open(s.index), s.index, "'zz'", "does not hold it");
  s.write_index(R"({"a.weight": "model-00001-of-00002.safetensors", "c.bias": "model-00002-of-00002.safetensors"})");
  EXPECT_VIDAX_ERROR(Checkpoint::open(s.index), "'b.weight'", "which the index does not list");
  s.write_index(R"({"a.weight": "missing.safetensors"})");
  EXPECT_VIDAX_ERROR(Checkpoint::open(s.index), "missing.safetensors", "cannot open");
  s.write_index(R"({"a.weight": "../x.safetensors"})");
  EXPECT_VIDAX_ERROR(Checkpoint::open(s.index), "not a file beside the index");
  s.write_index(R"({"a.weight": 3})");
  EXPECT_VIDAX_ERROR(Checkpoint::open(s.index), "'a.weight' is not a file name");
  test::write_bytes(s.index, "{\"weight_map\": ");
  EXPECT_VIDAX_ERROR(Checkpoint::open(s.index), s.index, "not valid JSON");
  test::write_bytes(s.index, "{}");
  EXPECT_VIDAX_ERROR(Checkpoint::open(s.index), "no \"weight_map\"");
}

TEST(Checkpoint, Directory) {
  Sharded s;
  s.write_index(kGoodMap);  // ignored: the directory's files are read directly
  test::write_bytes(s.dir.file("notes.txt"), "not a checkpoint");
  std::filesystem::copy_file(test::data_dir() + "/torch_fixture.pth", s.dir.file("extra.pth"));
  Checkpoint ck = Checkpoint::open(s.dir.path.string());
  EXPECT_EQ(ck.size(), 3u + 23u);
  EXPECT_EQ(ck.get("a.weight").to_f32_vector(), (std::vector<float>{1, 2}));
  EXPECT_EQ(ck.get("state_dict.scalar").to_f32_vector(), std::vector<float>{2.5f});
}

TEST(Checkpoint, DirectoryWithTheSameTensorTwice) {
  TempDir dir;
  save_safetensors(dir.file("a.safetensors"), {{"w", Tensor::from_f32({1}, {1})}});
  save_safetensors(dir.file("b.safetensors"), {{"w", Tensor::from_f32({1}, {1})}});
  EXPECT_VIDAX_ERROR(Checkpoint::open(dir.path.string()), "'w'", "a.safetensors", "b.safetensors");
}

TEST(Checkpoint, MissingAndUnknownInputs) {
  TempDir dir;
  EXPECT_VIDAX_ERROR(Checkpoint::open(dir.file("nope.safetensors")), "nope.safetensors", "no such file");
  EXPECT_VIDAX_ERROR(Checkpoint::open(dir.path.string()), "holds no");
  test::write_bytes(dir.file("x.bin"), "hello world, not weights");
  EXPECT_VIDAX_ERROR(Checkpoint::open(dir.file("x.bin")), "x.bin", "unrecognised checkpoint format");
  test::write_bytes(dir.file("g.gguf"), std::string("GGUF\1\0\0\0", 8));
  EXPECT_VIDAX_ERROR(Checkpoint::open(dir.file("g.gguf")), "g.gguf", "GGUF version 1 is not supported");
}

TEST(Checkpoint, FormatIsSniffedNotTakenFromTheExtension) {
  TempDir dir;
  save_safetensors(dir.file("pytorch_model.bin"), {{"w", Tensor::from_f32({7}, {1})}});
  EXPECT_EQ(Checkpoint::open(dir.file("pytorch_model.bin")).get("w").to_f32_vector(), std::vector<float>{7});
  std::filesystem::copy_file(test::data_dir() + "/torch_fixture.pth", dir.file("weights.safetensors"));
  EXPECT_EQ(Checkpoint::open(dir.file("weights.safetensors")).size(), 23u);
}

// A safetensors header of 1408 (0x580) bytes makes the file begin 0x80 0x05, a pickle protocol-5
// opening: it was taken for a torch legacy file (bug 94). Padded headers of 640 / 896 / 1152 / 1408
// bytes are read as safetensors; the torch legacy fixture still is torch.
TEST(Checkpoint, SafetensorsWhoseHeaderLengthLooksLikeAPickleOpening) {
  TempDir dir;
  for (const uint64_t len : {640, 896, 1152, 1408}) {
    std::string header = R"({"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
    header.append(len - header.size(), ' ');
    const std::string path = dir.file("h" + std::to_string(len) + ".safetensors");
    test::write_bytes(path, test::safetensors_bytes(header, std::string("\0\0\x80\x3f", 4)));
    const std::string bytes = test::read_bytes(path);
    ASSERT_EQ(static_cast<uint8_t>(bytes[0]), 0x80) << len;
    EXPECT_EQ(Checkpoint::open(path).get("w").to_f32_vector(), std::vector<float>{1}) << len;
  }
  std::filesystem::copy_file(test::data_dir() + "/torch_fixture_legacy.pth", dir.file("legacy.pth"));
  EXPECT_GT(Checkpoint::open(dir.file("legacy.pth")).size(), 0u);
}

}  // namespace
}  // namespace vidax::io
