// `vidax make-demo` + `vidax generate` as a user runs them: the built binary,
// its exit codes and messages, the files it leaves, and Ctrl-C mid-run.
#include <fcntl.h>
#include <gtest/gtest.h>

#include "cli_child.h"
#include "scratch.h"
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "io/video.h"

namespace fs = std::filesystem;

namespace {

using namespace vidax::test::cli;
const std::string kSpiece = tiny_spiece();

const fs::path& work_dir() {
  static fs::path d = vidax::test::scratch_dir("cli");
  return d;
}

// The demo checkpoint, made once by the CLI itself.
std::string demo_weights() {
  static std::string dir = [] {
    const std::string d = (work_dir() / "demo-weights").string();
    CmdResult r = run({"make-demo", d, "--tokenizer", kSpiece});
    EXPECT_EQ(r.code, 0) << r.err;
    return d;
  }();
  return dir;
}

std::vector<std::string> small(const std::string& out) {
  return {"generate", "--weights", demo_weights(), "--prompt", "a red panda", "--frames", "5", "--height", "32",
          "--width", "48", "--steps", "3", "--seed", "42", "-o", out};
}

}  // namespace

TEST(CliGenerate, DemoToMp4WithSidecar) {
  const fs::path out = work_dir() / "demo.mp4";
  CmdResult r = run(small(out.string()));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("denoising 3/3"), std::string::npos) << r.err;
  vidax::io::VideoFileInfo info = vidax::io::read_video(out.string());
  EXPECT_EQ(info.frames, 5);
  EXPECT_EQ(info.width, 48);
  EXPECT_EQ(info.height, 32);
  EXPECT_NEAR(info.fps, 16.0, 1e-9);
  std::ifstream js(out.string() + ".json");
  const auto j = nlohmann::json::parse(js);
  EXPECT_EQ(j["model"], "wan2.1-tiny-demo");
  EXPECT_EQ(j["seed"], 42);
  EXPECT_EQ(j["steps"], 3);
  EXPECT_EQ(j["sampler"], "unipc");
  EXPECT_EQ(j["shift"], 5.0);
  EXPECT_EQ(j["guidance"], 5.0);
  EXPECT_EQ(nlohmann::json::parse(info.metadata["comment"]), j);
  EXPECT_FALSE(has_partial(work_dir()));
}

TEST(CliGenerate, BadInputsFailFastWithTheirMessage) {
  struct Case {
    std::vector<std::string> edit;  // option, value
    std::string message;
  };
  const std::vector<Case> cases = {
      {{"--frames", "80"}, "--frames 80: the Wan VAE needs 4k+1 frames (e.g. 77 or 81)"},
      {{"--height", "100"}, "--height 100: must be a positive multiple of 16"},
      {{"--width", "50"}, "--width 50: must be a positive multiple of 16"},
      {{"--steps", "0"}, "--steps 0: must be 1..1000"},
      {{"--sampler", "ddim"}, "--sampler ddim: unknown; choose one of unipc, dpm++, euler"},
      {{"--output-format", "gif"}, "--output-format gif: unknown"},
      {{"--model", "wan2.1-t2v-14b"}, "--model wan2.1-t2v-14b but"},
      {{"--weights", "/nonexistent/vidax"}, "weights directory /nonexistent/vidax does not exist"},
      {{"-o", "/nonexistent/vidax/out.mp4"}, "output directory /nonexistent/vidax does not exist"},
      {{"--noise", "/nonexistent/noise.safetensors"}, "/nonexistent/noise.safetensors"},
  };
  for (const auto& c : cases) {
    std::vector<std::string> args = small((work_dir() / "bad.mp4").string());
    bool replaced = false;
    for (size_t i = 0; i + 1 < args.size(); ++i)
      if (args[i] == c.edit[0]) {
        args[i + 1] = c.edit[1];
        replaced = true;
      }
    if (!replaced) args.insert(args.end(), c.edit.begin(), c.edit.end());
    CmdResult r = run(args);
    EXPECT_EQ(r.code, 1) << c.message << "\n" << r.err;
    EXPECT_NE(r.err.find(c.message), std::string::npos) << "expected: " << c.message << "\ngot: " << r.err;
    EXPECT_EQ(r.err.find("denoising"), std::string::npos) << "ran before failing: " << r.err;
  }
  EXPECT_FALSE(fs::exists(work_dir() / "bad.mp4"));
}

TEST(CliGenerate, CtrlCStopsCleanly) {
  const fs::path out = work_dir() / "interrupted.mp4";
  std::vector<std::string> args = small(out.string());
  args[args.size() - 5] = "400";  // --steps: long enough to interrupt
  Child c = spawn(args);
  std::string err = read_err(c.err_fd, "denoising 1/400");
  ASSERT_NE(err.find("denoising 1/400"), std::string::npos) << err;
  kill(c.pid, SIGINT);
  err += read_err(c.err_fd);
  close(c.err_fd);
  EXPECT_EQ(wait_exit(c.pid), 130) << err;
  EXPECT_NE(err.find("stopped by SIGINT (Ctrl-C) during denoising step"), std::string::npos) << err;
  EXPECT_NE(err.find("no output was written"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(out.string() + ".json"));
  EXPECT_FALSE(has_partial(work_dir()));
}
