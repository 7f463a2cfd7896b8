// `vidax generate --two-stage` on the tiny demo (`vidax make-demo --model ltx2.3-tiny-demo` writes the
// upsampler and the distilled LoRA under their published names): the family run equals the code path
// of the kind ltx2.pipeline.two_stage (denoise_two_stage on the same parts), the CLI's output equals
// the family run, the LoRA is patched out of the resident DiT after the run, and the two-stage
// request rules and missing files are refused naming the value, the file and the flag.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "backend/ops.h"
#include "cli_child.h"
#include "core/rng.h"
#include "io/checkpoint.h"
#include "io/video.h"
#include "ltx2_golden.h"
#include "models/ltx2/checkpoint.h"
#include "models/ltx2/family.h"
#include "models/ltx2/presets.h"
#include "models/ltx2/t2v_run.h"
#include "models/ltx2/two_stage.h"
#include "models/ltx2/two_stage_run.h"
#include "pipeline/generate.h"
#include "pipeline/scratch.h"

namespace fs = std::filesystem;
using namespace vidax;
using vidax::test::ltx2::expect_error;

namespace {

const std::string& two_stage_demo() {
  static const std::string d = [] {
    const fs::path root = test::scratch_dir("ltx2_two_stage_demo");
    pipeline::DemoOptions o;
    o.out_dir = (root / "demo").string();
    ltx2::family().make_demo(ltx2::k23TinyDemo, o);
    return o.out_dir;
  }();
  return d;
}

pipeline::Request two_stage_request(uint64_t seed) {
  const pipeline::Defaults& d = ltx2::preset(ltx2::k23TinyDemo).variant.defaults;
  pipeline::Request r;
  r.prompt = "a red panda in the snow";
  r.default_negative_prompt = d.negative_prompt;
  r.frames = 9;
  r.height = 64;
  r.width = 128;
  r.steps = 2;
  r.seed = seed;
  r.guidance = d.guidance;
  r.shift = d.shift;
  r.sampler = d.sampler;
  r.fps = 24;
  r.two_stage = true;
  return r;
}

double max_abs(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_f64_vector(), y = b.to_f64_vector();
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}

}  // namespace

TEST(Ltx2TwoStageFamily, DemoHasThePublishedFileNames) {
  const fs::path d(two_stage_demo());
  EXPECT_TRUE(fs::is_regular_file(d / ltx2::kSpatialUpsamplerFile));
  EXPECT_TRUE(fs::is_regular_file(d / ltx2::kDistilledLoraFile));
  const auto f = ltx2::find_two_stage_files(d.string(), "", "");
  EXPECT_EQ(f->upsampler, (d / ltx2::kSpatialUpsamplerFile).string());
  ASSERT_TRUE(f->lora.has_value());
  EXPECT_EQ(f->lora->scale, 1.0);
  const auto up = ltx2::two_stage_upsampler(*f);
  EXPECT_EQ(up->config().mid_channels, 32);
  // The checkpoint discovery still finds the one bundled checkpoint beside them.
  EXPECT_EQ(fs::path(ltx2::find_checkpoint(d.string()).checkpoint).filename().string(), "ltx2.3-tiny-demo.safetensors");
  std::printf("  demo upsampler %lld bytes, LoRA %lld bytes\n",
              static_cast<long long>(fs::file_size(d / ltx2::kSpatialUpsamplerFile)),
              static_cast<long long>(fs::file_size(d / ltx2::kDistilledLoraFile)));
}

TEST(Ltx2TwoStageFamily, TheRunIsTheKindsCodePath) {
  pipeline::LoadOptions lo;
  lo.weights_dir = two_stage_demo();
  lo.precision = "fp32";
  const pipeline::LoadedModel loaded = ltx2::family().load(lo);
  EXPECT_TRUE(loaded.parts.two_stage);
  const pipeline::Request req = two_stage_request(42);
  int steps_seen = 0, total_seen = 0;
  pipeline::Events ev;
  ev.on_step = [&](int done, int total, double) {
    steps_seen = done;
    total_seen = total;
  };
  const pipeline::Result res = pipeline::run_generation(loaded.parts, req, ev, /*decode=*/true);
  EXPECT_EQ(steps_seen, 2 + 3);
  EXPECT_EQ(total_seen, 2 + 3);
  EXPECT_EQ(res.latents.shape(), Shape({128, 2, 2, 4}));
  EXPECT_EQ(res.video.shape(), Shape({3, 9, 64, 128}));
  EXPECT_EQ(res.denoiser_calls, 2 * 4 + 3);  // stage 1 guided (4 passes batched), stage 2 one pass
  EXPECT_TRUE(ops::all_finite(res.video) && ops::all_finite(res.audio));

  // The kind's code path on a model loaded on its own: the same contexts, parts and generator.
  const ltx2::CheckpointFiles files = ltx2::find_checkpoint(two_stage_demo());
  const ltx2::Preset& preset = ltx2::preset(ltx2::k23TinyDemo);
  const auto m = ltx2::load_model(files, preset, DType::F32, pipeline::Residency::Resident);
  const ltx2::PromptContexts ctx = ltx2::encode_contexts(*m, req.prompt, res.negative_prompt);
  const ltx2::T2VRequest r = ltx2::t2v_request(preset, req);
  auto two = ltx2::find_two_stage_files(two_stage_demo(), "", "");
  const auto dit = std::const_pointer_cast<ltx2::LTXModel>(m->dit);
  const auto lora = ltx2::two_stage_lora(*two, m->dit_source->base, m->dit_source->config, ltx2::linear_weight_names(*dit));
  const auto up = ltx2::two_stage_upsampler(*two);
  ltx2::TwoStageParts parts;
  parts.dit = dit.get();
  parts.stage2_lora = lora.get();
  parts.upsampler = up.get();
  parts.stats = m->latent_stats.get();
  TorchGenerator gen(r.seed);
  const ltx2::TwoStageLatents lat = ltx2::denoise_two_stage(parts, ltx2::TwoStageKind::TwoStage, r, ctx, gen);
  EXPECT_EQ(max_abs(lat.video.select(0, 0), res.latents), 0.0);
  EXPECT_EQ(max_abs(lat.audio.select(0, 0), res.taps.at("audio_latent")), 0.0);
  ltx2::DecoderConditioning cond;
  cond.generator = &gen;
  const Tensor video = ops::clamp(m->vae->forward(lat.video, {}, cond).select(0, 0), -1.0, 1.0);
  EXPECT_EQ(max_abs(video, res.video), 0.0);
  // The negative control: without the LoRA stage 2 is another model.
  TorchGenerator g2(r.seed);
  parts.stage2_lora = nullptr;
  const ltx2::TwoStageLatents plain = ltx2::denoise_two_stage(parts, ltx2::TwoStageKind::Distilled, r, ctx, g2);
  EXPECT_GT(max_abs(plain.stage2.video, lat.stage2.video), 1e-3);

  // A second run of the loaded model gives the same latents (the LoRA was patched out and in again),
  // and a one-stage run after it is the one-stage run of a fresh model.
  const pipeline::Result again = pipeline::run_generation(loaded.parts, req, {}, /*decode=*/false);
  EXPECT_EQ(max_abs(again.latents, res.latents), 0.0);
  pipeline::Request one = req;
  one.two_stage = false;
  one.height = 32;
  one.width = 64;
  const pipeline::Result after = pipeline::run_generation(loaded.parts, one, {}, false);
  TorchGenerator g3(r.seed);
  const ltx2::T2VLatents fresh = ltx2::denoise_t2v(*m->dit, ltx2::t2v_request(preset, one), ctx, g3);
  EXPECT_EQ(max_abs(fresh.video.select(0, 0), after.latents), 0.0);
}

TEST(Ltx2TwoStageFamily, MissingFilesAndBadSizesAreRefusedByName) {
  const fs::path d = test::scratch_dir("ltx2_two_stage_missing");
  // A demo folder without the upsampler / the LoRA.
  const fs::path bare = d / "bare";
  fs::create_directories(bare);
  for (const auto& e : fs::directory_iterator(two_stage_demo())) {
    const std::string n = e.path().filename().string();
    if (n == ltx2::kSpatialUpsamplerFile || n == ltx2::kDistilledLoraFile) continue;
    fs::copy(e.path(), bare / n, fs::copy_options::recursive);
  }
  pipeline::LoadOptions lo;
  lo.weights_dir = bare.string();
  lo.precision = "fp32";
  {
    const pipeline::LoadedModel loaded = ltx2::family().load(lo);
    expect_error([&] { pipeline::run_generation(loaded.parts, two_stage_request(1), {}, false); },
                 std::string("put ") + ltx2::kSpatialUpsamplerFile);
    expect_error([&] { pipeline::run_generation(loaded.parts, two_stage_request(1), {}, false); },
                 "--spatial-upsampler-path FILE");
  }
  lo.spatial_upsampler = (fs::path(two_stage_demo()) / ltx2::kSpatialUpsamplerFile).string();
  {
    const pipeline::LoadedModel loaded = ltx2::family().load(lo);
    expect_error([&] { pipeline::run_generation(loaded.parts, two_stage_request(1), {}, false); },
                 "--distilled-lora FILE[:STRENGTH]");
    pipeline::Request q = two_stage_request(1);
    q.width = 96;
    expect_error([&] { pipeline::run_generation(loaded.parts, q, {}, false); }, "width 64 or 128");
  }
  lo.distilled_lora = (d / "nothing.safetensors").string() + ":0.5";
  expect_error([&] { ltx2::family().load(lo); }, "--distilled-lora");
  lo.distilled_lora.clear();
  lo.spatial_upsampler = (d / "nothing.safetensors").string();
  expect_error([&] { ltx2::family().load(lo); }, "--spatial-upsampler-path " + lo.spatial_upsampler);
}

TEST(Ltx2TwoStageCli, GenerateTwoStageIsTheFamilyRun) {
  namespace cli = vidax::test::cli;
  const fs::path d = test::scratch_dir("ltx2_two_stage_cli");
  const std::string demo = two_stage_demo();
  const std::string lat = (d / "lat.safetensors").string(), mp4 = (d / "out.mp4").string();
  std::vector<std::string> base{"generate", "--weights", demo, "--prompt", "a red panda in the snow",
                                "--steps", "2", "--seed", "42", "--fps", "24", "--threads", "2", "--two-stage"};
  auto gen = [&](std::vector<std::string> extra) {
    std::vector<std::string> a = base;
    if (std::find(extra.begin(), extra.end(), "--frames") == extra.end()) a.insert(a.end(), {"--frames", "9"});
    a.insert(a.end(), extra.begin(), extra.end());
    return cli::run(a, {.timeout_s = 300});
  };
  {  // Latents of 64 x 128: the family run's.
    const auto r = gen({"--height", "64", "--width", "128", "--output-format", "latents", "-o", lat});
    ASSERT_EQ(r.code, 0) << r.err;
    pipeline::LoadOptions lo;
    lo.weights_dir = demo;
    lo.precision = "fp32";
    const pipeline::LoadedModel loaded = ltx2::family().load(lo);
    const pipeline::Result res = pipeline::run_generation(loaded.parts, two_stage_request(42), {}, false);
    const io::Checkpoint ck = io::Checkpoint::open(lat);
    EXPECT_EQ(max_abs(ck.get(ck.names().front()), res.latents), 0.0);
  }
  {  // Without --height / --width: the two-stage default size (twice the one-stage demo's).
    const auto r = gen({"-o", mp4});
    ASSERT_EQ(r.code, 0) << r.err;
    const io::VideoFileInfo info = io::read_video(mp4);
    EXPECT_EQ(info.frames, 9);
    EXPECT_EQ(info.width, 128);
    EXPECT_EQ(info.height, 128);
  }
  {  // Sizes and files refused naming the value and the flag.
    const std::string out = (d / "bad.mp4").string();
    const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
        {{"--width", "96", "--height", "64"}, "width 64 or 128"},
        {{"--width", "128", "--height", "32"}, "multiples of 64"},
        {{"--frames", "10", "--width", "128", "--height", "64"}, "9 or 17"},
        {{"--spatial-upsampler-path", (d / "none.safetensors").string()}, "--spatial-upsampler-path"},
        {{"--distilled-lora", (d / "none.safetensors").string()}, "--distilled-lora"},
    };
    for (const auto& [extra, needle] : cases) {
      std::vector<std::string> e = extra;
      e.insert(e.end(), {"-o", out});
      const auto r = gen(e);
      EXPECT_NE(r.code, 0) << extra.front();
      EXPECT_NE(r.err.find(needle), std::string::npos) << extra.front() << ": " << r.err;
    }
    EXPECT_FALSE(fs::exists(out));
  }
}

namespace {

const std::string& distilled_demo() {
  static const std::string d = [] {
    const fs::path root = test::scratch_dir("ltx2_distilled_demo");
    pipeline::DemoOptions o;
    o.out_dir = (root / "demo").string();
    ltx2::family().make_demo(ltx2::k23TinyDistilledDemo, o);
    return o.out_dir;
  }();
  return d;
}

pipeline::Request distilled_request(uint64_t seed) {
  pipeline::Request r = two_stage_request(seed);
  r.two_stage = false;  // the distilled variant is always two-stage
  r.height = 64;
  r.width = 64;
  r.steps = ltx2::kDistilledSteps;
  r.guidance = 1.0;
  r.default_negative_prompt.clear();
  return r;
}

}  // namespace

TEST(Ltx2DistilledFamily, TheDistilledDemoRunIsTheKindsCodePath) {
  EXPECT_EQ(ltx2::family().detect(distilled_demo()), ltx2::k23TinyDistilledDemo);
  pipeline::LoadOptions lo;
  lo.weights_dir = distilled_demo();
  lo.precision = "fp32";
  const pipeline::LoadedModel loaded = ltx2::family().load(lo);
  EXPECT_EQ(loaded.variant.name, ltx2::k23TinyDistilledDemo);
  const pipeline::Request req = distilled_request(3);
  int total_seen = 0;
  pipeline::Events ev;
  ev.on_step = [&](int, int total, double) { total_seen = total; };
  const pipeline::Result res = pipeline::run_generation(loaded.parts, req, ev, /*decode=*/true);
  EXPECT_EQ(total_seen, 8 + 3);
  EXPECT_EQ(res.denoiser_calls, 8 + 3);  // SimpleDenoiser: one pass per step
  EXPECT_EQ(res.latents.shape(), Shape({128, 2, 2, 2}));
  EXPECT_EQ(res.negative_prompt, "");

  const ltx2::CheckpointFiles files = ltx2::find_checkpoint(distilled_demo(), true);
  const ltx2::Preset& preset = ltx2::preset(ltx2::k23TinyDistilledDemo);
  const auto m = ltx2::load_model(files, preset, DType::F32, pipeline::Residency::Resident);
  const ltx2::PromptContexts ctx = ltx2::encode_contexts(*m, req.prompt, "", nullptr, nullptr, false);
  EXPECT_FALSE(ctx.v_context_n.defined());
  auto two = ltx2::find_two_stage_files(distilled_demo(), "", "");
  const auto up = ltx2::two_stage_upsampler(*two);
  ltx2::TwoStageParts parts;
  parts.dit = std::const_pointer_cast<ltx2::LTXModel>(m->dit).get();
  parts.upsampler = up.get();
  parts.stats = m->latent_stats.get();
  const ltx2::T2VRequest r = ltx2::t2v_request(preset, req);
  TorchGenerator gen(r.seed);
  const ltx2::TwoStageLatents lat = ltx2::denoise_two_stage(parts, ltx2::TwoStageKind::Distilled, r, ctx, gen);
  EXPECT_EQ(max_abs(lat.video.select(0, 0), res.latents), 0.0);
  EXPECT_EQ(max_abs(lat.audio.select(0, 0), res.taps.at("audio_latent")), 0.0);
  ltx2::DecoderConditioning cond;
  cond.generator = &gen;
  EXPECT_EQ(max_abs(ops::clamp(m->vae->forward(lat.video, {}, cond).select(0, 0), -1.0, 1.0), res.video), 0.0);
  // Another seed moves it (the control).
  const pipeline::Result other = pipeline::run_generation(loaded.parts, distilled_request(4), {}, false);
  EXPECT_GT(max_abs(other.latents, res.latents), 1e-3);

  // What the distilled pipeline does not take, by name.
  pipeline::Request q = distilled_request(3);
  q.steps = 4;
  expect_error([&] { pipeline::run_generation(loaded.parts, q, {}, false); }, "--steps 4");
  q = distilled_request(3);
  q.guidance = 3.0;
  expect_error([&] { pipeline::run_generation(loaded.parts, q, {}, false); }, "without guidance");
  q = distilled_request(3);
  q.negative_prompt = "blurry";
  expect_error([&] { pipeline::run_generation(loaded.parts, q, {}, false); }, "--negative-prompt");
  // The dev variants refuse the distilled checkpoint and the distilled variant the dev one.
  lo.model = ltx2::k23TinyDemo;
  expect_error([&] { ltx2::family().load(lo); }, "is a distilled checkpoint");
  lo.model = ltx2::k23TinyDistilledDemo;
  lo.weights_dir = two_stage_demo();
  expect_error([&] { ltx2::family().load(lo); }, "is not a distilled checkpoint");
}

TEST(Ltx2DistilledCli, ModelsListsTheVariantAndGenerateRunsIt) {
  namespace cli = vidax::test::cli;
  const auto models = cli::run({"models"}, {.capture_stdout = true, .timeout_s = 60});
  ASSERT_EQ(models.code, 0) << models.err;
  EXPECT_NE(models.out.find(ltx2::k23Distilled), std::string::npos) << models.out;
  EXPECT_NE(models.out.find(ltx2::k23TinyDistilledDemo), std::string::npos);
  const fs::path d = test::scratch_dir("ltx2_distilled_cli");
  const std::string lat = (d / "lat.safetensors").string();
  const auto r = cli::run({"generate", "--weights", distilled_demo(), "--prompt", "a red panda in the snow", "--frames",
                           "9", "--height", "64", "--width", "64", "--seed", "3", "--fps", "24", "--threads", "2",
                           "--output-format", "latents", "-o", lat},
                          {.timeout_s = 300});
  ASSERT_EQ(r.code, 0) << r.err;
  pipeline::LoadOptions lo;
  lo.weights_dir = distilled_demo();
  lo.precision = "fp32";
  const pipeline::LoadedModel loaded = ltx2::family().load(lo);
  const pipeline::Result res = pipeline::run_generation(loaded.parts, distilled_request(3), {}, false);
  const io::Checkpoint ck = io::Checkpoint::open(lat);
  EXPECT_EQ(max_abs(ck.get(ck.names().front()), res.latents), 0.0);
  const auto bad = cli::run({"generate", "--weights", distilled_demo(), "--prompt", "a cat", "--steps", "4", "-o",
                             (d / "x.mp4").string()},
                            {.timeout_s = 300});
  EXPECT_NE(bad.code, 0);
  EXPECT_NE(bad.err.find("--steps 4"), std::string::npos) << bad.err;
}

TEST(Ltx2TwoStageFamily, AnImageIsEncodedAtBothStagesSizes) {
  pipeline::LoadOptions lo;
  lo.weights_dir = two_stage_demo();
  lo.precision = "fp32";
  const pipeline::LoadedModel loaded = ltx2::family().load(lo);
  pipeline::Request req = two_stage_request(5);
  std::vector<float> px(3 * 40 * 56);
  for (size_t i = 0; i < px.size(); ++i) px[i] = static_cast<float>((i * 37 % 255) / 127.5 - 1.0);
  req.image = Tensor::from_f32(px, {3, 40, 56});  // a first frame of another size (resized, centre-cropped)
  const pipeline::Result res = pipeline::run_generation(loaded.parts, req, {}, /*decode=*/false);
  pipeline::Request plain = req;
  plain.image = Tensor();
  const pipeline::Result without = pipeline::run_generation(loaded.parts, plain, {}, false);
  EXPECT_GT(max_abs(res.latents, without.latents), 1e-3);

  const ltx2::CheckpointFiles files = ltx2::find_checkpoint(two_stage_demo());
  const ltx2::Preset& preset = ltx2::preset(ltx2::k23TinyDemo);
  const auto m = ltx2::load_model(files, preset, DType::F32, pipeline::Residency::Resident);
  const ltx2::PromptContexts ctx = ltx2::encode_contexts(*m, req.prompt, res.negative_prompt);
  const ltx2::T2VRequest r = ltx2::t2v_request(preset, req), r1 = ltx2::stage1_request(r);
  const auto images1 = ltx2::encode_images(*m, req, r1), images2 = ltx2::encode_images(*m, req, r);
  ASSERT_EQ(images1.size(), 1u);
  EXPECT_EQ(images1[0].latent.shape(), Shape({1, 128, 1, 1, 2}));  // 32 x 64 / 32
  EXPECT_EQ(images2[0].latent.shape(), Shape({1, 128, 1, 2, 4}));
  auto two = ltx2::find_two_stage_files(two_stage_demo(), "", "");
  const auto dit = std::const_pointer_cast<ltx2::LTXModel>(m->dit);
  const auto lora = ltx2::two_stage_lora(*two, m->dit_source->base, m->dit_source->config, ltx2::linear_weight_names(*dit));
  const auto up = ltx2::two_stage_upsampler(*two);
  ltx2::TwoStageParts parts;
  parts.dit = dit.get();
  parts.stage2_lora = lora.get();
  parts.upsampler = up.get();
  parts.stats = m->latent_stats.get();
  TorchGenerator gen(r.seed);
  const ltx2::TwoStageLatents lat =
      ltx2::denoise_two_stage(parts, ltx2::TwoStageKind::TwoStage, r, ctx, gen, images1, images2);
  EXPECT_EQ(max_abs(lat.video.select(0, 0), res.latents), 0.0);
  // Stage 2's first frame keeps the full-size image latent as its clean latent (strength 1).
  const Tensor clean = lat.stage2.video_state.clean_latent.slice(1, 0, 8).contiguous();
  EXPECT_EQ(max_abs(clean, images2[0].latent.reshape({1, 128, 8}).permute({0, 2, 1}).contiguous()), 0.0);
}
