// Wan 2.2 I2V-A14B (wan/image2video.py of Wan2.2): two i2v experts switched at the boundary 0.900,
// a guidance scale each, y = mask + the Wan 2.1 VAE latent of the image on the input channels, no
// CLIP; against the official generate() on tiny weights (tools/golden/wan22_pipeline.py i2v_a14b).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "io/checkpoint.h"
#include "io/video.h"
#include "models/wan/checkpoint_keys.h"
#include "models/wan/demo_weights.h"
#include "models/wan/family.h"
#include "models/wan/t2v_load.h"
#include "models/wan/weights.h"
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

Result run_golden(const io::Checkpoint& g, bool offload, LoadedT2V* model) {
  const auto cfg = nlohmann::json::parse(g.metadata().at("config"));
  LoadOptions lo;
  lo.weights_dir = kData + "/golden/pipeline/" + cfg.at("weights").get<std::string>();
  lo.precision = "fp32";
  lo.offload = offload;
  *model = load_t2v(lo);
  Request r = request_from_json(cfg, model->preset.variant.defaults.negative_prompt);
  r.image = io::picture_to_tensor(g.get("input.image"));
  return run_generation(model->parts, r);
}

}  // namespace

// 6 UniPC steps at shift 5 (999 ... 499): the high-noise expert (guidance 4.5) for the three at
// t >= 900, the low-noise one (3.0) below, as the reference chose them.
TEST(Wan22I2V, A14BMatchesOfficialGenerate) {
  io::Checkpoint g = io::Checkpoint::open(kData + "/golden/pipeline/wan22_i2v_a14b_tiny.safetensors");
  for (bool offload : {false, true}) {
    LoadedT2V m;
    Result res = run_golden(g, offload, &m);
    ASSERT_EQ(m.preset.name(), kTinyI2VA14BDemoModel);
    EXPECT_FALSE(m.preset.uses_clip());
    EXPECT_EQ(res.timesteps, g.get("inter.timesteps").to_f64_vector());
    const std::vector<double> expert = g.get("inter.expert").to_f64_vector();
    std::vector<double> ours(expert.size(), -1);
    for (size_t e = 0; e < res.denoiser_steps.size(); ++e)
      for (int s : res.denoiser_steps[e]) ours[static_cast<size_t>(s)] = static_cast<double>(e);
    EXPECT_EQ(ours, expert);
    const double e_z = vidax::test::rel_l2(g.get("inter.z"), res.taps.at("inter.z"));
    const double e_lat = vidax::test::rel_l2(g.get("output.latents"), res.latents);
    const double e_vid = vidax::test::rel_l2(g.get("output.video"), res.video);
    std::printf("I2V-A14B golden%s: z rel_l2 %.3g, latents rel_l2 %.3g, video rel_l2 %.3g\n",
                offload ? " (--offload)" : "", e_z, e_lat, e_vid);
    EXPECT_LT(e_z, 1e-5);
    EXPECT_LT(e_lat, 1e-5);
    EXPECT_LT(e_vid, 1e-5);
    if (offload) EXPECT_EQ(m.expert_loads(), (std::vector<int>{1, 1}));
  }
}

// The two guidance scales are each used: swapping them changes the result.
TEST(Wan22I2V, EachExpertTakesItsGuidance) {
  io::Checkpoint g = io::Checkpoint::open(kData + "/golden/pipeline/wan22_i2v_a14b_tiny.safetensors");
  auto cfg = nlohmann::json::parse(g.metadata().at("config"));
  LoadOptions lo;
  lo.weights_dir = kData + "/golden/pipeline/" + cfg.at("weights").get<std::string>();
  lo.precision = "fp32";
  LoadedT2V m = load_t2v(lo);
  Request r = request_from_json(cfg, m.preset.variant.defaults.negative_prompt);
  r.image = io::picture_to_tensor(g.get("input.image"));
  std::swap(r.guidance_scales[0], r.guidance_scales[1]);
  Result res = run_generation(m.parts, r, {}, /*decode=*/false);
  EXPECT_GT(vidax::test::rel_l2(g.get("output.latents"), res.latents), 1e-3);
}

// make-demo writes the two i2v expert folders and no CLIP; generate needs --image, refuses
// --last-image; the folder is detected as I2V-A14B (not Wan 2.1 I2V, not T2V-A14B).
TEST(Wan22I2V, DemoNeedsAnImage) {
  const fs::path d = vidax::test::scratch_dir("demo_i2v_a14b");
  DemoOptions o;
  o.out_dir = d.string();
  o.spiece_model = kData + "/text/data/tiny_spiece.model";
  make_demo_weights(o, kTinyI2VA14BDemoModel);
  EXPECT_TRUE(fs::is_regular_file(d / "low_noise_model" / "config.json"));
  LoadOptions lo;
  lo.weights_dir = d.string();
  LoadedT2V m = load_t2v(lo);
  EXPECT_EQ(m.preset.name(), kTinyI2VA14BDemoModel);
  Request r;
  r.prompt = "a red panda";
  r.default_negative_prompt = m.preset.variant.defaults.negative_prompt;
  r.frames = 5, r.height = 32, r.width = 48, r.steps = 3, r.seed = 3;
  r.guidance_scales = m.preset.variant.defaults.guidance_scales;
  EXPECT_NE(error_of([&] { (void)run_generation(m.parts, r); }).find("needs --image"), std::string::npos);
  r.image = Tensor::from_f32(std::vector<float>(3 * 32 * 48, 0.1f), {3, 32, 48}, DType::F32);
  Result res = run_generation(m.parts, r);
  EXPECT_EQ(res.video.shape(), (Shape{3, 5, 32, 48}));
  r.last_image = r.image;
  EXPECT_NE(error_of([&] { (void)run_generation(m.parts, r); }).find("not --last-image"), std::string::npos);
}

// The published layout (two expert folders whose config.json says model_type i2v, in_dim 36) is
// detected as I2V-A14B; one such folder alone is Wan 2.1 I2V 14B; a CLIP file is not looked for.
TEST(Wan22I2V, DetectedFromTheExpertFolders) {
  const fs::path root = vidax::test::scratch_dir("wan22_i2v_detect");
  const nlohmann::json c = preset("wan2.2-i2v-a14b").dit;
  EXPECT_EQ(c.at("model_type"), "i2v");
  EXPECT_EQ(c.at("in_dim"), 36);
  auto write = [](const fs::path& p, const nlohmann::json& j) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << j.dump();
  };
  write(root / "orig" / "high_noise_model" / "config.json", c);
  write(root / "orig" / "low_noise_model" / "config.json", c);
  EXPECT_EQ(detect_model((root / "orig").string()), "wan2.2-i2v-a14b");
  write(root / "one" / "config.json", c);
  EXPECT_EQ(detect_model((root / "one").string()), "wan2.1-i2v-14b-480p");
  const Preset& p = preset("wan2.2-i2v-a14b");
  EXPECT_FALSE(p.uses_clip());
  EXPECT_EQ(p.experts->boundary_timestep(), 900.0);
  EXPECT_EQ(p.variant.defaults.guidance_scales, (std::vector<double>{3.5, 3.5}));
  EXPECT_EQ(p.variant.defaults.shift, 5.0);
  EXPECT_TRUE(preset("wan2.1-i2v-14b-480p").uses_clip());
}

// The memory plan of I2V-A14B: the Wan 2.1 VAE's encoder half (its parameter count, fp32) resident
// with the VAE in every phase, and a first phase that encodes the conditioning frames with
// everything loaded; T2V-A14B (the same experts, no image) has neither.
TEST(Wan22I2V, MemoryPlanCountsTheVaeEncoder) {
  Request r;
  r.frames = 81, r.height = 720, r.width = 1280;
  const MemoryPlan i2v = family().memory_plan("wan2.2-i2v-a14b", r, "bf16");
  const MemoryPlan t2v = family().memory_plan("wan2.2-t2v-a14b", r, "bf16");
  double enc = 0;
  for (const auto& info : translate::wan::vae_params(translate::wan::VaeConfig{}).params)
    if (info.name.rfind("encoder.", 0) == 0 || info.name.rfind("conv1.", 0) == 0)
      enc += 4.0 * static_cast<double>(shape_numel(info.shape));
  ASSERT_GT(enc, 0.0);
  auto index_of = [](const MemoryPlan& m, const std::string& what) {
    for (size_t i = 0; i < m.items.size(); ++i)
      if (m.items[i].what == what) return static_cast<int>(i);
    return -1;
  };
  const int w = index_of(i2v, "VAE encoder weights");
  const int a = index_of(i2v, "VAE encode activations (the conditioning frames)");
  ASSERT_GE(w, 0);
  ASSERT_GE(a, 0);
  EXPECT_DOUBLE_EQ(i2v.items[static_cast<size_t>(w)].bytes, enc);
  EXPECT_GT(i2v.items[static_cast<size_t>(a)].bytes, 0.0);
  EXPECT_EQ(index_of(t2v, "VAE encoder weights"), -1);
  ASSERT_EQ(i2v.phases.size(), t2v.phases.size() + 1);
  for (const auto& ph : i2v.phases) EXPECT_NE(std::find(ph.begin(), ph.end(), static_cast<size_t>(w)), ph.end());
  EXPECT_NE(std::find(i2v.phases.front().begin(), i2v.phases.front().end(), static_cast<size_t>(a)),
            i2v.phases.front().end());
  EXPECT_GE(i2v.peak_bytes(), t2v.peak_bytes() + enc);
}
