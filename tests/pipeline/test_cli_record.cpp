// `vidax generate --record DIR` / `--replay DIR` as a user runs them (the built binary): a record
// of the demo replays with zero error, a perturbed step stops the replay there with exit 1, the
// official WanT2V.generate's record (tools/golden/record_reference.py) replays within the fp32
// bound, and bad records or options fail before any weight is read, naming what is wrong.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "cli_child.h"
#include "core/rng.h"
#include "io/checkpoint.h"
#include "scratch.h"

namespace fs = std::filesystem;
using namespace vidax::test::cli;

namespace {

const std::string kData = VIDAX_TEST_DATA_DIR;

const fs::path& work_dir() {
  static fs::path d = vidax::test::scratch_dir("cli_record");
  return d;
}

std::string demo_weights() {
  static std::string dir = [] {
    const std::string d = (work_dir() / "demo-weights").string();
    CmdResult r = run({"make-demo", d, "--tokenizer", tiny_spiece()});
    EXPECT_EQ(r.code, 0) << r.err;
    return d;
  }();
  return dir;
}

std::vector<std::string> small(const std::vector<std::string>& extra) {
  std::vector<std::string> a = {"generate", "--weights", demo_weights(), "--prompt", "a red panda", "--frames", "5",
                                "--height", "32", "--width", "48", "--steps", "3", "--seed", "42"};
  a.insert(a.end(), extra.begin(), extra.end());
  return a;
}

ChildOptions with_stdout() {
  ChildOptions o;
  o.capture_stdout = true;
  return o;
}

// The demo recorded once (3 unipc steps), shared by the tests that only read it.
const fs::path& demo_record() {
  static fs::path d = [] {
    const fs::path rec = work_dir() / "demo-record";
    CmdResult r = run(small({"--record", rec.string(), "-o", (work_dir() / "demo.mp4").string()}));
    EXPECT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("recorded 3 steps into " + rec.string()), std::string::npos) << r.err;
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

}  // namespace

TEST(CliRecord, RecordThenReplayIsExact) {
  const fs::path& rec = demo_record();
  const nlohmann::json j = index_of(rec);
  EXPECT_EQ(j["producer"]["name"], "vidax");
  EXPECT_EQ(j["model"], "wan2.1-tiny-demo");
  EXPECT_EQ(j["precision"], "fp32");
  EXPECT_EQ(j["request"]["prompt"], "a red panda");
  EXPECT_EQ(j["steps"].size(), 3u);
  EXPECT_TRUE(fs::is_regular_file(work_dir() / "demo.mp4"));  // the run's own output is written as usual
  // The replay takes the prompt and the settings from the record; it writes nothing without -o.
  CmdResult r = run({"generate", "--weights", demo_weights(), "--replay", rec.string()}, with_stdout());
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("step 1/3 t=999 max_abs=0 mean_abs=0 rel_l2=0 OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 3/3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("final max_abs=0 mean_abs=0 rel_l2=0 OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("PASS replay: 3/3 steps within rel_l2 <= 1e-05"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("the seed's own CPU draw matches it bit for bit"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(work_dir() / "wan2.1-tiny-demo-seed42.mp4"));
}

TEST(CliRecord, ReplayJsonHasThePerStepErrors) {
  CmdResult r = run({"generate", "--weights", demo_weights(), "--replay", demo_record().string(), "--json"},
                    with_stdout());
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = nlohmann::json::parse(r.out);
  const nlohmann::json& rep = j.at("replay");
  EXPECT_EQ(rep["ok"], true);
  EXPECT_EQ(rep["tolerance"], 1e-5);
  EXPECT_EQ(rep["noise_matches_seed"], true);
  ASSERT_EQ(rep["steps"].size(), 3u);
  for (const auto& s : rep["steps"]) {
    EXPECT_EQ(s["max_abs"], 0.0);
    EXPECT_EQ(s["mean_abs"], 0.0);
  }
  EXPECT_EQ(j["record"], demo_record().string());
  EXPECT_EQ(j["prompt"], "a red panda");
}

TEST(CliRecord, PerturbedStepStopsTheReplayThere) {
  const fs::path d = copy_of(demo_record(), "perturbed");
  {  // step 2's latent: one element moved by 0.01
    const std::string f = (d / "step_0002.safetensors").string();
    vidax::io::Checkpoint c = vidax::io::Checkpoint::open(f);
    vidax::Tensor t = c.get("latent").clone();
    t.data<float>()[5] += 0.01f;
    vidax::io::save_safetensors(f, {{"latent", t}});
  }
  CmdResult r = run({"generate", "--weights", demo_weights(), "--replay", d.string()}, with_stdout());
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("replay diverged at step 2/3"), std::string::npos) << r.err;
  EXPECT_NE(r.out.find("step 1/3 t=999 max_abs=0 mean_abs=0 rel_l2=0 OK"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("step 2/3"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("max_abs=0.01"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("step 3/3"), std::string::npos) << r.out;  // stopped there
  EXPECT_NE(r.out.find("FAIL replay: 1/3 steps"), std::string::npos) << r.out;
  // --json says where.
  CmdResult rj = run({"generate", "--weights", demo_weights(), "--replay", d.string(), "--json"}, with_stdout());
  EXPECT_EQ(rj.code, 1);
  const nlohmann::json j = nlohmann::json::parse(rj.out);
  EXPECT_EQ(j["replay"]["diverged_at"], 2);
  EXPECT_EQ(j["replay"]["ok"], false);
  EXPECT_EQ(j["replay"]["steps"].size(), 2u);
  // A bound above the perturbation (--replay-tolerance) passes it.
  CmdResult loose =
      run({"generate", "--weights", demo_weights(), "--replay", d.string(), "--replay-tolerance", "0.1"}, with_stdout());
  EXPECT_EQ(loose.code, 0) << loose.err;
}

// The official WanT2V.generate on the tiny golden weights, recorded by tools/golden/record_reference.py
// (CPU, fp32, CFG 5, default negative prompt): 3 UniPC steps (seed 42), and 4 DPM++ steps (seed 7,
// another prompt). Each step within the fp32 bound, the noise bit-identical to the seed's.
TEST(CliRecord, ReferenceRecordReplaysWithinTheBound) {
  for (const auto& [name, steps] : std::vector<std::pair<std::string, size_t>>{{"wan_record_tiny", 3},
                                                                               {"wan_record_tiny_dpmpp", 4}}) {
    const std::string rec = kData + "/golden/pipeline/" + name;
    CmdResult r = run({"generate", "--weights", kData + "/golden/pipeline/wan_pipeline_tiny", "--replay", rec,
                       "--json"},
                      with_stdout());
    ASSERT_EQ(r.code, 0) << r.err << r.out;
    const nlohmann::json j = nlohmann::json::parse(r.out);
    const nlohmann::json& rep = j.at("replay");
    EXPECT_EQ(rep["noise_matches_seed"], true);
    ASSERT_EQ(rep["steps"].size(), steps);
    for (const auto& s : rep["steps"]) {
      std::printf("%s step %d: max_abs %.3g mean_abs %.3g rel_l2 %.3g\n", name.c_str(), s["step"].get<int>(),
                  s["max_abs"].get<double>(), s["mean_abs"].get<double>(), s["rel_l2"].get<double>());
      EXPECT_LE(s["rel_l2"].get<double>(), 1e-5);
      EXPECT_GT(s["max_abs"].get<double>(), 0.0);  // two implementations: not bit-identical, so compared
    }
    EXPECT_EQ(rep["ok"], true);
  }
  const std::string rec = kData + "/golden/pipeline/wan_record_tiny";
  // Control: the same record against the demo's weights (same variant, other values) diverges at step 1.
  CmdResult bad = run({"generate", "--weights", demo_weights(), "--replay", rec}, with_stdout());
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("replay diverged at step 1/3"), std::string::npos) << bad.err;
}

// lightx2v re-noises with fresh noise after every step but the last: those draws are recorded
// (steps 1..3 of 4) and injected again.
TEST(CliRecord, ReNoisingSamplerDrawsRoundTrip) {
  const fs::path rec = work_dir() / "lightx2v-record";
  fs::remove_all(rec);
  CmdResult r = run({"generate", "--weights", demo_weights(), "--prompt", "a red panda", "--frames", "5", "--height",
                     "32", "--width", "48", "--seed", "3", "--preset", "lightx2v-4step", "--record", rec.string(),
                     "-o", (work_dir() / "l.safetensors").string()});
  ASSERT_EQ(r.code, 0) << r.err;
  const nlohmann::json j = index_of(rec);
  EXPECT_EQ(j["request"]["sampler"], "lightx2v");
  ASSERT_EQ(j["steps"].size(), 4u);
  for (int i = 0; i < 3; ++i) EXPECT_EQ(j["steps"][i]["noise"]["tensor"], "noise") << i;
  EXPECT_TRUE(j["steps"][3]["noise"].is_null());
  CmdResult p = run({"generate", "--weights", demo_weights(), "--replay", rec.string()}, with_stdout());
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("PASS replay: 4/4"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("step 4/4"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("step 4/4 t=625 max_abs=0 mean_abs=0 rel_l2=0 OK"), std::string::npos) << p.out;
  // Control: step 2's recorded draw replaced by other noise: step 2's latent no longer matches.
  const fs::path bad = copy_of(rec, "lightx2v-other-noise");
  {
    const std::string f = (bad / "step_0002.safetensors").string();
    vidax::io::Checkpoint c = vidax::io::Checkpoint::open(f);
    vidax::Tensor n = c.get("noise").clone();
    n.data<float>()[0] += 1.0f;
    vidax::io::save_safetensors(f, {{"latent", c.get("latent").clone()}, {"noise", n}});
  }
  CmdResult q = run({"generate", "--weights", demo_weights(), "--replay", bad.string()}, with_stdout());
  EXPECT_EQ(q.code, 1);
  EXPECT_NE(q.err.find("replay diverged at step 2/4"), std::string::npos) << q.err;
}

// A run on a --noise file is recorded as such (noise_from "file"); its replay injects that noise
// (the seed's own draw differs) and, with -o, writes the video with the replay in the sidecar.
TEST(CliRecord, NoiseFileRunReplaysAndMayWriteItsVideo) {
  const fs::path noise = work_dir() / "noise.safetensors";
  vidax::TorchGenerator g(999);
  vidax::io::save_safetensors(noise.string(), {{"noise", g.randn({16, 2, 4, 6})}});
  const fs::path rec = work_dir() / "noise-record";
  fs::remove_all(rec);
  CmdResult r = run(small({"--noise", noise.string(), "--record", rec.string(), "-o",
                           (work_dir() / "n.safetensors").string()}));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_EQ(index_of(rec)["noise_from"], "file");
  const fs::path out = work_dir() / "replayed.mp4";
  fs::remove(out);
  CmdResult p = run({"generate", "--weights", demo_weights(), "--replay", rec.string(), "-o", out.string()},
                    with_stdout());
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.err.find("the seed's own CPU draw differs from it"), std::string::npos) << p.err;
  EXPECT_NE(p.out.find("PASS replay: 3/3"), std::string::npos) << p.out;
  ASSERT_TRUE(fs::is_regular_file(out));
  std::ifstream js(out.string() + ".json");
  const auto j = nlohmann::json::parse(js);
  EXPECT_EQ(j["replay"]["ok"], true);
  EXPECT_EQ(j["record"], rec.string());
}

TEST(CliRecord, BadRecordsAndOptionsFailBeforeLoading) {
  struct Case {
    std::vector<std::string> args;
    std::string message;
  };
  const fs::path busy = work_dir() / "busy";
  fs::create_directories(busy);
  std::ofstream(busy / "x") << "x";
  const fs::path other_model = copy_of(demo_record(), "other-model");
  {
    nlohmann::json j = index_of(other_model);
    j["model"] = "wan2.1-t2v-1.3b";
    std::ofstream(other_model / "record.json") << j.dump(1);
  }
  const fs::path corrupt = copy_of(demo_record(), "corrupt");
  std::ofstream(corrupt / "record.json") << "{ not json";
  const fs::path shape = copy_of(demo_record(), "shape");
  vidax::io::save_safetensors((shape / "step_0003.safetensors").string(),
                              {{"latent", vidax::Tensor::zeros({16, 2, 4, 7}, vidax::DType::F32)}});
  const std::string rec = demo_record().string(), w = demo_weights();
  const std::vector<Case> cases = {
      {{"generate", "--weights", w, "--replay", (work_dir() / "none").string()}, "no such folder"},
      {{"generate", "--weights", w, "--replay", corrupt.string()}, "record.json is not valid JSON"},
      {{"generate", "--weights", w, "--replay", shape.string()},
       "step 3's latent (step_0003.safetensors:latent) is [16, 2, 4, 7], the record's latent_shape is [16, 2, 4, 6]"},
      {{"generate", "--weights", w, "--replay", other_model.string()},
       "recorded with model wan2.1-t2v-1.3b but the weights are wan2.1-tiny-demo"},
      {{"generate", "--weights", w, "--replay", rec, "--steps", "4"}, "--steps 4 differs from the record's 3"},
      {{"generate", "--weights", w, "--replay", rec, "--prompt", "a cat"},
       "--prompt a cat differs from the record's a red panda"},
      {{"generate", "--weights", w, "--replay", rec, "--noise", "n.safetensors"}, "--noise with --replay"},
      {{"generate", "--weights", w, "--replay", rec, "--record", (work_dir() / "r2").string()},
       "--record and --replay together"},
      {{"generate", "--weights", w, "--prompt", "x", "--replay-tolerance", "1"}, "--replay-tolerance needs --replay"},
      {{"generate", "--weights", w, "--replay", rec, "--replay-tolerance", "-1"}, "--replay-tolerance -1"},
      {small({"--record", busy.string(), "-o", (work_dir() / "b.mp4").string()}),
       "the folder exists and is not empty; a record is never overwritten"},
      {{"generate", "--weights", w}, "--prompt is required (or --replay DIR"},
  };
  for (const auto& c : cases) {
    CmdResult r = run(c.args);
    EXPECT_EQ(r.code, 1) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("denoising 1/"), std::string::npos) << c.message << ": ran before failing";
  }
  EXPECT_TRUE(fs::exists(busy / "x"));
  EXPECT_FALSE(fs::exists(work_dir() / "b.mp4"));
}
