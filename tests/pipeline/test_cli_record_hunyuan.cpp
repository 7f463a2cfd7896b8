// `vidax generate --record DIR` / `--replay DIR` on the HunyuanVideo 1.0 and 1.5 tiny demos (the built
// binary): both run through the generic loop, so they record in format version 1 (one latent) and a
// record replays with max-abs 0 on every step; one element of step 2 moved stops the replay at step 2.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "cli_child.h"
#include "io/checkpoint.h"
#include "scratch.h"

namespace fs = std::filesystem;
using namespace vidax::test::cli;

namespace {

void round_trip(const std::string& model) {
  const fs::path root = vidax::test::scratch_dir("cli_record_" + model);
  const std::string weights = (root / "demo").string();
  ChildOptions slow;
  slow.timeout_s = 300;
  CmdResult m = run({"make-demo", weights, "--model", model}, slow);
  ASSERT_EQ(m.code, 0) << m.err;
  const fs::path rec = root / "rec";
  fs::remove_all(rec);
  CmdResult r = run({"generate", "--weights", weights, "--prompt", "a red panda", "--seed", "42", "--threads", "2",
                     "--record", rec.string(), "-o", (root / "out.mp4").string()},
                    slow);
  ASSERT_EQ(r.code, 0) << r.err;
  std::ifstream f(rec / "record.json");
  const nlohmann::json j = nlohmann::json::parse(f);
  EXPECT_EQ(j["format_version"], 1);
  EXPECT_EQ(j["model"], model);
  const size_t steps = j["steps"].size();
  ASSERT_GE(steps, 2u);
  const std::string total = "/" + std::to_string(steps);
  ChildOptions out = slow;
  out.capture_stdout = true;
  CmdResult p = run({"generate", "--weights", weights, "--replay", rec.string(), "--threads", "2"}, out);
  ASSERT_EQ(p.code, 0) << p.err;
  EXPECT_NE(p.out.find("step 1" + total), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("final max_abs=0 mean_abs=0 rel_l2=0 OK"), std::string::npos) << p.out;
  EXPECT_NE(p.out.find("PASS replay: " + std::to_string(steps) + total + " steps within rel_l2 <= 1e-05"),
            std::string::npos)
      << p.out;
  size_t lines = 0;
  for (size_t at = p.out.find("max_abs=0 mean_abs=0 rel_l2=0 OK"); at != std::string::npos;
       at = p.out.find("max_abs=0 mean_abs=0 rel_l2=0 OK", at + 1))
    ++lines;
  EXPECT_EQ(lines, steps + 1) << p.out;  // every step and the final: exactly 0
  EXPECT_NE(p.err.find("the seed's own CPU draw matches it bit for bit"), std::string::npos) << p.err;
  {  // the negative control: step 2's latent moved by 0.01 in one element
    const std::string file = (rec / "step_0002.safetensors").string();
    vidax::io::Checkpoint c = vidax::io::Checkpoint::open(file);
    vidax::Tensor t = c.get("latent").clone();
    t.data<float>()[3] += 0.01f;
    vidax::io::save_safetensors(file, {{"latent", t}});
  }
  CmdResult bad = run({"generate", "--weights", weights, "--replay", rec.string(), "--threads", "2"}, out);
  EXPECT_EQ(bad.code, 1) << bad.err;
  EXPECT_NE(bad.err.find("replay diverged at step 2" + total), std::string::npos) << bad.err;
}

}  // namespace

TEST(CliRecordHunyuan, HunyuanVideoDemoRoundTripsExactly) { round_trip("hunyuanvideo-t2v-tiny-demo"); }

TEST(CliRecordHunyuan, HunyuanVideo15DemoRoundTripsExactly) { round_trip("hunyuanvideo1.5-t2v-tiny-demo"); }
