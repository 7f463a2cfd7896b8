// `vidax generate --record DIR` / `--replay DIR` on the LTX-2 tiny demo as a user runs them (the built
// binary): a record of two streams (format version 2: video then audio drawn from one generator)
// replays with zero difference at fp32; a perturbed step stops the replay there naming the stream;
// a record of another model or another stream set is refused naming why; the official
// TI2VidOneStagePipeline's records (tools/golden/record_reference_ltx2.py) replay within the fp32
// bound, and against other weights diverge at step 1.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_child.h"
#include "io/checkpoint.h"
#include "io/video.h"
#include "core/rng.h"
#include "models/ltx2/family.h"
#include "models/ltx2/presets.h"
#include "pipeline/generate.h"
#include "pipeline/record.h"
#include "pipeline/scratch.h"

namespace fs = std::filesystem;
using namespace vidax::test::cli;

namespace {

const std::string kData = VIDAX_TEST_DATA_DIR;

const fs::path& work_dir() {
  static fs::path d = vidax::test::scratch_dir("ltx2_record");
  return d;
}

// The demo (`vidax make-demo DIR --model ltx2.3-tiny-demo`, seed 0: the weights the golden records
// were made on), and one made with another seed (the control).
std::string demo(const std::string& seed = "0") {
  const std::string d = (work_dir() / ("demo-" + seed)).string();
  if (!fs::exists(fs::path(d) / "vidax_model.json")) {
    CmdResult r = run({"make-demo", d, "--model", "ltx2.3-tiny-demo", "--seed", seed}, {.timeout_s = 120});
    EXPECT_EQ(r.code, 0) << r.err;
  }
  return d;
}

ChildOptions with_stdout() {
  ChildOptions o;
  o.capture_stdout = true;
  o.timeout_s = 300;
  return o;
}

// The demo recorded once: 4 steps (the demo's default), 9 frames 64x64 at 24 fps, seed 42.
const fs::path& demo_record() {
  static fs::path d = [] {
    const fs::path rec = work_dir() / "demo-record";
    fs::remove_all(rec);
    CmdResult r = run({"generate", "--weights", demo(), "--prompt", "a red panda", "--seed", "42", "--threads", "2",
                       "--record", rec.string(), "-o", (work_dir() / "demo.mp4").string()},
                      {.timeout_s = 300});
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("recorded 4 steps into " + rec.string()), std::string::npos) << r.err;
    return rec;
  }();
  return d;
}

fs::path copy_of(const fs::path& rec, const std::string& name) {
  const fs::path d = work_dir() / name;
  fs::remove_all(d);
  fs::copy(rec, d, fs::copy_options::recursive);
  return d;
}

nlohmann::json index_of(const fs::path& d) {
  std::ifstream f(d / "record.json");
  return nlohmann::json::parse(f);
}

CmdResult replay(const fs::path& rec, std::vector<std::string> extra = {}, const std::string& weights = demo()) {
  std::vector<std::string> a = {"generate", "--weights", weights, "--replay", rec.string(), "--threads", "2"};
  a.insert(a.end(), extra.begin(), extra.end());
  return run(a, with_stdout());
}

}  // namespace

TEST(Ltx2Record, RecordThenReplayIsExactOnBothStreams) {
  const fs::path& rec = demo_record();
  const nlohmann::json j = index_of(rec);
  EXPECT_EQ(j["format_version"], 2);
  EXPECT_EQ(j["model"], "ltx2.3-tiny-demo");
  EXPECT_EQ(j["family"], "ltx2");
  EXPECT_EQ(j["request"]["fps"], 24.0);
  ASSERT_EQ(j["streams"].size(), 2u);
  EXPECT_EQ(j["streams"][0], nlohmann::json({{"name", "video"}, {"shape", {8, 128}}, {"final_shape", {128, 2, 2, 2}}}));
  EXPECT_EQ(j["streams"][1], nlohmann::json({{"name", "audio"}, {"shape", {9, 128}}, {"final_shape", {8, 9, 16}}}));
  EXPECT_EQ(j["noise"][0]["stream"], "video");  // drawn first
  EXPECT_EQ(j["noise"][1]["stream"], "audio");
  EXPECT_EQ(j["timesteps"].size(), 4u);
  EXPECT_EQ(j["timesteps"][3], 0.10000002384185791);  // LTX2Scheduler's sigmas, not a flow shift
  EXPECT_TRUE(fs::is_regular_file(work_dir() / "demo.mp4"));
  const CmdResult r = replay(rec);
  ASSERT_EQ(r.code, 0) << r.err;
  for (const char* line : {"step 1/4 video t=1 max_abs=0 mean_abs=0 rel_l2=0 OK",
                           "step 1/4 audio t=1 max_abs=0 mean_abs=0 rel_l2=0 OK",
                           "step 4/4 audio t=0.1 max_abs=0 mean_abs=0 rel_l2=0 OK",
                           "final video max_abs=0 mean_abs=0 rel_l2=0 OK", "final audio max_abs=0 mean_abs=0 rel_l2=0 OK",
                           "PASS replay: 4/4 steps within rel_l2 <= 1e-05"})
    EXPECT_NE(r.out.find(line), std::string::npos) << line << "\n" << r.out;
  EXPECT_NE(r.err.find("the seed's own CPU draws match the record's bit for bit"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(work_dir() / "ltx2.3-tiny-demo-seed42.mp4"));  // a replay writes nothing without -o
  // --json: every step and stream, and the finals.
  const CmdResult rj = replay(rec, {"--json"});
  ASSERT_EQ(rj.code, 0) << rj.err;
  const nlohmann::json rep = nlohmann::json::parse(rj.out).at("replay");
  EXPECT_EQ(rep["ok"], true);
  ASSERT_EQ(rep["steps"].size(), 8u);
  EXPECT_EQ(rep["steps"][7]["stream"], "audio");
  EXPECT_EQ(rep["finals"].size(), 2u);
  for (const auto& s : rep["steps"]) EXPECT_EQ(s["max_abs"], 0.0);
}

TEST(Ltx2Record, PerturbedStepStopsTheReplayThereNamingTheStream) {
  const fs::path d = copy_of(demo_record(), "perturbed");
  {  // step 3's audio latent: one element moved by 0.01
    const std::string f = (d / "step_0003.safetensors").string();
    vidax::io::Checkpoint c = vidax::io::Checkpoint::open(f);
    vidax::Tensor v = c.get("video").clone(), a = c.get("audio").clone();
    a.data<float>()[17] += 0.01f;
    vidax::io::save_safetensors(f, {{"video", v}, {"audio", a}});
  }
  const CmdResult r = replay(d);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("replay diverged at step 3/4"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("the audio latent's rel_l2"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("step 2/4 audio t=0.867083 max_abs=0 mean_abs=0 rel_l2=0 OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 3/4 video t=0.631569 max_abs=0 mean_abs=0 rel_l2=0 OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 3/4 audio t=0.631569 max_abs=0.01"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("step 4/4"), std::string::npos) << r.out;  // stopped there
  EXPECT_NE(r.out.find("FAIL replay: 2/4 steps"), std::string::npos) << r.out;
  const CmdResult loose = replay(d, {"--replay-tolerance", "0.1"});
  EXPECT_EQ(loose.code, 0) << loose.err;
}

// Refused before any step: a record of another model (the Wan demo's), the record's options
// contradicted; at the first draw: a record of another stream set.
TEST(Ltx2Record, AnotherModelOrStreamSetIsRefusedNamingWhy) {
  {
    const CmdResult r = replay(kData + "/golden/pipeline/wan_record_tiny");
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("recorded with model wan2.1-tiny-demo but the weights are ltx2.3-tiny-demo"),
              std::string::npos)
        << r.err;
  }
  {
    const CmdResult r = replay(demo_record(), {"--fps", "25"});
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("--fps 25 differs from the record's 24"), std::string::npos) << r.err;
  }
  {  // the audio stream renamed throughout the index
    const fs::path d = copy_of(demo_record(), "renamed");
    nlohmann::json j = index_of(d);
    j["streams"][1]["name"] = "sound";
    j["noise"][1]["stream"] = "sound";
    j["noise"][1]["tensor"] = "audio";
    for (auto& s : j["steps"]) {
      s["latents"]["sound"] = s["latents"]["audio"];
      s["latents"].erase("audio");
    }
    j["final"]["sound"] = j["final"]["audio"];
    j["final"].erase("audio");
    std::ofstream(d / "record.json") << j.dump(1);
    const CmdResult r = replay(d);
    EXPECT_EQ(r.code, 1);
    EXPECT_NE(r.err.find("draw 2 of this run is the audio noise, the record's is the sound noise (streams video, sound)"),
              std::string::npos)
        << r.err;
    EXPECT_EQ(r.out.find("step 1/4"), std::string::npos) << r.out;
  }
}

// The official TI2VidOneStagePipeline.__call__ on the demo's weights, recorded by
// tools/golden/record_reference_ltx2.py (CPU, fp32): the default request (4 steps, 9 frames 64x64,
// 24 fps, seed 42, the LTX-2.3 guiders with STG on block 1, the default negative prompt), and 3
// steps of 17 frames 96x64 at 25 fps (seed 7, guidance 4, another prompt). Each step of each stream
// within the fp32 bound; the CPU generator's noise bit-identical to vidax's. Control: the same
// records against a demo with other random weights (make-demo --seed 1) stop at step 1.
TEST(Ltx2Record, ReferenceRecordsReplayWithinTheBound) {
  for (const char* name : {"ltx2_record_tiny", "ltx2_record_tiny_fps25"}) {
    const fs::path rec = kData + "/golden/ltx2/" + name;
    const CmdResult r = replay(rec);
    ASSERT_EQ(r.code, 0) << name << ": " << r.err << r.out;
    EXPECT_NE(r.out.find("PASS replay:"), std::string::npos) << r.out;
    EXPECT_NE(r.err.find("the seed's own CPU draws match the record's bit for bit"), std::string::npos) << r.err;
    std::printf("  %s:\n%s", name, r.out.c_str());
    const CmdResult other = replay(rec, {}, demo("1"));
    EXPECT_EQ(other.code, 1) << name;
    EXPECT_NE(other.err.find("replay diverged at step 1/"), std::string::npos) << other.err;
  }
}

// A run with images (--image at frame 0, a second at frame 8 with strength 0.5: its tokens are
// appended to the video state): the images are not in the record, so the replay takes the same
// options; the video stream's recorded shape holds the appended tokens. Without the images the
// replay stops at step 1.
TEST(Ltx2Record, ImageRunReplaysWithTheSameImages) {
  std::vector<std::string> images;
  for (int k = 0; k < 2; ++k) {
    vidax::io::RgbVideo v;
    v.frames = 1;
    v.height = 40;
    v.width = 56;
    v.rgb.resize(v.frame_bytes());
    for (size_t i = 0; i < v.rgb.size(); ++i) v.rgb[i] = static_cast<uint8_t>((i * 13 + 101 * k) % 256);
    const fs::path dir = work_dir() / ("png" + std::to_string(k));
    vidax::io::write_png_frames(dir.string(), v, {});
    images.push_back((dir / "frame_00000.png").string());
  }
  const std::vector<std::string> opts = {"--image", images[0], "--image", images[1], "--image-frame", "8",
                                         "--image-strength", "0.5"};
  const fs::path rec = work_dir() / "image-record";
  fs::remove_all(rec);
  std::vector<std::string> a = {"generate", "--weights", demo(), "--prompt", "a red panda", "--seed", "5",
                                "--threads", "2", "--record", rec.string(), "-o", (work_dir() / "img.mp4").string()};
  a.insert(a.end(), opts.begin(), opts.end());
  const CmdResult r = run(a, {.timeout_s = 300});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = index_of(rec);
  EXPECT_EQ(j["streams"][0]["shape"], nlohmann::json({12, 128}));  // 8 tokens + the second image's 4
  EXPECT_EQ(j["streams"][0]["final_shape"], nlohmann::json({128, 2, 2, 2}));
  const CmdResult same = replay(rec, opts);
  ASSERT_EQ(same.code, 0) << same.err;
  EXPECT_NE(same.out.find("final video max_abs=0 mean_abs=0 rel_l2=0 OK"), std::string::npos) << same.out;
  EXPECT_NE(same.out.find("PASS replay: 4/4 steps"), std::string::npos) << same.out;
  const CmdResult none = replay(rec);
  EXPECT_EQ(none.code, 1);
  EXPECT_NE(none.err.find("the recorded video noise is [12, 128], this run draws [8, 128]"), std::string::npos)
      << none.err;
}

// A record whose draws came from another generator (as a CUDA run's do: no CPU generator gives
// them): made in-process with both draws replaced by another stream's, then replayed by the binary.
// The recorded draws are injected: max-abs 0 on every step, and the replay says the seed's own
// draws differ. Control: the seed's own draws give other latents.
TEST(Ltx2Record, ForeignDrawsAreInjectedAsACudaRecordsWouldBe) {
  using namespace vidax;
  pipeline::LoadOptions lo;
  lo.weights_dir = demo();
  lo.precision = "fp32";
  const pipeline::LoadedModel m = ltx2::family().load(lo);
  const pipeline::Defaults& d = ltx2::preset(ltx2::k23TinyDemo).variant.defaults;
  pipeline::Request q;
  q.prompt = "a red panda";
  q.default_negative_prompt = d.negative_prompt;
  q.frames = d.frames;
  q.height = d.height;
  q.width = d.width;
  q.steps = 2;
  q.seed = 42;
  q.guidance = d.guidance;
  q.shift = d.shift;
  q.sampler = d.sampler;
  q.fps = d.fps;
  const fs::path rec = work_dir() / "foreign-record";
  fs::remove_all(rec);
  pipeline::Result foreign;
  {
    TorchGenerator other(4242);
    pipeline::Events ev;
    ev.on_stream_noise = [&](const std::string&, const Tensor& t) { return other.randn(t.shape()); };
    pipeline::RecordWriter w(rec.string());
    w.attach(ev);
    foreign = pipeline::run_generation(m.parts, q, ev, false);
    pipeline::RecordHeader h;
    h.producer = {{"name", "test"}, {"generator", "another one"}};
    h.model = ltx2::k23TinyDemo;
    h.family = "ltx2";
    h.precision = "fp32";
    h.request = pipeline::request_to_json(q);
    w.commit(h, foreign);
  }
  const CmdResult r = replay(rec);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("step 2/2 audio t=0.1 max_abs=0 mean_abs=0 rel_l2=0 OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("final video max_abs=0 mean_abs=0 rel_l2=0 OK"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("the seed's own CPU draws differ from the record's"), std::string::npos) << r.err;
  const pipeline::Result own = pipeline::run_generation(m.parts, q, {}, false);
  EXPECT_NE(own.latents.to_f32_vector(), foreign.latents.to_f32_vector());
  EXPECT_NE(own.taps.at("audio_latent").to_f32_vector(), foreign.taps.at("audio_latent").to_f32_vector());
}
