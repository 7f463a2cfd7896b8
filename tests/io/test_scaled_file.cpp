// The scaled fp8 / int8 file convention (docs/quantization.md "fp8 and int8"): a
// `<p>.scale_weight` beside an fp8/int8 `<p>.weight` is folded into it by the reader (the
// `scaled_fp8` marker and `scale_input` dropped); a scale of the wrong shape, a scale beside a
// wide weight or beside no weight is refused naming the file and the tensor.
#include <gtest/gtest.h>

#include <cstdio>

#include "core/error.h"
#include "core/rng.h"
#include "io/checkpoint.h"

namespace vidax {
namespace {

Tensor randn(const Shape& s, uint64_t seed) {
  TorchGenerator g(seed);
  return g.randn(s, DType::F32);
}

TEST(ScaledWeight, FileConventionFoldsTheScale) {
  const std::string path = ::testing::TempDir() + "/scaled_fp8.safetensors";
  const Tensor w = Tensor::quantize_scaled(randn({64, 48}, 9), DType::F8_E4M3);
  std::map<std::string, Tensor> t;
  io::split_scaled("blocks.0.q.weight", w, t);
  ASSERT_EQ(t.size(), 2u);
  EXPECT_TRUE(t.count("blocks.0.q.scale_weight"));
  t.emplace("blocks.0.q.bias", randn({64}, 10));
  t.emplace("blocks.0.q.scale_input", Tensor::from_f32({1.0f}, {}));
  t.emplace("scaled_fp8", Tensor::empty({0}, DType::F8_E4M3));
  io::save_safetensors(path, t);
  const io::Checkpoint c = io::Checkpoint::open(path);
  EXPECT_EQ(c.names(), (std::vector<std::string>{"blocks.0.q.bias", "blocks.0.q.weight"}));
  EXPECT_TRUE(c.info("blocks.0.q.weight").scaled);
  EXPECT_EQ(c.info("blocks.0.q.weight").type_name(), "F8_E4M3*scale");
  const Tensor got = c.get("blocks.0.q.weight");
  ASSERT_TRUE(got.is_scaled());
  EXPECT_EQ(got.to_f32_vector(), w.to_f32_vector());
  std::remove(path.c_str());
}

TEST(ScaledWeight, AScaleOfTheWrongShapeIsRefusedNamingFileAndTensor) {
  const std::string path = ::testing::TempDir() + "/scaled_bad.safetensors";
  const Tensor w = Tensor::quantize_scaled(randn({64, 48}, 9), DType::F8_E4M3);
  std::map<std::string, Tensor> t;
  t.emplace("blocks.0.q.weight", w.unscaled());
  t.emplace("blocks.0.q.scale_weight", Tensor::from_f32({1, 2, 3}, {3}));
  io::save_safetensors(path, t);
  try {
    io::Checkpoint::open(path);
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find(path), std::string::npos) << m;
    EXPECT_NE(m.find("blocks.0.q.scale_weight"), std::string::npos) << m;
    EXPECT_NE(m.find("[3]"), std::string::npos) << m;
  }
  // A scale beside a wide weight, and one whose weight is missing, are refused too.
  t.clear();
  t.emplace("a.weight", randn({4, 4}, 1));
  t.emplace("a.scale_weight", Tensor::from_f32({1.0f}, {}));
  io::save_safetensors(path, t);
  EXPECT_THROW(io::Checkpoint::open(path), Error);
  t.clear();
  t.emplace("b.scale_weight", Tensor::from_f32({1.0f}, {}));
  io::save_safetensors(path, t);
  EXPECT_THROW(io::Checkpoint::open(path), Error);
  std::remove(path.c_str());
}

}  // namespace
}  // namespace vidax
