// write_output: each format lands at its path with its sidecar, carries the run
// parameters, and nothing temporary is left behind.
#include <gtest/gtest.h>

#include "scratch.h"
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "io/checkpoint.h"
#include "io/video.h"
#include "pipeline/output.h"

namespace fs = std::filesystem;
using namespace vidax;
using namespace vidax::pipeline;

namespace {

fs::path fresh_dir() {
  return vidax::test::scratch_dir("output");
}

Tensor ramp_video(int64_t f, int64_t h, int64_t w) {
  std::vector<float> v(static_cast<size_t>(3 * f * h * w));
  for (size_t i = 0; i < v.size(); ++i) v[i] = -1.0f + 2.0f * static_cast<float>(i % 97) / 96.0f;
  return Tensor::from_f32(v, {3, f, h, w});
}

nlohmann::json params() {
  return {{"model", "wan2.1-tiny-demo"}, {"prompt", "a red panda"}, {"seed", 42}, {"steps", 3},
          {"sampler", "unipc"},          {"shift", 5.0},              {"guidance", 5.0}, {"vidax_version", "0.1.0"}};
}

nlohmann::json read_json(const fs::path& p) {
  std::ifstream is(p);
  return nlohmann::json::parse(is);
}

}  // namespace

TEST(Output, FormatNames) {
  EXPECT_EQ(output_format_from_path("a/b.mp4"), OutputFormat::Mp4);
  EXPECT_EQ(output_format_from_path("b.y4m"), OutputFormat::Y4m);
  EXPECT_EQ(output_format_from_path("b.safetensors"), OutputFormat::Latents);
  EXPECT_EQ(output_format_from_path("frames"), OutputFormat::Png);
  EXPECT_EQ(parse_output_format("latents"), OutputFormat::Latents);
  try {
    parse_output_format("gif");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(std::string(e.what()), "--output-format gif: unknown; choose one of mp4, png, y4m, latents");
  }
}

TEST(Output, Mp4CarriesTheParameters) {
  const fs::path d = fresh_dir();
  OutputRequest r;
  r.path = (d / "v.mp4").string();
  r.format = OutputFormat::Mp4;
  r.params = params();
  const std::string sidecar = write_output(r, ramp_video(5, 16, 32), Tensor());
  EXPECT_EQ(sidecar, r.path + ".json");
  io::VideoFileInfo info = io::read_video(r.path);
  EXPECT_EQ(info.frames, 5);
  EXPECT_EQ(info.width, 32);
  EXPECT_EQ(info.height, 16);
  EXPECT_EQ(info.metadata["description"], "a red panda");
  const auto tags = nlohmann::json::parse(info.metadata["comment"]);
  EXPECT_EQ(tags["seed"], 42);
  EXPECT_EQ(tags["sampler"], "unipc");
  EXPECT_EQ(tags["output_format"], "mp4");
  const auto side = read_json(sidecar);
  EXPECT_EQ(side, tags);
  for (auto& e : fs::directory_iterator(d))
    EXPECT_EQ(e.path().filename().string().find(".partial-"), std::string::npos) << e.path();
  fs::remove_all(d);
}

TEST(Output, LatentsAsSafetensors) {
  const fs::path d = fresh_dir();
  OutputRequest r;
  r.path = (d / "x.safetensors").string();
  r.format = OutputFormat::Latents;
  r.params = params();
  Tensor lat = Tensor::from_f32(std::vector<float>(16 * 2 * 2 * 3, 0.5f), {16, 2, 2, 3});
  write_output(r, Tensor(), lat);
  io::Checkpoint ck = io::Checkpoint::open(r.path);
  ASSERT_TRUE(ck.contains("latents"));
  EXPECT_EQ(ck.get("latents").to_f32_vector(), lat.to_f32_vector());
  EXPECT_EQ(nlohmann::json::parse(ck.metadata().at("vidax.params"))["prompt"], "a red panda");
  EXPECT_TRUE(fs::exists(r.path + ".json"));
  fs::remove_all(d);
}
