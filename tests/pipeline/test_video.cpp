// Video output: tensor -> RGB conversion as the reference's cache_video, MP4
// round trip through libavformat, PNG/Y4M writers, atomic temp-file handling.
#include <gtest/gtest.h>

#include "scratch.h"
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>

#include "io/video.h"

namespace fs = std::filesystem;
using namespace vidax;

namespace {

fs::path scratch(const std::string& name) {
  static const fs::path d = vidax::test::scratch_dir("video");
  return d / name;
}

// A smooth moving gradient: compresses well, so a lossy round trip stays close.
io::RgbVideo gradient_video(int64_t frames, int64_t h, int64_t w) {
  io::RgbVideo v;
  v.frames = frames;
  v.height = h;
  v.width = w;
  v.rgb.resize(static_cast<size_t>(frames * h * w * 3));
  for (int64_t f = 0; f < frames; ++f)
    for (int64_t y = 0; y < h; ++y)
      for (int64_t x = 0; x < w; ++x) {
        uint8_t* p = v.frame(f) + (y * w + x) * 3;
        p[0] = static_cast<uint8_t>(40 + (x * 160) / w);
        p[1] = static_cast<uint8_t>(40 + (y * 160) / h);
        p[2] = static_cast<uint8_t>(60 + f * 10);
      }
  return v;
}

bool has_leftover_partial(const fs::path& dir) {
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".partial-") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(VideoTensor, MatchesReferenceCacheVideoArithmetic) {
  // Values chosen at the edges of the rounding: the reference truncates after *255.
  std::vector<float> vals = {-2.0f, -1.0f, 0.0f, 1.0f, 3.0f, 0.999f, -0.999f, 0.5f};
  std::vector<float> data;
  for (int c = 0; c < 3; ++c)
    for (float v : vals) data.push_back(c == 0 ? v : -v);
  Tensor t = Tensor::from_f32(data, {3, 1, 2, 4});
  io::RgbVideo rgb = io::rgb_from_video_tensor(t);
  ASSERT_EQ(rgb.frames, 1);
  ASSERT_EQ(rgb.height, 2);
  ASSERT_EQ(rgb.width, 4);
  auto expected = [](float x) {
    x = std::clamp(x, -1.0f, 1.0f);
    x = (x + 1.0f) / 2.0f;
    return static_cast<uint8_t>(x * 255.0f);
  };
  for (size_t i = 0; i < vals.size(); ++i) {
    EXPECT_EQ(rgb.rgb[i * 3 + 0], expected(vals[i])) << "value " << vals[i];
    EXPECT_EQ(rgb.rgb[i * 3 + 1], expected(-vals[i]));
  }
  EXPECT_EQ(rgb.rgb[0], 0);        // -2 clamps to 0
  EXPECT_EQ(rgb.rgb[2 * 3], 127);  // 0 -> 127.5 truncated
  EXPECT_EQ(rgb.rgb[3 * 3], 255);
}

TEST(VideoTensor, RejectsWrongShape) {
  Tensor t = Tensor::zeros({4, 1, 2, 2}, DType::F32);
  try {
    io::rgb_from_video_tensor(t);
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected [3, F, H, W]"), std::string::npos) << e.what();
  }
}

TEST(VideoMp4, RoundTripFramesSizeFpsMetadata) {
  const fs::path out = scratch("roundtrip.mp4");
  io::RgbVideo v = gradient_video(9, 48, 64);
  io::VideoWriteOptions opt;
  opt.fps = 16;
  opt.metadata["comment"] = R"({"seed":42,"steps":3})";
  opt.metadata["description"] = "a red panda";
  io::write_mp4(out.string(), v, opt);
  ASSERT_TRUE(fs::exists(out));
  EXPECT_FALSE(has_leftover_partial(out.parent_path()));

  io::RgbVideo back;
  io::VideoFileInfo info = io::read_video(out.string(), &back);
  EXPECT_EQ(info.codec, "h264");
  EXPECT_EQ(info.pixel_format, "yuv420p");
  EXPECT_EQ(info.frames, 9);
  EXPECT_EQ(info.width, 64);
  EXPECT_EQ(info.height, 48);
  EXPECT_NEAR(info.fps, 16.0, 1e-9);
  EXPECT_EQ(info.metadata["comment"], R"({"seed":42,"steps":3})");
  EXPECT_EQ(info.metadata["description"], "a red panda");
  // crf 10 on a smooth gradient: decoded pixels stay within a few levels.
  ASSERT_EQ(back.rgb.size(), v.rgb.size());
  double err = 0;
  for (size_t i = 0; i < v.rgb.size(); ++i) err += std::abs(int(v.rgb[i]) - int(back.rgb[i]));
  EXPECT_LT(err / v.rgb.size(), 3.0);
}

TEST(VideoMp4, OddSizeIsAClearError) {
  const fs::path out = scratch("odd.mp4");
  io::RgbVideo v = gradient_video(1, 15, 16);
  try {
    io::write_mp4(out.string(), v, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("even width and height"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(fs::exists(out));
}

TEST(VideoMp4, InterruptLeavesNothingBehind) {
  const fs::path out = scratch("interrupted.mp4");
  fs::remove(out);
  io::RgbVideo v = gradient_video(5, 32, 32);
  io::VideoWriteOptions opt;
  int calls = 0;
  opt.poll = [&] {
    if (++calls == 3) throw Error("interrupted (test)");
  };
  EXPECT_THROW(io::write_mp4(out.string(), v, opt), Error);
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(has_leftover_partial(out.parent_path()));
}

TEST(VideoMp4, MissingDirectoryIsAClearError) {
  io::RgbVideo v = gradient_video(1, 16, 16);
  try {
    io::write_mp4("/nonexistent_vidax_dir/x.mp4", v, {});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("does not exist"), std::string::npos) << e.what();
  }
}

TEST(VideoPng, WritesOneLosslessFilePerFrame) {
  const fs::path out = scratch("frames");
  fs::remove_all(out);
  io::RgbVideo v = gradient_video(3, 16, 24);
  io::write_png_frames(out.string(), v, {});
  ASSERT_TRUE(fs::is_directory(out));
  for (int f = 0; f < 3; ++f) {
    char name[32];
    std::snprintf(name, sizeof name, "frame_%05d.png", f);
    io::RgbVideo back;
    io::VideoFileInfo info = io::read_video((out / name).string(), &back);
    EXPECT_EQ(info.codec, "png");
    ASSERT_EQ(back.frames, 1);
    EXPECT_TRUE(std::equal(back.rgb.begin(), back.rgb.end(), v.frame(f))) << name;
  }
  EXPECT_THROW(io::write_png_frames(out.string(), v, {}), Error);  // refuses to replace
}

TEST(VideoY4m, HeaderAndSize) {
  const fs::path out = scratch("v.y4m");
  io::RgbVideo v = gradient_video(2, 8, 6);
  io::VideoWriteOptions opt;
  opt.fps = 16;
  io::write_y4m(out.string(), v, opt);
  std::ifstream is(out, std::ios::binary);
  std::string header;
  std::getline(is, header);
  EXPECT_EQ(header, "YUV4MPEG2 W6 H8 F16:1 Ip A1:1 C444 XCOLORRANGE=LIMITED");
  const auto size = fs::file_size(out);
  EXPECT_EQ(size, header.size() + 1 + 2 * (6 + 3 * 8 * 6));
  io::RgbVideo back;
  io::VideoFileInfo info = io::read_video(out.string(), &back);
  EXPECT_EQ(info.frames, 2);
  EXPECT_NEAR(info.fps, 16.0, 1e-9);
}
