// Faults around a run of `vidax generate` (issue 16): signals mid-run (exit
// 128+N, nothing left), a closed log pipe, a file-size limit hit while the
// sidecar is written (the pair appears together or not at all), stale
// temporaries of killed runs, two runs onto one output, and the outcomes that
// used to be silent (--noise with --seed, seeds past 2^63, decode progress).
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "cli_child.h"
#include "io/checkpoint.h"
#include "pipeline/scratch.h"

namespace fs = std::filesystem;
using namespace vidax;
using namespace vidax::test::cli;

namespace {

const fs::path& work_dir() {
  static fs::path d = vidax::test::scratch_dir("cli_faults");
  return d;
}

std::string demo_weights() {
  static std::string dir = [] {
    const std::string d = (work_dir() / "demo").string();
    const CmdResult r = run({"make-demo", d, "--tokenizer", tiny_spiece()});
    EXPECT_EQ(r.code, 0) << r.err;
    return d;
  }();
  return dir;
}

std::vector<std::string> small(const std::string& out, const std::string& steps = "1") {
  return {"generate", "--weights", demo_weights(), "--prompt", "a red panda", "--frames", "5", "--height", "32",
          "--width", "48", "--steps", steps, "--seed", "42", "-o", out};
}

std::vector<std::string> entries(const fs::path& dir) {
  std::vector<std::string> v;
  for (auto& e : fs::directory_iterator(dir)) v.push_back(e.path().filename().string());
  return v;
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// Sends `sig` once the run is denoising, then expects 128+sig and an empty folder.
void expect_signal_stops_cleanly(int sig, const std::string& name) {
  const fs::path dir = work_dir() / ("signal-" + std::to_string(sig));
  fs::create_directories(dir);
  Child c = spawn(small((dir / "out.mp4").string(), "400"));
  std::string err = read_err(c.err_fd, "denoising 1/400");
  ASSERT_NE(err.find("denoising 1/400"), std::string::npos) << err;
  ::kill(c.pid, sig);
  err += read_err(c.err_fd);
  ::close(c.err_fd);
  EXPECT_EQ(wait_exit(c.pid), 128 + sig) << err;
  EXPECT_NE(err.find("stopped by " + name), std::string::npos) << err;
  EXPECT_NE(err.find("no output was written"), std::string::npos) << err;
  EXPECT_EQ(err.find(" done in "), std::string::npos) << "a stopped run reported done:\n" << err;
  EXPECT_TRUE(entries(dir).empty()) << ::testing::PrintToString(entries(dir));
}

}  // namespace

TEST(CliFaults, SigtermExits143) { expect_signal_stops_cleanly(SIGTERM, "SIGTERM"); }
TEST(CliFaults, SighupIsHandledAsSigtermAndExits129) { expect_signal_stops_cleanly(SIGHUP, "SIGHUP"); }
TEST(CliFaults, SigintExits130) { expect_signal_stops_cleanly(SIGINT, "SIGINT"); }

TEST(CliFaults, AClosedLogPipeDoesNotKillTheRun) {
  // `vidax generate ... 2>&1 | head -1`: the reader goes away after the first line.
  const fs::path dir = work_dir() / "sigpipe";
  fs::create_directories(dir);
  Child c = spawn(small((dir / "out.mp4").string(), "3"));
  (void)read_err(c.err_fd, "\n");
  ::close(c.err_fd);  // every later write to stderr gets EPIPE (SIGPIPE, were it not ignored)
  EXPECT_EQ(wait_exit(c.pid), 0) << "killed by SIGPIPE is exit 141";
  EXPECT_TRUE(fs::exists(dir / "out.mp4"));
  EXPECT_TRUE(fs::exists(dir / "out.mp4.json"));
}

TEST(CliFaults, AFullDiskWhileTheSidecarIsWrittenLeavesNoVideo) {
  // RLIMIT_FSIZE fails a write past the limit (EFBIG), as a full disk fails it: the
  // y4m video (5 frames of 48x32, 11.6 kB) fits, the sidecar holding the 40 kB prompt
  // does not. The video used to stay behind without its sidecar.
  const fs::path dir = work_dir() / "full-disk";
  fs::create_directories(dir);
  std::vector<std::string> args = small((dir / "out.y4m").string());
  args[4] = std::string(40000, 'a');
  ChildOptions opt;
  opt.file_size_limit = 20000;
  const CmdResult r = run(args, opt);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("cannot write"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("out.y4m.json"), std::string::npos) << r.err;
  EXPECT_TRUE(entries(dir).empty()) << ::testing::PrintToString(entries(dir));
  // The same run without the limit writes both.
  EXPECT_EQ(run(args).code, 0);
  EXPECT_TRUE(fs::exists(dir / "out.y4m"));
  EXPECT_TRUE(fs::exists(dir / "out.y4m.json"));
}

TEST(CliFaults, AMemoryCapEndsTheRunWithAClearErrorAndNoOutput) {
  // `ulimit -v 700000`: the binary and the tiny model fit (about 250 MB of address
  // space here), a 512x512x41 video's VAE decode does not (it needs more than 800 MB).
  // The run used to hang at exit in OpenBLAS's thread pool (docs/bugs.md row 90), and
  // the engine's allocator said only "out of host memory allocating N bytes".
  const fs::path dir = work_dir() / "memory-cap";
  fs::create_directories(dir);
  const std::vector<std::string> args = {"generate", "--weights", demo_weights(), "--prompt", "a red panda",
                                         "--frames", "41", "--height", "512", "--width", "512", "--steps", "1",
                                         "--seed", "42", "--threads", "2", "-o", (dir / "out.mp4").string()};
  ChildOptions opt;
  opt.address_space_limit = 700L << 20;
  opt.timeout_s = 240;  // a hang ends as exit 142 and fails below
  const CmdResult r = run(args, opt);
  EXPECT_EQ(r.code, 1) << r.err;
  EXPECT_NE(r.err.find("vidax: error: out of memory while decoding the video"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--max-memory"), std::string::npos) << "the message says what to change:\n" << r.err;
  EXPECT_TRUE(entries(dir).empty()) << ::testing::PrintToString(entries(dir));
}

TEST(CliFaults, StaleTemporariesOfDeadProcessesAreRemovedOnTheNextWrite) {
  const fs::path dir = work_dir() / "stale";
  fs::create_directories(dir);
  const pid_t dead = ::fork();  // a pid that is surely gone: a child that exited and was reaped
  if (dead == 0) ::_exit(0);
  ::waitpid(dead, nullptr, 0);
  const fs::path stale_file = dir / (".old.mp4.partial-" + std::to_string(dead));
  const fs::path stale_dir = dir / (".frames.partial-" + std::to_string(dead));
  const fs::path live = dir / (".other.mp4.partial-" + std::to_string(::getpid()));  // this test: alive
  std::ofstream(stale_file) << "half a video";
  fs::create_directories(stale_dir);
  std::ofstream(stale_dir / "frame_0001.png") << "x";
  std::ofstream(live) << "a concurrent run";
  const CmdResult r = run(small((dir / "out.mp4").string()));
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_FALSE(fs::exists(stale_file));
  EXPECT_FALSE(fs::exists(stale_dir));
  EXPECT_TRUE(fs::exists(live)) << "a live process's temporary was removed";
}

TEST(CliFaults, TwoRunsOntoOneOutputLeaveOneWholePair) {
  const fs::path dir = work_dir() / "concurrent";
  fs::create_directories(dir);
  const std::string out = (dir / "out.y4m").string();
  Child a = spawn(small(out, "2"));
  Child b = spawn(small(out, "2"));
  const std::string ea = read_err(a.err_fd), eb = read_err(b.err_fd);
  ::close(a.err_fd);
  ::close(b.err_fd);
  EXPECT_EQ(wait_exit(a.pid), 0) << ea;
  EXPECT_EQ(wait_exit(b.pid), 0) << eb;
  EXPECT_EQ(entries(dir).size(), 2u) << ::testing::PrintToString(entries(dir));  // out.y4m + out.y4m.json
  EXPECT_EQ(slurp(out).substr(0, 9), "YUV4MPEG2");
  EXPECT_NO_THROW((void)nlohmann::json::parse(slurp(out + ".json")));
}

TEST(CliFaults, NoiseFileMakesTheSeedUnusedAndSaysSo) {
  const fs::path dir = work_dir() / "noise";
  fs::create_directories(dir);
  io::save_safetensors((dir / "n.safetensors").string(),
                       {{"noise", Tensor::from_f32(std::vector<float>(16 * 2 * 4 * 6, 0.25f), {16, 2, 4, 6})}}, {});
  std::vector<std::string> args = small((dir / "out.mp4").string());
  args.push_back("--noise");
  args.push_back((dir / "n.safetensors").string());
  const CmdResult r = run(args);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.err.find("warning: --seed 42 is unused: the noise comes from"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("noise from " + (dir / "n.safetensors").string()), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find(", seed 42"), std::string::npos) << "the unused seed is reported as used:\n" << r.err;
  const auto j = nlohmann::json::parse(slurp(dir / "out.mp4.json"));
  EXPECT_TRUE(j["seed"].is_null()) << j.dump();
  EXPECT_EQ(j["noise_file"], (dir / "n.safetensors").string());
}

TEST(CliFaults, SeedsPast2To63AreDistinctNotClamped) {
  // CLI11 parsed into int64 and clamped every seed >= 2^63 to 2^63-1: one video for many seeds.
  const fs::path dir = work_dir() / "seeds";
  fs::create_directories(dir);
  std::vector<std::string> videos;
  for (const std::string seed : {"9223372036854775807", "9223372036854775808", "18446744073709551615"}) {
    std::vector<std::string> args = small((dir / (seed + ".y4m")).string());
    args[args.size() - 3] = seed;
    const CmdResult r = run(args);
    ASSERT_EQ(r.code, 0) << r.err;
    const auto j = nlohmann::json::parse(slurp(dir / (seed + ".y4m.json")));
    EXPECT_EQ(j["seed"].get<uint64_t>(), std::stoull(seed)) << j.dump();
    videos.push_back(slurp(dir / (seed + ".y4m")));
  }
  EXPECT_NE(videos[0], videos[1]);
  EXPECT_NE(videos[1], videos[2]);
}

TEST(CliFaults, TheDecodeReportsProgressPerLatentFrame) {
  const fs::path dir = work_dir() / "progress";
  fs::create_directories(dir);
  const CmdResult r = run(small((dir / "out.mp4").string()));
  ASSERT_EQ(r.code, 0) << r.err;
  // 5 frames = 2 latent frames = 2 VAE chunks.
  EXPECT_NE(r.err.find("decoding 1/2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("decoding 2/2"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("decoding: 2/2 done in"), std::string::npos) << r.err;
}

TEST(CliFaults, MakeDemoForceWritesIntoAnExistingFolder) {
  const fs::path d = work_dir() / "demo-again";
  ASSERT_EQ(run({"make-demo", d.string(), "--tokenizer", tiny_spiece()}).code, 0);
  const std::string before = slurp(d / "vidax_model.json");
  const CmdResult refused = run({"make-demo", d.string(), "--tokenizer", tiny_spiece(), "--seed", "7"});
  EXPECT_EQ(refused.code, 1) << refused.err;
  EXPECT_EQ(slurp(d / "vidax_model.json"), before) << "refused, yet written";
  const CmdResult forced = run({"make-demo", d.string(), "--tokenizer", tiny_spiece(), "--seed", "7", "--force"});
  EXPECT_EQ(forced.code, 0) << forced.err;
  EXPECT_NE(slurp(d / "vidax_model.json"), before);
}
