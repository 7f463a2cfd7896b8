#include <gtest/gtest.h>

#include "error_of.h"
#include "scratch.h"
#include <unistd.h>

#include <filesystem>

#include "core/error.h"
#include "core/rng.h"
#include "io/checkpoint.h"
#include "pipeline/generate.h"

using namespace vidax;
using namespace vidax::pipeline;

using test::error_of;

TEST(Generate, NoiseFile) {
  namespace fs = std::filesystem;
  const fs::path dir = vidax::test::scratch_dir("noise");
  const Shape shape{16, 2, 4, 6};
  TorchGenerator g(3);
  Tensor n = g.randn({1, 16, 2, 4, 6});
  io::save_safetensors((dir / "n.safetensors").string(), {{"noise", n}});
  Tensor back = read_noise_file((dir / "n.safetensors").string(), shape);
  EXPECT_EQ(back.shape(), shape);
  EXPECT_EQ(back.to_f32_vector(), n.to_f32_vector());
  io::save_safetensors((dir / "two.safetensors").string(), {{"a", n}, {"b", n}});
  std::string e = error_of([&] { read_noise_file((dir / "two.safetensors").string(), shape); });
  EXPECT_NE(e.find("holds 2 tensors and none is named 'noise' or 'latents'"), std::string::npos) << e;
  e = error_of([&] { read_noise_file((dir / "n.safetensors").string(), {16, 3, 4, 6}); });
  EXPECT_NE(e.find("tensor 'noise' has shape [1, 16, 2, 4, 6], the request needs [16, 3, 4, 6]"), std::string::npos)
      << e;
  fs::remove_all(dir);
}
