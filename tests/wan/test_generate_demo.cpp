// End to end on real (tiny, random) weights: the demo checkpoint through the
// loader and the T2V loop, and the official WanT2V.generate golden
// (tools/golden/wan_pipeline.py).
#include <gtest/gtest.h>

#include "pipeline/scratch.h"
#include "test_diff.h"
#include <unistd.h>

#include <filesystem>

#include "io/checkpoint.h"
#include "io/video.h"
#include <csignal>

#include "models/wan/demo_weights.h"
#include "pipeline/interrupt.h"
#include "pipeline/generate.h"
#include "models/wan/t2v_load.h"

namespace fs = std::filesystem;
using namespace vidax;
using namespace vidax::pipeline;
using namespace vidax::wan;

namespace {

const std::string kData = VIDAX_TEST_DATA_DIR;

// One demo checkpoint for the whole suite (writing it takes a moment).
const LoadedT2V& demo_model() {
  static LoadedT2V loaded = [] {
    const fs::path d = vidax::test::scratch_dir("demo");
    DemoOptions o;
    o.out_dir = d.string();
    o.spiece_model = kData + "/text/data/tiny_spiece.model";
    make_demo_weights(o, kTinyDemoModel);
    LoadOptions lo;
    lo.weights_dir = d.string();
    return load_t2v(lo);
  }();
  return loaded;
}

Request demo_request(uint64_t seed) {
  Request r;
  r.prompt = "a red panda climbing a bamboo tree in the snow";
  r.default_negative_prompt = demo_model().preset.variant.defaults.negative_prompt;
  r.frames = 5;
  r.height = 32;
  r.width = 48;
  r.steps = 3;
  r.seed = seed;
  return r;
}


}  // namespace

TEST(DemoGenerate, DetectsTheDemoModel) {
  EXPECT_EQ(demo_model().preset.name(), "wan2.1-tiny-demo");
  EXPECT_EQ(demo_model().files.layout, "original");
  EXPECT_EQ(demo_model().precision, "fp32");
}

TEST(DemoGenerate, SameSeedSameFramesOtherSeedOtherFrames) {
  const auto& m = demo_model();
  Result a = run_generation(m.parts, demo_request(1));
  Result b = run_generation(m.parts, demo_request(1));
  Result c = run_generation(m.parts, demo_request(2));
  ASSERT_EQ(a.video.shape(), (Shape{3, 5, 32, 48}));
  const io::RgbVideo ra = io::rgb_from_video_tensor(a.video), rb = io::rgb_from_video_tensor(b.video),
                     rc = io::rgb_from_video_tensor(c.video);
  EXPECT_EQ(ra.rgb, rb.rgb);
  EXPECT_NE(ra.rgb, rc.rgb);
  size_t differing = 0;
  for (size_t i = 0; i < ra.rgb.size(); ++i) differing += ra.rgb[i] != rc.rgb[i];
  EXPECT_GT(differing, ra.rgb.size() / 2);  // a different seed changes most pixels
}

TEST(DemoGenerate, OverlongPromptIsTruncatedWithAWarning) {
  const auto& m = demo_model();
  Request r = demo_request(1);
  r.steps = 1;
  r.prompt.clear();
  for (int i = 0; i < 400; ++i) r.prompt += "panda bamboo snow ";
  std::vector<std::string> warnings;
  Events ev;
  ev.warn = [&](const std::string& w) { warnings.push_back(w); };
  run_generation(m.parts, r, ev, /*decode=*/false);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("the prompt is longer than 512 tokens; it was truncated"), std::string::npos);
}

TEST(DemoGenerate, CtrlCStopsTheVaeDecodeWithinAModule) {
  const auto& m = demo_model();
  Tensor z = Tensor::zeros({16, 2, 4, 6}, DType::F32);
  request_interrupt_for_testing(SIGINT);
  try {
    m.parts.decode(z, {});
    clear_interrupt();
    FAIL() << "decode ran to the end";
  } catch (const Interrupted& e) {
    clear_interrupt();
    EXPECT_NE(std::string(e.what()).find("stopped by SIGINT (Ctrl-C) during VAE decoding (conv2)"),
              std::string::npos) << e.what();
  }
}

// The official WanT2V.generate on the same tiny weights (fp32 on the CPU, CPU
// generator): same noise, same 3 UniPC steps with CFG and the default negative
// prompt, same VAE decode.
TEST(PipelineGolden, MatchesOfficialGenerateOnTinyWeights) {
  const std::string golden = kData + "/golden/pipeline/wan_pipeline_tiny.safetensors";
  io::Checkpoint g = io::Checkpoint::open(golden);
  const auto cfg = nlohmann::json::parse(g.metadata().at("config"));
  LoadOptions lo;
  lo.weights_dir = kData + "/golden/pipeline/wan_pipeline_tiny";
  lo.precision = "fp32";
  LoadedT2V m = load_t2v(lo);
  const Request r = request_from_json(cfg, m.preset.variant.defaults.negative_prompt);
  // The noise from the seed is the reference's (bit for bit).
  EXPECT_EQ(draw_noise(r.seed, latent_shape(m.parts.geometry, r)).to_f32_vector(),
            g.get("inter.noise").to_f32_vector());
  Result res = run_generation(m.parts, r);
  const std::vector<double> ts = g.get("inter.timesteps").to_f64_vector();
  EXPECT_EQ(res.timesteps, ts);
  const double e_lat = vidax::test::rel_l2(g.get("output.latents"), res.latents);
  const double e_vid = vidax::test::rel_l2(g.get("output.video"), res.video);
  std::printf("golden: latents rel_l2 %.3g, video rel_l2 %.3g\n", e_lat, e_vid);
  // fp32 bounds: the latents within DESIGN's 1e-5; the video ~2.6x that, the
  // VAE amplifying the latents' difference (see src/pipeline/parity_kind.h).
  EXPECT_LT(e_lat, 1e-5);
  EXPECT_LT(e_vid, 3e-5);
}

// Free-after-use residency (the CLI's): the text encoder goes after encoding, the DiT after the
// steps; a second run loads both again and gives the same frames as resident parts.
TEST(DemoGenerate, FreedPartsAreLoadedAgainAndGiveTheSameFrames) {
  const fs::path d = vidax::test::scratch_dir("demo_freed");
  DemoOptions o;
  o.out_dir = d.string();
  o.spiece_model = kData + "/text/data/tiny_spiece.model";
  make_demo_weights(o, kTinyDemoModel);
  std::vector<std::string> stages;
  LoadOptions lo;
  lo.weights_dir = d.string();
  lo.text_encoder = Residency::FreeAfterUse;
  lo.denoiser = Residency::FreeAfterUse;
  lo.on_stage = [&](const std::string& s) { stages.push_back(s); };
  LoadedT2V m = load_t2v(lo);
  auto count = [&](const std::string& what) {
    size_t n = 0;
    for (const auto& s : stages) n += s.rfind(what, 0) == 0;
    return n;
  };
  EXPECT_EQ(count("loading the text encoder"), 1u);
  EXPECT_EQ(count("loading the DiT"), 1u);
  Request r = demo_request(1);
  r.prompt = "a freed panda";  // not in another test's prompt cache
  Result a = run_generation(m.parts, r);
  Result b = run_generation(m.parts, r);  // the prompt is cached: only the DiT is loaded again
  EXPECT_EQ(count("loading the text encoder"), 1u);
  EXPECT_EQ(count("loading the DiT"), 2u);
  r.prompt = "another freed panda";  // a new prompt needs the text encoder again
  (void)run_generation(m.parts, r, {}, /*decode=*/false);
  EXPECT_EQ(count("loading the text encoder"), 2u);
  EXPECT_EQ(count("loading the DiT"), 3u);
  EXPECT_EQ(a.video.to_f32_vector(), b.video.to_f32_vector());
  const Result kept = run_generation(demo_model().parts, demo_request(1));
  Request same = demo_request(1);
  Result c = run_generation(m.parts, same);
  EXPECT_EQ(c.video.to_f32_vector(), kept.video.to_f32_vector());
}

// --offload (nn/weight_stream.h: each DiT block brought in from the mapped file just before use,
// the next one prefetched) computes the same values as the resident DiT: the demo's frames are
// bit-identical (docs/generate.md, "Memory").
TEST(DemoGenerate, OffloadGivesTheResidentFramesBitForBit) {
  const fs::path d = vidax::test::scratch_dir("demo_offload");
  DemoOptions o;
  o.out_dir = d.string();
  o.spiece_model = kData + "/text/data/tiny_spiece.model";
  make_demo_weights(o);
  LoadOptions lo;
  lo.weights_dir = d.string();
  lo.offload = true;
  const LoadedT2V streamed = load_t2v(lo);
  const Result s = run_generation(streamed.parts, demo_request(1));
  const Result r = run_generation(demo_model().parts, demo_request(1));
  EXPECT_EQ(s.video.to_f32_vector(), r.video.to_f32_vector());
  // The control: another seed's frames differ, so the comparison can fail.
  const Result other = run_generation(streamed.parts, demo_request(2));
  EXPECT_NE(other.video.to_f32_vector(), r.video.to_f32_vector());
}
