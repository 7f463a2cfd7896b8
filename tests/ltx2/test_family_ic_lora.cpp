// LTX-2 IC-LoRA reference videos in the family's run (`vidax generate --lora IC.safetensors
// --reference-video FILE --skip-stage-2`, `--video FILE`, `--video-conditioning FILE S`;
// src/models/ltx2/ic_lora_run.h): the run is the kind ltx2.pipeline.ic_lora's code path (the official
// ICLoraPipeline.__call__ with skip_stage_2, verified on tiny weights), bit for bit; the reference and
// its strengths move the output; the refusals by name; the CLI equals the in-process run.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "backend/ops.h"
#include "cli_child.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "io/video.h"
#include "ltx2_golden.h"
#include "models/ltx2/checkpoint.h"
#include "models/ltx2/family.h"
#include "models/ltx2/presets.h"
#include "models/ltx2/reference_video.h"
#include "models/ltx2/t2v_run.h"
#include "parity/parity.h"
#include "pipeline/generate.h"
#include "pipeline/scratch.h"

namespace fs = std::filesystem;
using namespace vidax;
using vidax::test::ltx2::expect_error;

namespace {

const std::string& demo_dir() {
  static const std::string d = [] {
    const fs::path root = test::scratch_dir("ltx2_ic_lora_demo");
    pipeline::DemoOptions o;
    o.out_dir = (root / "demo").string();
    ltx2::family().make_demo(ltx2::k23TinyDemo, o);
    return o.out_dir;
  }();
  return d;
}

std::string ic_lora() { return (fs::path(demo_dir()) / "ltx2.3-tiny-demo-ic-lora.safetensors").string(); }

// An MP4 of `frames` frames 40 x 56 (another size and aspect ratio than the stage-1 32 x 32: resized and
// centre-cropped) at `fps`, its path.
std::string mp4(const std::string& name, int64_t frames, int salt, double fps = 24) {
  const fs::path dir = test::scratch_dir("ltx2_ic_lora_video_" + name);
  io::RgbVideo v;
  v.frames = frames;
  v.height = 40;
  v.width = 56;
  v.rgb.resize(v.frame_bytes() * static_cast<size_t>(frames));
  for (size_t i = 0; i < v.rgb.size(); ++i)
    v.rgb[i] = static_cast<uint8_t>((i / 3 % 56 * 4 + i / (3 * 56 * 40) * 20 + static_cast<size_t>(salt)) % 256);
  io::VideoWriteOptions o;
  o.fps = fps;
  const std::string path = (dir / "ref.mp4").string();
  io::write_mp4(path, v, o);
  return path;
}

const pipeline::LoadedModel& loaded(bool with_lora = true) {
  auto load = [](bool lora) {
    pipeline::LoadOptions lo;
    lo.weights_dir = demo_dir();
    lo.precision = "fp32";
    if (lora) lo.loras = {{ic_lora(), 1.0}};
    return ltx2::family().load(lo);
  };
  static const pipeline::LoadedModel with = load(true);
  static const pipeline::LoadedModel without = load(false);
  return with_lora ? with : without;
}

pipeline::ReferenceVideo reference(const std::string& file, double strength = 1.0) {
  pipeline::ReferenceVideo v;
  v.path = file;
  v.strength = strength;
  v.video = io::read_video_tensor(file, "--reference-video", &v.fps);
  return v;
}

pipeline::Request demo_request(uint64_t seed) {
  const pipeline::Defaults& d = ltx2::preset(ltx2::k23TinyDemo).variant.defaults;
  pipeline::Request r;
  r.prompt = "a cat on a sofa";
  r.default_negative_prompt = d.negative_prompt;
  r.frames = 9;
  r.height = 64;
  r.width = 64;
  r.steps = d.steps;
  r.seed = seed;
  r.guidance = d.guidance;
  r.shift = d.shift;
  r.sampler = d.sampler;
  r.fps = 24;
  r.skip_stage_2 = true;
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

// The family's run with one reference video (12 frames: capped at 9) against the kind
// ltx2.pipeline.ic_lora fed the demo's DiT, the IC-LoRA file, its vae.encoder.*, the positive
// contexts the family encodes and the video's decoded frames (the kind preprocesses and encodes them
// itself): the latents agree exactly; the same file with every pixel + 8 must fail.
TEST(Ltx2FamilyICLora, TheRunIsTheICLoraKindsCodePath) {
  const std::string ref = mp4("kind", 12, 0);
  pipeline::Request req = demo_request(11);
  req.reference_videos = {reference(ref)};
  req.conditioning_attention_strength = 0.7;
  const pipeline::Result res = pipeline::run_generation(loaded().parts, req, {}, /*decode=*/false);
  EXPECT_EQ(res.latents.shape(), Shape({128, 2, 1, 1}));  // stage 1: 32 x 32, the reference tokens dropped
  EXPECT_EQ(res.height, 32);
  EXPECT_EQ(res.width, 32);
  EXPECT_EQ(res.timesteps.size(), 8u);  // DISTILLED_SIGMAS
  EXPECT_EQ(res.denoiser_calls, 8);

  const ltx2::CheckpointFiles files = ltx2::find_checkpoint(demo_dir());
  const ltx2::Preset& preset = ltx2::preset(ltx2::k23TinyDemo);
  const auto m = ltx2::load_model(files, preset, DType::F32, pipeline::Residency::Resident);
  const ltx2::PromptContexts ctx = ltx2::encode_contexts(*m, req.prompt, req.prompt);
  const fs::path d = test::scratch_dir("ltx2_ic_lora_kind");
  auto write_golden = [&](const std::string& path, double perturb) {
    const io::Checkpoint ck = io::Checkpoint::open(files.checkpoint);
    std::map<std::string, Tensor> t;
    for (const auto& n : ck.names())
      if ((n.rfind("model.diffusion_model.", 0) == 0 && n.find("embeddings_connector.") == std::string::npos) ||
          n.rfind("vae.encoder.", 0) == 0 || n.rfind("vae.per_channel_statistics.", 0) == 0)
        t[n] = ck.get(n);
    t["input.v_context_p"] = ctx.v_context_p;
    t["input.a_context_p"] = ctx.a_context_p;
    const Tensor frames = ltx2::video_frames_of(req.reference_videos[0].video);
    t["input.reference_video.0"] = perturb == 0 ? frames : ops::add_scalar(frames, perturb);
    t["output.video_latent"] = res.latents.unsqueeze(0);
    t["output.audio_latent"] = res.taps.at("audio_latent").unsqueeze(0);
    nlohmann::json c = {{"height", 64},
                        {"width", 64},
                        {"num_frames", 9},
                        {"frame_rate", 24.0},
                        {"seed", 11},
                        {"skip_stage_2", true},
                        {"conditioning_attention_strength", 0.7},
                        {"video_conditioning", {{{"strength", 1.0}}}},
                        {"loras", {{{"file", ic_lora()}, {"strength", 1.0}}}},
                        {"transformer", files.config.at("transformer")},
                        {"vae", files.config.at("vae")}};
    io::save_safetensors(path, t, {{"kind", "ltx2.pipeline.ic_lora"}, {"config", c.dump()}});
  };
  engine::register_builtins();
  write_golden((d / "same.safetensors").string(), 0);
  const parity::Report rep = parity::run((d / "same.safetensors").string(), parity::Options{});
  for (const auto& c : rep.rows) {
    std::printf("  family IC-LoRA run vs ltx2.pipeline.ic_lora %-22s max_abs=%.3g\n", c.name.c_str(), c.max_abs);
    if (c.status != parity::Comparison::Status::Skip) EXPECT_EQ(c.max_abs, 0.0) << c.name;
  }
  EXPECT_TRUE(rep.ok());
  EXPECT_EQ(rep.compared, 2);
  write_golden((d / "perturbed.safetensors").string(), 8.0);
  const parity::Report bad = parity::run((d / "perturbed.safetensors").string(), parity::Options{});
  EXPECT_FALSE(bad.ok());  // the negative control
}

// Another reference, another strength, an attention strength, an image beside the reference: each
// moves the latents; the LoRA matters (the run without it is refused, the LoRA at scale 0 differs).
TEST(Ltx2FamilyICLora, TheReferenceAndItsStrengthsMoveTheVideo) {
  const std::string a = mp4("a", 9, 3), b = mp4("b", 9, 101);
  auto run = [](pipeline::Request q) { return pipeline::run_generation(loaded().parts, q, {}, false); };
  pipeline::Request qa = demo_request(5);
  qa.reference_videos = {reference(a)};
  const pipeline::Result ra = run(qa);
  pipeline::Request qb = qa;
  qb.reference_videos = {reference(b)};
  pipeline::Request qs = qa;
  qs.reference_videos = {reference(a, 0.3)};
  pipeline::Request qt = qa;
  qt.conditioning_attention_strength = 0.2;
  pipeline::Request two = qa;
  two.reference_videos = {reference(a), reference(b, 0.5)};
  for (const auto& [q, what] : std::vector<std::pair<pipeline::Request, const char*>>{
           {qb, "another reference"}, {qs, "strength 0.3"}, {qt, "attention strength 0.2"}, {two, "two references"}}) {
    const pipeline::Result r = run(q);
    const double dv = max_abs(r.latents, ra.latents);
    std::printf("  %s vs the reference alone: video latent max_abs %.3g\n", what, dv);
    EXPECT_GT(dv, 1e-4) << what;
    EXPECT_TRUE(ops::all_finite(r.latents)) << what;
  }
  const pipeline::Result again = run(qa);
  EXPECT_EQ(max_abs(again.latents, ra.latents), 0.0);  // deterministic
  // The decoded video is at stage 1's size.
  const pipeline::Result dec = pipeline::run_generation(loaded().parts, qa, {}, /*decode=*/true);
  EXPECT_EQ(dec.video.shape(), Shape({3, 9, 32, 32}));
  EXPECT_TRUE(dec.audio.defined());
}

TEST(Ltx2FamilyICLora, BadRequestsAreRefusedByName) {
  const std::string ref = mp4("bad", 9, 7);
  pipeline::Request q = demo_request(1);
  q.reference_videos = {reference(ref)};
  expect_error([&] { pipeline::run_generation(loaded(false).parts, q, {}, false); }, "give it with --lora FILE");
  pipeline::Request no_skip = q;
  no_skip.skip_stage_2 = false;
  expect_error([&] { pipeline::run_generation(loaded().parts, no_skip, {}, false); }, "add --skip-stage-2");
  pipeline::Request wide = q;
  wide.width = 96;
  expect_error([&] { pipeline::run_generation(loaded().parts, wide, {}, false); }, "width 64 or 128");
  pipeline::Request steps = q;
  steps.steps = 3;
  expect_error([&] { pipeline::run_generation(loaded().parts, steps, {}, false); }, "--steps 3");
  pipeline::Request guided = q;
  guided.guidance = 5.5;
  expect_error([&] { pipeline::run_generation(loaded().parts, guided, {}, false); }, "unguided");
  pipeline::Request skip_alone = demo_request(1);
  expect_error([&] { pipeline::run_generation(loaded().parts, skip_alone, {}, false); }, "--skip-stage-2");
  pipeline::Parts no_refs = loaded().parts;
  no_refs.takes_reference_videos = false;
  expect_error([&] { pipeline::run_generation(no_refs, q, {}, false); }, "takes no reference videos");
}

// The binary: --reference-video, --video and --video-conditioning equal the in-process runs; --json
// records the reference videos; each bad command line names its option, before any weight is read
// where the request check can tell.
TEST(Ltx2CliICLora, GenerateWithReferenceVideosAndTheirErrors) {
  namespace cli = vidax::test::cli;
  const fs::path d = test::scratch_dir("ltx2_cli_ic_lora");
  const std::string ref = mp4("cli", 10, 9), slow = mp4("cli12", 9, 40, 12.0);
  // The demo's default size: 64 x 64 (stage 1: 32 x 32).
  const std::vector<std::string> base{"generate", "--weights", demo_dir(), "--prompt", "a cat on a sofa",
                                      "--frames", "9",        "--seed",    "11",   "--threads", "2",
                                      "--precision", "fp32",  "--fps",     "24"};
  auto gen = [&](std::vector<std::string> extra, bool out = false) {
    std::vector<std::string> a = base;
    a.insert(a.end(), extra.begin(), extra.end());
    return cli::run(a, {.capture_stdout = out, .timeout_s = 300});
  };
  auto latents_of = [](const std::string& f) {
    const io::Checkpoint ck = io::Checkpoint::open(f);
    return ck.get(ck.names().front());
  };
  auto in_process = [](std::vector<pipeline::ReferenceVideo> refs) {
    pipeline::Request q = demo_request(11);
    q.reference_videos = std::move(refs);
    return pipeline::run_generation(loaded().parts, q, {}, false);
  };
  const pipeline::Result one = in_process({reference(ref)});
  for (const char* opt : {"--reference-video", "--video"}) {
    const std::string lat = (d / (std::string(opt + 2) + ".safetensors")).string();
    const auto r = gen({"--lora", ic_lora(), opt, ref, "--skip-stage-2", "--output-format", "latents", "-o", lat});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_EQ(max_abs(latents_of(lat), one.latents), 0.0) << opt;
  }
  {  // Two references in command-line order, the second with its strength; the record names both.
    const std::string lat = (d / "two.safetensors").string();
    const auto r = gen({"--lora", ic_lora(), "--reference-video", ref, "--video-conditioning", slow, "0.5",
                        "--skip-stage-2", "--output-format", "latents", "-o", lat, "--json"},
                       true);
    ASSERT_EQ(r.code, 0) << r.err;
    const pipeline::Result two = in_process({reference(ref), reference(slow, 0.5)});
    EXPECT_EQ(max_abs(latents_of(lat), two.latents), 0.0);
    const nlohmann::json j = nlohmann::json::parse(r.out);
    ASSERT_EQ(j.at("reference_videos").size(), 2u) << j.dump();
    EXPECT_EQ(j["reference_videos"][1]["file"], slow);
    EXPECT_EQ(j["reference_videos"][1]["strength"], 0.5);
    EXPECT_EQ(j["steps"], 8);
    EXPECT_EQ(j["height"], 32);
    EXPECT_EQ(j["skip_stage_2"], true);
    EXPECT_NE(r.err.find("its frame rate 12"), std::string::npos) << r.err;  // taken frame by frame, warned
  }
  const std::string junk = (d / "junk.mp4").string();
  std::ofstream(junk) << "not a video";
  const std::string out = (d / "x.mp4").string();
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"--lora", ic_lora(), "--reference-video", ref}, "add --skip-stage-2"},
      {{"--reference-video", ref, "--skip-stage-2"}, "give it with --lora FILE"},
      {{"--lora", ic_lora(), "--video", ref, "--skip-stage-2", "--width", "96"}, "multiples of 64"},
      {{"--lora", ic_lora(), "--video-conditioning", ref, "1.5", "--skip-stage-2"},
       "--video-conditioning strength 1.5 (reference video 1): must be in [0, 1]"},
      {{"--skip-stage-2"}, "--skip-stage-2 / --conditioning-attention-strength: for the IC-LoRA pipeline"},
      {{"--conditioning-attention-strength", "0.5"}, "needs a reference video"},
      {{"--lora", ic_lora(), "--video", ref, "--skip-stage-2", "--conditioning-attention-strength", "2"},
       "--conditioning-attention-strength 2: must be in [0, 1]"},
      {{"--lora", ic_lora(), "--video", junk, "--skip-stage-2"}, "cannot read the --video " + junk},
      {{"--lora", ic_lora(), "--video", ref, "--skip-stage-2", "--steps", "3"}, "--steps 3"},
  };
  for (const auto& [extra, needle] : cases) {
    std::vector<std::string> e = extra;
    e.insert(e.end(), {"-o", out});
    const auto r = gen(e);
    EXPECT_NE(r.code, 0) << extra.back();
    EXPECT_NE(r.err.find(needle), std::string::npos) << r.err;
  }
  EXPECT_FALSE(fs::exists(out));

  // Wan takes no reference videos: refused by name before loading.
  const std::string wan = (d / "wan").string();
  {
    const auto r = cli::run({"make-demo", wan, "--model", "wan2.1-tiny-demo", "--tokenizer", cli::tiny_spiece()});
    ASSERT_EQ(r.code, 0) << r.err;
  }
  const auto r = cli::run({"generate", "--weights", wan, "--prompt", "a cat", "--steps", "1", "--video", ref, "-o", out},
                          {.timeout_s = 120});
  EXPECT_NE(r.code, 0);
  EXPECT_NE(r.err.find("--reference-video / --video-conditioning / --video: wan2.1-tiny-demo takes no reference "
                       "videos"),
            std::string::npos)
      << r.err;
}
