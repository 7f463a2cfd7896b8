// Wan 2.2 pipelines end to end: T2V-A14B (two experts switched at the boundary, a guidance scale
// each, one expert resident at a time with --offload) and TI2V-5B's text-to-video branch (the
// Wan 2.2 VAE), against the official generate() on tiny weights (tools/golden/wan22_pipeline.py),
// and the demo checkpoints `vidax make-demo` writes for both.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "io/checkpoint.h"
#include "models/wan/demo_weights.h"
#include "models/wan/family.h"
#include "models/wan/t2v_load.h"
#include "models/wan/vae22.h"
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

struct GoldenRun {
  LoadedT2V model;
  Request request;
  Result result;
  io::Checkpoint golden;
};

GoldenRun run_golden(const std::string& name, bool offload = false) {
  const std::string path = kData + "/golden/pipeline/" + name + ".safetensors";
  io::Checkpoint g = io::Checkpoint::open(path);
  const auto cfg = nlohmann::json::parse(g.metadata().at("config"));
  LoadOptions lo;
  lo.weights_dir = kData + "/golden/pipeline/" + name;
  lo.precision = "fp32";
  lo.offload = offload;
  LoadedT2V m = load_t2v(lo);
  const Request r = request_from_json(cfg, m.preset.variant.defaults.negative_prompt);
  EXPECT_EQ(draw_noise(r.seed, latent_shape(m.parts.geometry, r)).to_f32_vector(), g.get("inter.noise").to_f32_vector());
  Result res = run_generation(m.parts, r);
  EXPECT_EQ(res.timesteps, g.get("inter.timesteps").to_f64_vector());
  return {std::move(m), r, std::move(res), std::move(g)};
}

void expect_matches(const GoldenRun& run, const char* what) {
  const double e_lat = vidax::test::rel_l2(run.golden.get("output.latents"), run.result.latents);
  const double e_vid = vidax::test::rel_l2(run.golden.get("output.video"), run.result.video);
  std::printf("%s golden: latents rel_l2 %.3g, video rel_l2 %.3g\n", what, e_lat, e_vid);
  EXPECT_LT(e_lat, 1e-5);
  EXPECT_LT(e_vid, 1e-5);
  // The control: the same comparison fails on a perturbed expectation (so the bound can fail).
  std::vector<float> off = run.golden.get("output.latents").to_f32_vector();
  for (float& x : off) x *= 1.0001f;
  EXPECT_GT(vidax::test::rel_l2(Tensor::from_f32(off, run.golden.get("output.latents").shape()), run.result.latents),
            1e-5);
}

}  // namespace

// The official Wan2.2 WanT2V.generate with two tiny experts: 6 UniPC steps at shift 12, the
// high-noise expert for the four steps at t >= 875 (guidance 4), the low-noise one for the last
// two (guidance 3), as the reference chose them (inter.expert).
TEST(Wan22Golden, A14BMatchesOfficialGenerate) {
  GoldenRun run = run_golden("wan22_a14b_tiny");
  EXPECT_EQ(run.model.preset.name(), "wan2.2-t2v-a14b-tiny-demo");
  ASSERT_EQ(run.request.guidance_scales, (std::vector<double>{3.0, 4.0}));
  const std::vector<double> expert = run.golden.get("inter.expert").to_f64_vector();
  ASSERT_EQ(run.result.denoiser_steps.size(), 2u);
  std::vector<double> ours(expert.size(), -1);
  for (size_t e = 0; e < 2; ++e)
    for (int s : run.result.denoiser_steps[e]) ours[static_cast<size_t>(s)] = static_cast<double>(e);
  EXPECT_EQ(ours, expert);  // kHighNoiseExpert = 1, as the golden records the high-noise one
  EXPECT_EQ(run.result.denoiser_calls_by_index, (std::vector<int64_t>{4, 8}));  // CFG: 2 per step
  expect_matches(run, "A14B");
}

// --offload: one expert resident at a time (the high-noise one freed at the switch), streamed; the
// same result.
TEST(Wan22Golden, A14BOffloadHoldsOneExpertAtATime) {
  GoldenRun run = run_golden("wan22_a14b_tiny", /*offload=*/true);
  EXPECT_EQ(run.model.expert_loads(), (std::vector<int>{1, 1}));
  EXPECT_EQ(run.model.experts_loaded(), (std::vector<bool>{true, false}));  // low resident, high freed
  expect_matches(run, "A14B --offload");
}

// A guidance scale given for all steps replaces the per-expert pair (the reference's float
// guide_scale): a different result from the golden's (3, 4).
TEST(Wan22Golden, OneGuidanceForBothExpertsDiffers) {
  const std::string name = "wan22_a14b_tiny";
  io::Checkpoint g = io::Checkpoint::open(kData + "/golden/pipeline/" + name + ".safetensors");
  LoadOptions lo;
  lo.weights_dir = kData + "/golden/pipeline/" + name;
  lo.precision = "fp32";
  LoadedT2V m = load_t2v(lo);
  Request r = request_from_json(nlohmann::json::parse(g.metadata().at("config")), m.preset.variant.defaults.negative_prompt);
  r.guidance_scales.clear();
  r.guidance = 4.0;
  Result res = run_generation(m.parts, r, {}, /*decode=*/false);
  EXPECT_GT(vidax::test::rel_l2(g.get("output.latents"), res.latents), 1e-3);
  r.guidance_scales = {3.0, 4.0, 5.0};
  EXPECT_NE(error_of([&] { (void)run_generation(m.parts, r, {}, false); }).find("3 guidance scales given, but the model has 2"),
            std::string::npos);
}

// The official Wan2.2 WanTI2V.generate, its text-to-video branch (img=None), Wan 2.2 VAE.
TEST(Wan22Golden, TI2VMatchesOfficialGenerate) {
  GoldenRun run = run_golden("wan22_ti2v_tiny");
  EXPECT_EQ(run.model.preset.name(), "wan2.2-ti2v-tiny-demo");
  EXPECT_EQ(run.model.parts.geometry.z_dim, 48);
  EXPECT_EQ(run.model.parts.geometry.height_multiple(), 32);
  expect_matches(run, "TI2V");
}

// make-demo of both Wan 2.2 demos; generate runs on each; the A14B demo uses both experts at the
// steps the boundary gives.
TEST(Wan22Demo, A14BDemoRunsBothExpertsAtTheBoundary) {
  const fs::path d = vidax::test::scratch_dir("demo_a14b");
  DemoOptions o;
  o.out_dir = d.string();
  o.spiece_model = kData + "/text/data/tiny_spiece.model";
  make_demo_weights(o, kTinyA14BDemoModel);
  EXPECT_TRUE(fs::is_regular_file(d / "high_noise_model" / "diffusion_pytorch_model.safetensors"));
  EXPECT_TRUE(fs::is_regular_file(d / "low_noise_model" / "config.json"));
  LoadOptions lo;
  lo.weights_dir = d.string();
  LoadedT2V m = load_t2v(lo);
  EXPECT_EQ(m.preset.name(), kTinyA14BDemoModel);
  Request r;
  r.prompt = "a red panda";
  r.default_negative_prompt = m.preset.variant.defaults.negative_prompt;
  r.frames = 5, r.height = 32, r.width = 48, r.steps = 8, r.seed = 3;
  r.shift = m.preset.variant.defaults.shift;
  r.guidance_scales = m.preset.variant.defaults.guidance_scales;
  Result res = run_generation(m.parts, r);
  ASSERT_EQ(res.video.shape(), (Shape{3, 5, 32, 48}));
  std::vector<int> high, low;
  for (int i = 0; i < static_cast<int>(res.timesteps.size()); ++i)
    (res.timesteps[static_cast<size_t>(i)] >= 875.0 ? high : low).push_back(i);
  ASSERT_FALSE(high.empty());
  ASSERT_FALSE(low.empty());
  EXPECT_EQ(res.denoiser_steps[kHighNoiseExpert], high);
  EXPECT_EQ(res.denoiser_steps[kLowNoiseExpert], low);
  EXPECT_EQ(res.denoiser_calls_by_index[kHighNoiseExpert], 2 * static_cast<int64_t>(high.size()));
  EXPECT_EQ(res.denoiser_calls_by_index[kLowNoiseExpert], 2 * static_cast<int64_t>(low.size()));
}

TEST(Wan22Demo, TI2VDemoGenerates) {
  const fs::path d = vidax::test::scratch_dir("demo_ti2v");
  DemoOptions o;
  o.out_dir = d.string();
  o.spiece_model = kData + "/text/data/tiny_spiece.model";
  make_demo_weights(o, kTinyTI2VDemoModel);
  LoadOptions lo;
  lo.weights_dir = d.string();
  LoadedT2V m = load_t2v(lo);
  EXPECT_EQ(m.preset.name(), kTinyTI2VDemoModel);
  Request r;
  r.prompt = "a red panda";
  r.default_negative_prompt = m.preset.variant.defaults.negative_prompt;
  r.frames = 5, r.height = 64, r.width = 96, r.steps = 2, r.seed = 3;
  Result res = run_generation(m.parts, r);
  ASSERT_EQ(res.latents.shape(), (Shape{48, 2, 4, 6}));
  ASSERT_EQ(res.video.shape(), (Shape{3, 5, 64, 96}));
  EXPECT_NE(error_of([&] {
              Request bad = r;
              bad.height = 48;  // not a multiple of 32 (VAE stride 16 x patch 2)
              (void)run_generation(m.parts, bad);
            }).find("--height 48: must be a positive multiple of 32"),
            std::string::npos);
}

// The state_dict names and shapes the demo writes for the Wan 2.2 VAE are those of the official
// WanVAE_ (the golden's whole state dict, tools/golden/wan22_vae.py).
TEST(Wan22Demo, VaeParameterShapesAreTheOfficialStateDict) {
  io::Checkpoint g = io::Checkpoint::open(kData + "/golden/wan22_vae_decode.safetensors");
  const auto shapes = Wan22VAE::parameter_shapes(Wan22VAEConfig::from_json(nlohmann::json::parse(g.metadata().at("config"))));
  std::map<std::string, Shape> golden;
  for (const auto& n : g.names())
    if (n.rfind("input.", 0) != 0 && n.rfind("output", 0) != 0 && n.rfind("inter.", 0) != 0 && n.rfind("scale.", 0) != 0)
      golden[n] = g.get(n).shape();
  std::map<std::string, Shape> ours(shapes.begin(), shapes.end());
  EXPECT_EQ(ours, golden);
}

// Bad input: a two-expert checkpoint with one expert missing; one file for a two-expert model.
TEST(Wan22Weights, MissingExpertIsAClearError) {
  const fs::path d = vidax::test::scratch_dir("demo_a14b_one_expert");
  DemoOptions o;
  o.out_dir = d.string();
  o.spiece_model = kData + "/text/data/tiny_spiece.model";
  make_demo_weights(o, kTinyA14BDemoModel);
  fs::remove_all(d / "low_noise_model");
  LoadOptions lo;
  lo.weights_dir = d.string();
  const std::string e = error_of([&] { (void)load_t2v(lo); });
  EXPECT_NE(e.find("has two experts, but there is no low_noise_model/ (the low-noise DiT); found high_noise_model/"),
            std::string::npos)
      << e;
  PartFiles files;
  files.diffusion_model = (d / "high_noise_model" / "diffusion_pytorch_model.safetensors").string();
  const std::string e2 = error_of([&] { (void)find_weights(d.string(), preset("wan2.2-t2v-a14b"), files); });
  EXPECT_NE(e2.find("has two DiTs (a high-noise and a low-noise expert), one file cannot hold both"), std::string::npos)
      << e2;
}

// Detection: the expert folders (original) or transformer_2/ (diffusers) say A14B, where the same
// dims in one folder say Wan 2.1 14B; dim 3072 x 30 layers says TI2V-5B.
TEST(Wan22Weights, DetectsBothLayoutsOfTheExperts) {
  const fs::path root = vidax::test::scratch_dir("wan22_detect");
  nlohmann::json c14 = preset("wan2.2-t2v-a14b").dit;
  auto write = [](const fs::path& p, const nlohmann::json& j) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << j.dump();
  };
  write(root / "orig" / "high_noise_model" / "config.json", c14);
  write(root / "orig" / "low_noise_model" / "config.json", c14);
  EXPECT_EQ(detect_model((root / "orig").string()), "wan2.2-t2v-a14b");
  write(root / "diff" / "model_index.json", nlohmann::json::object());
  write(root / "diff" / "transformer" / "config.json", c14);
  write(root / "diff" / "transformer_2" / "config.json", c14);
  EXPECT_EQ(detect_model((root / "diff").string()), "wan2.2-t2v-a14b");
  write(root / "one" / "config.json", c14);
  EXPECT_EQ(detect_model((root / "one").string()), "wan2.1-t2v-14b");
  write(root / "ti2v" / "config.json", preset("wan2.2-ti2v-5b").dit);
  EXPECT_EQ(detect_model((root / "ti2v").string()), "wan2.2-ti2v-5b");
}

// The variants' defaults are the reference configs' (wan_t2v_A14B.py, wan_ti2v_5B.py, generate.py).
TEST(Wan22Presets, DefaultsAreTheReferenceConfigs) {
  const Preset& a = preset("wan2.2-t2v-a14b");
  EXPECT_EQ(a.variant.defaults.steps, 40);
  EXPECT_EQ(a.variant.defaults.shift, 12.0);
  EXPECT_EQ(a.variant.defaults.guidance_scales, (std::vector<double>{3.0, 4.0}));
  ASSERT_TRUE(a.experts);
  EXPECT_EQ(a.experts->boundary_timestep(), 875.0);
  EXPECT_EQ(a.variant.defaults.height, 720);
  EXPECT_EQ(a.variant.defaults.width, 1280);
  const Preset& t = preset("wan2.2-ti2v-5b");
  EXPECT_EQ(t.variant.defaults.frames, 121);
  EXPECT_EQ(t.variant.defaults.fps, 24);
  EXPECT_EQ(t.variant.defaults.height, 704);
  EXPECT_EQ(t.variant.defaults.width, 1280);
  EXPECT_EQ(t.variant.defaults.steps, 50);
  const pipeline::Geometry g = family().geometry("wan2.2-ti2v-5b");
  EXPECT_EQ(g.z_dim, 48);
  EXPECT_EQ(g.vae_stride_s, 16);
}

// The memory plan: both A14B experts resident without --offload (twice the one DiT of Wan 2.1
// 14B, same architecture), one expert's resident part with it; TI2V-5B counts the Wan 2.2 VAE's
// decoder (its parameter shapes), not a Wan 2.1 one.
TEST(Wan22Presets, MemoryPlanCountsBothExpertsUnlessOffloaded) {
  Request r;
  r.frames = 81, r.height = 720, r.width = 1280;
  auto dit_bytes = [](const MemoryPlan& m) {
    double b = 0;
    for (const auto& it : m.items)
      if (it.what.rfind("DiT weights", 0) == 0) b += it.bytes;
    return b;
  };
  const MemoryPlan a14b = family().memory_plan("wan2.2-t2v-a14b", r, "bf16");
  const MemoryPlan w14b = family().memory_plan("wan2.1-t2v-14b", r, "bf16");
  EXPECT_DOUBLE_EQ(dit_bytes(a14b), 2 * dit_bytes(w14b));
  r.offload = true;
  EXPECT_DOUBLE_EQ(dit_bytes(family().memory_plan("wan2.2-t2v-a14b", r, "bf16")),
                   dit_bytes(family().memory_plan("wan2.1-t2v-14b", r, "bf16")));
  r.offload = false;
  r.height = 704;
  const MemoryPlan ti2v = family().memory_plan("wan2.2-ti2v-5b", r, "bf16");
  double vae22 = 0;
  for (const auto& [name, shape] : Wan22VAE::parameter_shapes(Wan22VAEConfig{}, {false, true}))
    vae22 += 4.0 * static_cast<double>(shape_numel(shape));
  bool found = false;
  for (const auto& it : ti2v.items)
    if (it.what == "VAE decoder weights") {
      found = true;
      EXPECT_DOUBLE_EQ(it.bytes, vae22);
    }
  EXPECT_TRUE(found);
  // The encoder half is loaded with TI2V (its i2v branch), image or not: counted; with an image
  // its encode joins, in a first phase with everything loaded.
  double encoder = 0;
  for (const auto& [name, shape] : Wan22VAE::parameter_shapes(Wan22VAEConfig{}, {true, false}))
    encoder += 4.0 * static_cast<double>(shape_numel(shape));
  ASSERT_EQ(ti2v.items.back().what, "VAE encoder weights");
  EXPECT_DOUBLE_EQ(ti2v.items.back().bytes, encoder);
  for (const auto& it : ti2v.items) EXPECT_EQ(it.what.find("VAE encode "), std::string::npos) << it.what;
  r.image = Tensor::zeros({3, 704, 1280}, DType::F32);
  const MemoryPlan with_image = family().memory_plan("wan2.2-ti2v-5b", r, "bf16");
  ASSERT_EQ(with_image.items.size(), ti2v.items.size() + 1);
  EXPECT_EQ(with_image.items.back().what, "VAE encode activations (the image)");
  EXPECT_EQ(with_image.phases.size(), ti2v.phases.size() + 1);
  EXPECT_GT(with_image.peak_bytes(), ti2v.peak_bytes());
}
