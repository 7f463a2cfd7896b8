// Wan 2.1 image-to-video and first-last-frame: the conditioning rules against values computed by
// the reference's own expressions, the official WanI2V / WanFLF2V.generate goldens
// (tools/golden/wan_i2v_pipeline.py), image files, and `vidax generate --image` on the tiny demos.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>

#include "cli_child.h"
#include "core/error.h"
#include "engine/builtin_kinds.h"
#include "io/image_resize.h"
#include "io/video.h"
#include "models/wan/i2v_conditioning.h"
#include "parity/parity.h"
#include "pipeline/scratch.h"

namespace fs = std::filesystem;
using namespace vidax;

namespace {

const std::string kData = VIDAX_TEST_DATA_DIR;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

// A [3, H, W] F32 ramp image in [-1, 1] (distinct values per pixel and channel).
Tensor ramp_image(int64_t h, int64_t w) {
  std::vector<float> v(static_cast<size_t>(3 * h * w));
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i % 251) / 125.0f - 1.0f;
  return Tensor::from_f32(v, {3, h, w}, DType::F32);
}

// An 8-bit RGB picture written as a PNG through the io layer (write_png_frames' first frame).
fs::path write_png(const fs::path& dir, int64_t h, int64_t w, uint8_t seed) {
  io::RgbVideo v;
  v.frames = 1;
  v.height = h;
  v.width = w;
  v.rgb.resize(v.frame_bytes());
  for (size_t i = 0; i < v.rgb.size(); ++i) v.rgb[i] = static_cast<uint8_t>((i * 7 + seed * 31) % 256);
  const fs::path frames = dir / ("png_" + std::to_string(seed));
  io::write_png_frames(frames.string(), v, {});
  return frames / "frame_00000.png";
}

}  // namespace

// lat_h, lat_w as image2video.py computes them (values from its expression run in Python).
TEST(I2VSize, FollowsTheImageAspectAtTheRequestedArea) {
  struct Case {
    int64_t h, w, area, lat_h, lat_w;
  };
  for (const Case& c : std::vector<Case>{{720, 1280, 480 * 832, 58, 104},
                                         {1280, 720, 480 * 832, 104, 58},
                                         {480, 832, 720 * 1280, 90, 156},
                                         {1024, 1024, 480 * 832, 78, 78},
                                         {40, 56, 32 * 48, 4, 4},
                                         {56, 40, 16 * 32, 2, 2},
                                         {3000, 100, 480 * 832, 432, 14},
                                         {333, 777, 720 * 1280, 78, 182}}) {
    const auto [lh, lw] = wan::i2v_latent_size(c.h, c.w, c.area);
    EXPECT_EQ(lh, c.lat_h) << c.h << "x" << c.w;
    EXPECT_EQ(lw, c.lat_w) << c.h << "x" << c.w;
  }
  // An aspect ratio so extreme that a side is empty: an error naming the sizes, not a 0-pixel video.
  const std::string e = error_of([] { (void)wan::i2v_latent_size(4000, 10, 16 * 32); });
  EXPECT_NE(e.find("a side is empty"), std::string::npos) << e;
  EXPECT_NE(e.find("10x4000"), std::string::npos) << e;
}

TEST(I2VMask, OnesOnTheGivenFramesOnly) {
  const Tensor m = wan::i2v_mask(9, 2, 3, false);  // 3 latent frames
  ASSERT_EQ(m.shape(), (Shape{4, 3, 2, 3}));
  const auto v = m.to_f32_vector();
  for (int64_t c = 0; c < 4; ++c)
    for (int64_t f = 0; f < 3; ++f)
      for (int64_t i = 0; i < 6; ++i) EXPECT_EQ(v[static_cast<size_t>((c * 3 + f) * 6 + i)], f == 0 ? 1.0f : 0.0f);
  // FLF2V: the last frame is element 3 of the last latent frame's group of 4.
  const auto l = wan::i2v_mask(81, 1, 1, true).to_f32_vector();  // [4, 21, 1, 1]
  for (int64_t c = 0; c < 4; ++c)
    for (int64_t f = 0; f < 21; ++f)
      EXPECT_EQ(l[static_cast<size_t>(c * 21 + f)], f == 0 || (f == 20 && c == 3) ? 1.0f : 0.0f) << c << "," << f;
}

// torchvision's center_crop on tensors (values printed by torchvision 0.29.2): a crop larger than
// the image pads with zeros, (d // 2) before; offsets round halves to even.
TEST(CenterCrop, PadsAndRoundsAsTorchvision) {
  std::vector<float> v(15);
  for (size_t i = 0; i < v.size(); ++i) v[i] = static_cast<float>(i + 1);
  const Tensor x = Tensor::from_f32(v, {1, 3, 5}, DType::F32);
  EXPECT_EQ(io::center_crop(x, 6, 2).to_f32_vector(),
            (std::vector<float>{0, 0, 3, 4, 8, 9, 13, 14, 0, 0, 0, 0}));
  EXPECT_EQ(io::center_crop(x, 2, 6).to_f32_vector(),
            (std::vector<float>{1, 2, 3, 4, 5, 0, 6, 7, 8, 9, 10, 0}));
  EXPECT_EQ(io::center_crop(x, 1, 4).to_f32_vector(), (std::vector<float>{6, 7, 8, 9}));  // top round(1.0), left round(0.5) = 0
}

TEST(FLF2VLastFrame, ResizesAndCropsAsTheReferenceDoes) {
  const Tensor first = ramp_image(56, 40), last = ramp_image(30, 50);
  std::string note;
  // ratio max(40/50, 56/30) = 1.8667: [round(93.3), round(56)] = [93, 56] read as (height, width).
  const Tensor out = wan::flf2v_last_frame(first, last, &note);
  EXPECT_EQ(out.shape(), (Shape{3, 93, 56}));
  EXPECT_NE(note.find("differs in size"), std::string::npos) << note;
  // Same size: unchanged, no note.
  std::string none;
  EXPECT_EQ(wan::flf2v_last_frame(first, ramp_image(56, 40), &none).shape(), (Shape{3, 56, 40}));
  EXPECT_TRUE(none.empty());
}

// The official generate() on tiny weights: image preprocessing, CLIP, the VAE-encoded conditioning,
// the mask, the UniPC loop with CFG and the task's negative prompt, the decode.
TEST(I2VGolden, MatchesOfficialGenerate) {
  engine::register_builtin_kinds();
  for (const char* name : {"wan_i2v_tiny", "wan_flf2v_tiny"}) {
    parity::Options opt;
    opt.rtol = 3e-5;  // the video; the latents are checked at 1e-5 below
    const parity::Report r = parity::run(kData + "/golden/pipeline/" + name + ".safetensors", opt);
    EXPECT_TRUE(r.ok()) << name;
    bool saw_latents = false, saw_z = false;
    for (const auto& row : r.rows) {
      if (row.name == "output.latents") {
        saw_latents = true;
        EXPECT_LT(row.rel_l2, 1e-5) << name;
      }
      if (row.name == "inter.z") {
        saw_z = true;
        EXPECT_LT(row.rel_l2, 1e-5) << name;
      }
      if (row.name == "inter.noise" || row.name == "inter.timesteps") {
        EXPECT_EQ(row.max_abs, 0.0) << name << " " << row.name;
      }
    }
    EXPECT_TRUE(saw_latents && saw_z) << name;
  }
}

// The control: the same golden with its image mirrored must fail (the image reaches the result).
TEST(I2VGolden, AnotherImageFails) {
  engine::register_builtin_kinds();
  const fs::path d = vidax::test::scratch_dir("i2v_control");
  io::Checkpoint g = io::Checkpoint::open(kData + "/golden/pipeline/wan_i2v_tiny.safetensors");
  std::map<std::string, Tensor> t;
  for (const auto& n : g.names()) t[n] = g.get(n).contiguous();
  const Tensor img = t["input.image"];
  std::vector<float> v = img.to_f32_vector();
  const int64_t H = img.size(1), W = img.size(2);
  std::vector<float> m(v.size());
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < H; ++y)
      for (int64_t x = 0; x < W; ++x) m[static_cast<size_t>((c * H + y) * W + x)] = v[static_cast<size_t>((c * H + y) * W + (W - 1 - x))];
  t["input.image"] = Tensor::from_f32(m, img.shape(), DType::F32);
  std::map<std::string, std::string> meta = g.metadata();
  nlohmann::json cfg = nlohmann::json::parse(meta.at("config"));
  cfg["weights"] = (fs::path(kData) / "golden/pipeline/wan_i2v_tiny").string();
  meta["config"] = cfg.dump();
  const std::string path = (d / "mirrored.safetensors").string();
  io::save_safetensors(path, t, meta);
  const parity::Report r = parity::run(path, {});
  EXPECT_FALSE(r.ok());
  bool seen = false;
  for (const auto& row : r.rows) {
    if (row.name != "output.latents") continue;
    seen = true;
    EXPECT_EQ(row.status, parity::Comparison::Status::Fail);
    EXPECT_GT(row.rel_l2, 1e-3);
    std::printf("mirrored image: latents rel_l2 %.3g\n", row.rel_l2);
  }
  EXPECT_TRUE(seen);
}

TEST(ReadImage, PngPixelsAreExactAndScaledToMinusOneOne) {
  const fs::path d = vidax::test::scratch_dir("read_image");
  const fs::path png = write_png(d, 5, 7, 3);
  const Tensor t = io::read_image(png.string());
  ASSERT_EQ(t.shape(), (Shape{3, 5, 7}));
  const auto v = t.to_f32_vector();
  for (int64_t i = 0; i < 35; ++i)
    for (int64_t c = 0; c < 3; ++c) {
      const uint8_t byte = static_cast<uint8_t>(((i * 3 + c) * 7 + 3 * 31) % 256);
      const float want = (static_cast<float>(byte) / 255.0f - 0.5f) / 0.5f;
      EXPECT_EQ(v[static_cast<size_t>(c * 35 + i)], want) << i << "," << c;
    }
  // Not an image: the file and the option are named.
  const fs::path junk = d / "junk.png";
  { std::ofstream(junk) << "not a picture"; }
  const std::string e = error_of([&] { (void)io::read_image(junk.string(), "--image"); });
  EXPECT_NE(e.find("cannot read the --image " + junk.string()), std::string::npos) << e;
}

// `vidax generate --image` / `--last-image` on the tiny demos, and the bad inputs, each refused
// before any weight is read with a message naming the option.
TEST(I2VCli, GeneratesOnTheTinyDemosAndRefusesBadImages) {
  namespace cli = vidax::test::cli;
  const fs::path d = vidax::test::scratch_dir("i2v_cli");
  const std::string i2v = (d / "i2v").string(), flf = (d / "flf").string(), t2v = (d / "t2v").string();
  for (const auto& [dir, model] : std::vector<std::pair<std::string, std::string>>{
           {i2v, "wan2.1-i2v-tiny-demo"}, {flf, "wan2.1-flf2v-tiny-demo"}, {t2v, "wan2.1-tiny-demo"}}) {
    const auto r = cli::run({"make-demo", dir, "--model", model, "--tokenizer", cli::tiny_spiece()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const std::string img = write_png(d, 40, 56, 1).string(), last = write_png(d, 30, 50, 2).string();
  const std::vector<std::string> base{"generate", "--prompt", "a cat", "--seed", "3", "--steps", "2"};
  auto gen = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return cli::run(a, {.timeout_s = 300});
  };
  {
    const std::string out = (d / "i2v.y4m").string();
    const auto r = gen({"--weights", i2v, "--image", img, "-o", out});
    ASSERT_EQ(r.code, 0) << r.err;
    // The image's aspect ratio at the demo's 96x64 area: 80x64, and the user is told so.
    EXPECT_NE(r.err.find("the video is 80x64"), std::string::npos) << r.err;
    const io::VideoFileInfo info = io::read_video(out);
    EXPECT_EQ(info.width, 80);
    EXPECT_EQ(info.height, 64);
    EXPECT_EQ(info.frames, 5);
  }
  {
    const auto r = gen({"--weights", flf, "--image", img, "--last-image", last, "-o", (d / "flf.y4m").string()});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("the last frame (50x30) differs in size"), std::string::npos) << r.err;
  }
  struct Bad {
    std::vector<std::string> args;
    std::string says;
  };
  const std::string junk = (d / "junk.png").string();
  { std::ofstream(junk) << "not a picture"; }
  for (const Bad& b : std::vector<Bad>{
           {{"--weights", t2v, "--image", img}, "--image: wan2.1-tiny-demo takes no image"},
           {{"--weights", i2v}, "give --image FILE"},
           {{"--weights", i2v, "--last-image", last}, "--last-image needs --image"},
           {{"--weights", i2v, "--image", img, "--last-image", last}, "takes no last frame"},
           {{"--weights", flf, "--image", img}, "give --image FILE and --last-image FILE"},
           {{"--weights", i2v, "--image", junk}, "cannot read the --image " + junk},
           {{"--weights", i2v, "--image", (d / "missing.png").string()}, "cannot read the --image"},
       }) {
    std::vector<std::string> a = b.args;
    a.insert(a.end(), {"-o", (d / "bad.y4m").string()});
    const auto r = gen(a);
    EXPECT_NE(r.code, 0) << b.says;
    EXPECT_NE(r.err.find(b.says), std::string::npos) << "expected '" << b.says << "' in: " << r.err;
    EXPECT_EQ(r.err.find("loading the DiT"), std::string::npos) << "refused only after loading: " << r.err;
    EXPECT_FALSE(fs::exists(d / "bad.y4m"));
  }
}

// The image may come as the picture's bytes ([H, W, 3] U8) or as a file named by the config, as a
// reference script may store it: the same run, the same pass.
TEST(I2VGolden, TakesTheImageAsBytesOrAsAFile) {
  engine::register_builtin_kinds();
  const fs::path d = vidax::test::scratch_dir("i2v_forms");
  io::Checkpoint g = io::Checkpoint::open(kData + "/golden/pipeline/wan_i2v_tiny.safetensors");
  std::map<std::string, Tensor> t;
  for (const auto& n : g.names()) t[n] = g.get(n).contiguous();
  const Tensor img = t["input.image"];
  const int64_t H = img.size(1), W = img.size(2);
  const auto v = img.to_f32_vector();
  std::vector<uint8_t> bytes(static_cast<size_t>(H * W * 3));
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < H * W; ++i)
      bytes[static_cast<size_t>(i * 3 + c)] =
          static_cast<uint8_t>(std::lround((v[static_cast<size_t>(c * H * W + i)] * 0.5f + 0.5f) * 255.0f));
  std::map<std::string, std::string> meta = g.metadata();
  nlohmann::json cfg = nlohmann::json::parse(meta.at("config"));
  cfg["weights"] = (fs::path(kData) / "golden/pipeline/wan_i2v_tiny").string();
  parity::Options opt;
  opt.rtol = 3e-5;
  {  // bytes
    auto u = t;
    Tensor b8 = Tensor::empty({H, W, 3}, DType::U8);
    std::copy(bytes.begin(), bytes.end(), b8.data<uint8_t>());
    u["input.image"] = b8;
    auto m = meta;
    m["config"] = cfg.dump();
    io::save_safetensors((d / "bytes.safetensors").string(), u, m);
    EXPECT_TRUE(parity::run((d / "bytes.safetensors").string(), opt).ok());
  }
  {  // a PNG beside the golden
    io::RgbVideo pic;
    pic.frames = 1;
    pic.height = H;
    pic.width = W;
    pic.rgb = bytes;
    io::write_png_frames((d / "png").string(), pic, {});
    auto u = t;
    u.erase("input.image");
    auto c2 = cfg;
    c2["image"] = "png/frame_00000.png";
    auto m = meta;
    m["config"] = c2.dump();
    io::save_safetensors((d / "file.safetensors").string(), u, m);
    EXPECT_TRUE(parity::run((d / "file.safetensors").string(), opt).ok());
  }
}

// The Wan 2.2 image paths from the CLI: TI2V (an image is optional; resized, cropped, said so) and
// I2V-A14B (an image is required, no last frame).
TEST(I2VCli, Wan22DemosTakeAnImage) {
  namespace cli = vidax::test::cli;
  const fs::path d = vidax::test::scratch_dir("i2v_cli_wan22");
  const std::string ti2v = (d / "ti2v").string(), a14b = (d / "a14b").string();
  for (const auto& [dir, model] : std::vector<std::pair<std::string, std::string>>{
           {ti2v, "wan2.2-ti2v-tiny-demo"}, {a14b, "wan2.2-i2v-a14b-tiny-demo"}}) {
    const auto r = cli::run({"make-demo", dir, "--model", model, "--tokenizer", cli::tiny_spiece()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const std::string img = write_png(d, 40, 56, 1).string();
  const std::vector<std::string> base{"generate", "--prompt", "a cat", "--seed", "3", "--steps", "2", "--frames", "5"};
  auto gen = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return cli::run(a, {.timeout_s = 300});
  };
  {
    const std::string out = (d / "ti2v.y4m").string();
    const auto r = gen({"--weights", ti2v, "--image", img, "-o", out});
    ASSERT_EQ(r.code, 0) << r.err;
    // 56x40 at the demo's 96x64 area: best_output_size gives 96x64; LANCZOS to 96x69, crop.
    EXPECT_NE(r.err.find("centre-cropped to 96x64"), std::string::npos) << r.err;
    const io::VideoFileInfo info = io::read_video(out);
    EXPECT_EQ(info.width, 96);
    EXPECT_EQ(info.height, 64);
    EXPECT_EQ(info.frames, 5);
  }
  {
    const auto r = gen({"--weights", a14b, "--image", img, "--height", "32", "--width", "48", "-o",
                        (d / "a14b.y4m").string()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  {
    const auto r = gen({"--weights", a14b, "-o", (d / "bad.y4m").string()});
    EXPECT_NE(r.code, 0);
    EXPECT_NE(r.err.find("give --image FILE"), std::string::npos) << r.err;
    const auto r2 = gen({"--weights", ti2v, "--image", img, "--last-image", img, "-o", (d / "bad.y4m").string()});
    EXPECT_NE(r2.code, 0);
    EXPECT_NE(r2.err.find("takes no last frame"), std::string::npos) << r2.err;
    EXPECT_FALSE(fs::exists(d / "bad.y4m"));
  }
}
