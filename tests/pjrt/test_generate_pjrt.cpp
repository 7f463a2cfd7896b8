// `vidax generate --device pjrt` end to end on the tiny demo, as a user runs it (the built binary,
// its own process): the DiT's steps through the CPU plugin, compiled once (no recompilation
// across steps and CFG branches), the video and the latents against the CPU backend's run within
// the stated bounds (docs/pjrt.md), and a second run that loads the program from the compile cache.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backend/pjrt/plugin.h"
#include "cli_child.h"
#include "io/checkpoint.h"

namespace fs = std::filesystem;
using namespace vidax;
using namespace vidax::test::cli;

namespace {

// The bounds the PJRT run is held to against the CPU backend (docs/pjrt.md, "generate"): the
// latents after 3 UniPC steps at fp32 (the plugin's fp32 dots at HIGHEST, another summation
// order), and the 8-bit samples of the .y4m frames decoded from them on the CPU.
constexpr double kLatentRelL2 = 1e-5;
constexpr int kFrameMaxLevels = 1;

struct Scratch {
  fs::path dir;
  Scratch() {
    dir = fs::temp_directory_path() / ("vidax_test_generate_pjrt_" + std::to_string(::getpid()));
    fs::remove_all(dir);
    fs::create_directories(dir);
  }
  ~Scratch() {
    std::error_code ec;
    fs::remove_all(dir, ec);
  }
};

const fs::path& scratch() {
  static Scratch s;
  return s.dir;
}

std::string demo() {
  static const std::string d = [] {
    const std::string w = (scratch() / "demo").string();
    const CmdResult r = run({"make-demo", w, "--tokenizer", tiny_spiece()});
    EXPECT_EQ(r.code, 0) << r.err;
    return w;
  }();
  return d;
}

CmdResult generate(const std::string& out, const std::vector<std::string>& extra, const std::string& cache) {
  std::vector<std::string> args{"generate", "--weights", demo(), "--prompt", "a red panda", "--frames", "5",
                                "--height", "32", "--width", "48", "--steps", "3", "--seed", "42", "-o", out};
  args.insert(args.end(), extra.begin(), extra.end());
  ChildOptions o;
  o.env = {"VIDAX_PJRT_CACHE=" + cache};  // replaces this process's (tests/pjrt/cache_env.cpp): never ~/.cache
  o.timeout_s = 600;
  return run(args, o);
}

nlohmann::json sidecar(const std::string& out) {
  std::ifstream f(out + ".json");
  return nlohmann::json::parse(f);
}

std::vector<double> latents(const std::string& path) {
  return io::Checkpoint::open(path).get("latents").to_f64_vector();
}

double rel_l2(const std::vector<double>& a, const std::vector<double>& b) {
  double num = 0, den = 0;
  for (size_t i = 0; i < a.size(); ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
  return std::sqrt(num / (den > 0 ? den : 1));
}

// The bytes of a file (a .y4m: its header, then per frame "FRAME\n" and the 8-bit Y, U, V planes).
std::string bytes_of(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

// The largest difference between two .y4m files of the same layout, in 8-bit sample levels.
int max_levels(const std::string& a, const std::string& b) {
  int m = 0;
  for (size_t i = 0; i < a.size(); ++i)
    m = std::max(m, std::abs(int(static_cast<uint8_t>(a[i])) - int(static_cast<uint8_t>(b[i]))));
  return m;
}

#define REQUIRE_PLUGIN()                                                                                  \
  do {                                                                                                    \
    if (!::vidax::pjrt::available()) GTEST_SKIP() << "built without PJRT (VIDAX_PJRT off): no plugin to run"; \
    if (!fs::exists(VIDAX_PJRT_TEST_PLUGIN))                                                              \
      GTEST_SKIP() << VIDAX_PJRT_TEST_PLUGIN << " missing: run scripts/fetch-pjrt-plugin.sh";              \
  } while (0)

}  // namespace

TEST(PjrtGenerate, TheDemoMatchesTheCpuRunAndASecondRunHitsTheCompileCache) {
  REQUIRE_PLUGIN();
  const std::string cache = (scratch() / "cache").string();
  const std::vector<std::string> pjrt{"--device", "pjrt", "--pjrt-plugin", VIDAX_PJRT_TEST_PLUGIN};
  const std::string cpu_y4m = (scratch() / "cpu.y4m").string(), cpu_lat = (scratch() / "cpu.safetensors").string();
  const std::string pj_y4m = (scratch() / "pjrt.y4m").string(), pj_lat = (scratch() / "pjrt.safetensors").string();
  // The CPU backend: the reference of this test.
  for (const auto& out : {cpu_y4m, cpu_lat}) {
    const CmdResult r = generate(out, {"--precision", "fp32"}, cache);
    ASSERT_EQ(r.code, 0) << r.err;
  }
  // First PJRT run: one compile for the step (both CFG branches, all 3 steps), nothing from the cache.
  {
    const CmdResult r = generate(pj_y4m, {"--precision", "fp32", pjrt[0], pjrt[1], pjrt[2], pjrt[3]}, cache);
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("DiT steps on PJRT: plugin " + std::string(VIDAX_PJRT_TEST_PLUGIN)), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("the text encoder, the DiT's text conditioning and the VAE run on the CPU backend"),
              std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("was compiled again"), std::string::npos) << r.err;  // no recompilation warning
    EXPECT_NE(r.err.find("1 program(s) compiled, 0 loaded from the compile cache"), std::string::npos) << r.err;
    const nlohmann::json d = sidecar(pj_y4m)["device"];
    EXPECT_EQ(d["device"], "pjrt") << d.dump();
    EXPECT_EQ(d["platform"], "cpu");
    EXPECT_EQ(d["compiles"], 1) << d.dump();
    EXPECT_EQ(d["cache_hits"], 0) << d.dump();
    EXPECT_EQ(d["recompilations"], 0) << d.dump();
    EXPECT_EQ(d["runs"], 6) << d.dump();  // 3 steps x (cond, uncond)
    EXPECT_EQ(d["compile_cache"], cache);
    EXPECT_EQ(sidecar(cpu_y4m)["device"]["device"], "cpu");
  }
  // Second PJRT run, a new process: the program comes from the compile cache on disk.
  {
    const CmdResult r = generate(pj_lat, {"--precision", "fp32", pjrt[0], pjrt[1], pjrt[2], pjrt[3]}, cache);
    ASSERT_EQ(r.code, 0) << r.err;
    const nlohmann::json d = sidecar(pj_lat)["device"];
    EXPECT_EQ(d["compiles"], 0) << d.dump();
    EXPECT_EQ(d["cache_hits"], 1) << d.dump();
    EXPECT_EQ(d["recompilations"], 0) << d.dump();
    EXPECT_NE(r.err.find("0 program(s) compiled, 1 loaded from the compile cache"), std::string::npos) << r.err;
  }
  // The latents and the video against the CPU run, within the bounds; a perturbed copy fails them.
  const std::vector<double> a = latents(pj_lat), b = latents(cpu_lat);
  ASSERT_EQ(a.size(), b.size());
  const double e = rel_l2(a, b);
  std::printf("latents rel_l2 PJRT vs CPU: %.3g (bound %.0e)\n", e, kLatentRelL2);
  EXPECT_LE(e, kLatentRelL2);
  std::vector<double> perturbed = a;
  perturbed[perturbed.size() / 2] += 1e-2;
  EXPECT_GT(rel_l2(perturbed, b), kLatentRelL2) << "the control must fail the bound";
  const std::string va = bytes_of(pj_y4m), vb = bytes_of(cpu_y4m);
  ASSERT_EQ(va.size(), vb.size());
  ASSERT_GT(va.size(), 5u * 32 * 48);
  ASSERT_EQ(va.substr(0, va.find('\n')), vb.substr(0, vb.find('\n')));  // the same header: size, rate, chroma
  const int levels = max_levels(va, vb);
  std::printf("frames max difference PJRT vs CPU: %d levels of 255 (Y, U, V samples; bound %d)\n", levels,
              kFrameMaxLevels);
  EXPECT_LE(levels, kFrameMaxLevels);
  std::string vp = va;
  vp[vp.size() / 2] = static_cast<char>(static_cast<uint8_t>(vp[vp.size() / 2]) > 128 ? 0 : 255);
  EXPECT_GT(max_levels(vp, vb), kFrameMaxLevels) << "the control must fail the bound";
}

TEST(PjrtGenerate, RefusesOffloadAndAMissingPlugin) {
  REQUIRE_PLUGIN();
  const std::string cache = (scratch() / "cache-bad").string();
  {
    const CmdResult r = generate((scratch() / "x.y4m").string(),
                                 {"--device", "pjrt", "--pjrt-plugin", VIDAX_PJRT_TEST_PLUGIN, "--offload"}, cache);
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("--device pjrt with --offload"), std::string::npos) << r.err;
  }
  {
    const CmdResult r = generate((scratch() / "x.y4m").string(),
                                 {"--device", "pjrt", "--pjrt-plugin", "/nonexistent/plugin.so"}, cache);
    EXPECT_EQ(r.code, 1) << r.err;
    EXPECT_NE(r.err.find("/nonexistent/plugin.so"), std::string::npos) << r.err;
    EXPECT_EQ(r.err.find("denoising"), std::string::npos) << "ran before failing: " << r.err;
  }
  EXPECT_FALSE(fs::exists(scratch() / "x.y4m"));
}

TEST(PjrtCli, ModelsSystemReportsThePluginsPlatformAndVersions) {
  REQUIRE_PLUGIN();
  ChildOptions o;
  o.capture_stdout = true;
  const CmdResult r = run({"models", "--system", "--pjrt-plugin", VIDAX_PJRT_TEST_PLUGIN}, o);
  ASSERT_EQ(r.code, 0) << r.err;
  EXPECT_NE(r.out.find("PJRT: plugin " + std::string(VIDAX_PJRT_TEST_PLUGIN) + " (PJRT API 0.81, StableHLO 1.13.3, "
                                                                              "platform cpu), 4 device(s)"),
            std::string::npos)
      << r.out;
  const CmdResult none = run({"models", "--system"}, o);
  ASSERT_EQ(none.code, 0) << none.err;
  if (!std::getenv("VIDAX_PJRT_PLUGIN"))
    EXPECT_NE(none.out.find("no plugin given (--pjrt-plugin FILE or VIDAX_PJRT_PLUGIN)"), std::string::npos) << none.out;
  const CmdResult bad = run({"models", "--system", "--pjrt-plugin", "/nonexistent/plugin.so"}, o);
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("/nonexistent/plugin.so"), std::string::npos) << bad.err;
}

TEST(PjrtCli, BenchTimesTheDiTStepThroughThePluginBesideTheCpuBackend) {
  REQUIRE_PLUGIN();
  const std::string cache = (scratch() / "cache-bench").string();
  ChildOptions o;
  o.env = {"VIDAX_PJRT_CACHE=" + cache};
  o.capture_stdout = true;
  o.timeout_s = 600;
  auto bench = [&] {
    const CmdResult r = run({"bench", "--model", "wan2.1-tiny-demo", "--frames", "5", "--height", "32", "--width", "48",
                             "--steps", "2", "--cfg", "--precision", "fp32", "--device", "pjrt", "--pjrt-plugin",
                             VIDAX_PJRT_TEST_PLUGIN,
                             "--json"},
                            o);
    EXPECT_EQ(r.code, 0) << r.err;
    return r.code == 0 ? nlohmann::json::parse(r.out) : nlohmann::json::object();
  };
  const nlohmann::json a = bench();
  ASSERT_TRUE(a.contains("pjrt")) << a.dump();
  EXPECT_EQ(a["pjrt"]["compiled"], 1);
  EXPECT_EQ(a["pjrt"]["cache_hit"], false);
  EXPECT_EQ(a["pjrt"]["session"]["recompilations"], 0);
  EXPECT_EQ(a["pjrt"]["session"]["runs"], 6);  // the first step and 2 timed ones, 2 forwards each (--cfg)
  EXPECT_EQ(a["pjrt"]["dit_step"]["count"], 2);
  EXPECT_GT(a["pjrt"]["vs_cpu_step_ratio"].get<double>(), 0);
  EXPECT_GT(a["pjrt"]["compile_seconds"].get<double>(), 0);
  EXPECT_EQ(a["forwards_per_step"], 2);
  // The same step through both (fp32): the program at the bench's size computes what the CPU does.
  EXPECT_LE(a["pjrt"]["vs_cpu_output_rel_l2"].get<double>(), 1e-5) << a["pjrt"].dump();
  const nlohmann::json b = bench();  // a new process: the compile cache
  EXPECT_EQ(b["pjrt"]["compiled"], 0);
  EXPECT_EQ(b["pjrt"]["cache_hit"], true);
}
