// Wan 2.2 TI2V-5B's image-to-video branch (WanTI2V.i2v of wan/textimage2video.py) against the
// official generate() with an image on the tiny TI2V weights (tools/golden/wan22_pipeline.py
// ti2v_image), and its preprocessing pieces: best_output_size, PIL's LANCZOS resize, the fixed
// first latent frame.
#include <gtest/gtest.h>

#include <filesystem>

#include "io/checkpoint.h"
#include "io/video.h"
#include "io/image_resize.h"
#include "models/wan/demo_weights.h"
#include "models/wan/i2v_conditioning.h"
#include "models/wan/t2v_load.h"
#include "pipeline/generate.h"
#include "pipeline/scratch.h"
#include "test_diff.h"

namespace fs = std::filesystem;
using namespace vidax;
using namespace vidax::pipeline;
using namespace vidax::wan;

namespace {

const std::string kData = VIDAX_TEST_DATA_DIR;

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// best_output_size of wan/utils/utils.py (the expected values are the reference function's).
TEST(Ti2vImage, OutputSizeIsBestOutputSize) {
  // 140x110 at 96*64: width first gives 64x96 (ratio 0.67), height first 96x64 (1.5): the latter.
  EXPECT_EQ(ti2v_output_size(140, 110, 32, 32, 96 * 64), (std::array<int64_t, 2>{96, 64}));
  // The 5B default area 1280*704 with a 16:9 picture: 1248x704 (not 1280x704: 16:9 is not 1280:704).
  EXPECT_EQ(ti2v_output_size(1920, 1080, 32, 32, 1280 * 704), (std::array<int64_t, 2>{1248, 704}));
  EXPECT_EQ(ti2v_output_size(1080, 1920, 32, 32, 1280 * 704), (std::array<int64_t, 2>{704, 1248}));
  // A square at that area: width first 928x960 and height first 960x928 keep the ratio equally well;
  // the strict < picks height first.
  EXPECT_EQ(ti2v_output_size(512, 512, 32, 32, 1280 * 704), (std::array<int64_t, 2>{960, 928}));
  EXPECT_EQ(ti2v_output_size(80, 40, 32, 32, 64 * 64), (std::array<int64_t, 2>{128, 32}));
  EXPECT_EQ(ti2v_output_size(60, 40, 32, 32, 64 * 64), (std::array<int64_t, 2>{64, 64}));
  // An aspect ratio the area cannot hold: the reference divides by zero; here a clear error.
  EXPECT_NE(error_of([] { (void)ti2v_output_size(4000, 10, 32, 32, 96 * 64); }).find("divides by zero"),
            std::string::npos);
}

// PIL's LANCZOS keeps a constant picture constant (normalised fixed-point weights); a reduction is
// antialiased (a one-pixel stripe pattern averages out) to Pillow's exact bytes.
TEST(Ti2vImage, LanczosProperties) {
  Tensor flat = Tensor::empty({7, 9, 3}, DType::U8);
  for (int64_t i = 0; i < 7 * 9 * 3; ++i) flat.data<uint8_t>()[i] = 77;  // view-write-ok: test fill
  const std::vector<float> up = io::resize_lanczos_pil(flat, 13, 5).to(DType::F32).to_f32_vector();
  for (float v : up) ASSERT_EQ(v, 77.0f);
  Tensor stripes = Tensor::empty({8, 64, 3}, DType::U8);
  for (int64_t y = 0; y < 8; ++y)
    for (int64_t x = 0; x < 64; ++x)
      for (int64_t c = 0; c < 3; ++c) stripes.data<uint8_t>()[(y * 64 + x) * 3 + c] = (x % 2) ? 200 : 0;  // view-write-ok
  // Pillow 13.0.0's bytes for this image (every row, every channel): the edges ring as its kernel does.
  const std::vector<float> down = io::resize_lanczos_pil(stripes, 8, 8).to(DType::F32).to_f32_vector();
  const float row[8] = {96, 101, 100, 100, 100, 100, 99, 104};
  for (size_t i = 0; i < down.size(); ++i) EXPECT_EQ(down[i], row[(i / 3) % 8]) << i;
  EXPECT_NE(error_of([&] { (void)io::resize_lanczos_pil(stripes.to(DType::F32), 4, 4); }).find("[H, W, 3] U8"),
            std::string::npos);
}

// The official WanTI2V.generate with an image: a 140x110 picture at the area of 96x64 (LANCZOS
// down to 96x75, centre crop), 5 frames, 3 UniPC steps, the image's latent as the first frame.
TEST(Ti2vImage, MatchesOfficialGenerateWithImage) {
  const std::string path = kData + "/golden/pipeline/wan22_ti2v_image_tiny.safetensors";
  io::Checkpoint g = io::Checkpoint::open(path);
  const auto cfg = nlohmann::json::parse(g.metadata().at("config"));
  LoadOptions lo;
  lo.weights_dir = kData + "/golden/pipeline/" + cfg.at("weights").get<std::string>();
  lo.precision = "fp32";
  LoadedT2V m = load_t2v(lo);
  ASSERT_EQ(m.preset.name(), "wan2.2-ti2v-tiny-demo");
  EXPECT_EQ(m.parts.max_images, 1);
  EXPECT_EQ(m.parts.min_images, 0);
  Request r = request_from_json(cfg, m.preset.variant.defaults.negative_prompt);
  r.image = io::picture_to_tensor(g.get("input.image"));
  std::vector<std::string> warnings;
  Events ev;
  ev.warn = [&](const std::string& w) { warnings.push_back(w); };
  Result res = run_generation(m.parts, r, ev);
  EXPECT_EQ(res.height, 64);
  EXPECT_EQ(res.width, 96);
  EXPECT_EQ(res.timesteps, g.get("inter.timesteps").to_f64_vector());
  ASSERT_TRUE(res.taps.count("inter.z"));
  const double e_z = vidax::test::rel_l2(g.get("inter.z"), res.taps.at("inter.z"));
  const double e_lat = vidax::test::rel_l2(g.get("output.latents"), res.latents);
  const double e_vid = vidax::test::rel_l2(g.get("output.video"), res.video);
  std::printf("TI2V image golden: z rel_l2 %.3g, latents rel_l2 %.3g, video rel_l2 %.3g\n", e_z, e_lat, e_vid);
  EXPECT_LT(e_z, 1e-5);
  EXPECT_LT(e_lat, 1e-5);
  EXPECT_LT(e_vid, 1e-5);
  // The first latent frame is the image's latent, unchanged by the steps (bit for bit).
  EXPECT_EQ(res.latents.slice(1, 0, 1).contiguous().to_f32_vector(), res.taps.at("inter.z").to_f32_vector());
  bool said = false;
  for (const auto& w : warnings) said |= w.find("centre-cropped to 96x64") != std::string::npos;
  EXPECT_TRUE(said);
  // The control: without the image (the t2v branch, same seed) the result is far from the golden.
  Request t2v = r;
  t2v.image = Tensor();
  Result plain = run_generation(m.parts, t2v, {}, /*decode=*/false);
  EXPECT_GT(vidax::test::rel_l2(g.get("output.latents"), plain.latents), 1e-2);
}

// The TI2V demo takes --image and no --last-image; a T2V-only model refuses --image.
TEST(Ti2vImage, DemoTakesAnImageOnly) {
  const fs::path d = vidax::test::scratch_dir("demo_ti2v_image");
  DemoOptions o;
  o.out_dir = d.string();
  o.spiece_model = kData + "/text/data/tiny_spiece.model";
  make_demo_weights(o, kTinyTI2VDemoModel);
  LoadOptions lo;
  lo.weights_dir = d.string();
  LoadedT2V m = load_t2v(lo);
  Request r;
  r.prompt = "a red panda";
  r.default_negative_prompt = m.preset.variant.defaults.negative_prompt;
  r.frames = 5, r.height = 64, r.width = 64, r.steps = 2, r.seed = 3;
  r.image = Tensor::from_f32(std::vector<float>(3 * 40 * 80, 0.25f), {3, 40, 80}, DType::F32);
  Result res = run_generation(m.parts, r);
  EXPECT_EQ(res.video.shape(), (Shape{3, 5, 32, 128}));  // a 2:1 picture at 64*64 pixels: 128x32 (best_output_size)
  r.last_image = r.image;
  EXPECT_NE(error_of([&] { (void)run_generation(m.parts, r); }).find("not --last-image"), std::string::npos);
}
