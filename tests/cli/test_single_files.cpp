// The parts of a model as single files on every command that reads one
// (generate, bench, inspect, convert; apps/vidax/part_options.h), and a GGUF
// Q4_K DiT end to end: made from the wide tiny demo by our own converter,
// generated with, compared with the full-precision run, reported by inspect.
// Everything runs the built `vidax` binary, as a user would.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "cli_child.h"
#include "io/checkpoint.h"
#include "pipeline/scratch.h"

namespace fs = std::filesystem;
using namespace vidax;
using namespace vidax::test::cli;
using nlohmann::json;

namespace {

// The wide tiny demo (a 256-wide DiT: K-quant rows, head_dim 128), its Q4_K GGUF DiT and the
// full-precision latents, made once.
struct Wide {
  fs::path dir, demo, q4k, full;
  std::string dit, vae, t5;
  Wide() {
    dir = vidax::test::scratch_dir("cli_single_files");
    demo = dir / "wide";
    q4k = dir / "dit_q4_k.gguf";
    full = dir / "full.safetensors";
    const CmdResult m = run({"make-demo", demo.string(), "--model", "wan2.1-tiny-wide-demo", "--tokenizer", tiny_spiece()});
    EXPECT_EQ(m.code, 0) << m.err;
    dit = (demo / "diffusion_pytorch_model.safetensors").string();
    vae = (demo / "Wan2.1_VAE.safetensors").string();
    t5 = (demo / "models_t5_umt5-xxl-enc-bf16.safetensors").string();
    ChildOptions o;
    o.capture_stdout = true;
    const CmdResult c = run({"convert", "--diffusion-model", dit, q4k.string(), "--dtype", "q4_k"}, o);
    EXPECT_EQ(c.code, 0) << c.err;
    EXPECT_NE(c.out.find("20 tensors in q4_k"), std::string::npos) << c.out;  // every block matrix
    const CmdResult g = run({"generate", "--weights", demo.string(), "--prompt", "a cat", "--seed", "1", "--threads",
                             "2", "-o", full.string()});
    EXPECT_EQ(g.code, 0) << g.err;
  }
};
const Wide& wide() {
  static Wide w;
  return w;
}

Tensor latents(const fs::path& p) { return io::Checkpoint::open(p.string()).get("latents").to(DType::F32); }

double rel_l2(const Tensor& a, const Tensor& b) {
  const std::vector<double> x = a.to_f64_vector(), y = b.to_f64_vector();
  double num = 0, den = 0;
  for (size_t i = 0; i < x.size(); ++i) num += (x[i] - y[i]) * (x[i] - y[i]), den += y[i] * y[i];
  return std::sqrt(num / den);
}

ChildOptions with_stdout() {
  ChildOptions o;
  o.capture_stdout = true;
  o.env = {"OMP_WAIT_POLICY=passive"};
  return o;
}

}  // namespace

// `generate` with a Q4_K GGUF DiT: it runs, the latents are finite and within 0.1 relative L2 of
// the full-precision run (measured 0.049 after the demo's 8 steps); the same file with every
// part as a file (no --weights) gives the same latents bit for bit.
TEST(SingleFiles, GenerateWithAQ4KGgufDiT) {
  const Wide& w = wide();
  const fs::path q = w.dir / "q4k.safetensors", q2 = w.dir / "q4k_files.safetensors";
  const CmdResult g = run({"generate", "--weights", w.demo.string(), "--diffusion-model", w.q4k.string(), "--prompt",
                           "a cat", "--seed", "1", "--threads", "2", "-o", q.string()});
  ASSERT_EQ(g.code, 0) << g.err;
  const Tensor a = latents(q), ref = latents(w.full);
  ASSERT_EQ(a.shape(), ref.shape());
  for (double v : a.to_f64_vector()) ASSERT_TRUE(std::isfinite(v));
  const double e = rel_l2(a, ref);
  EXPECT_GT(e, 0.0);   // the Q4_K weights were used, not the file beside them
  EXPECT_LT(e, 0.1) << "Q4_K vs full precision, relative L2 of the final latent";
  const CmdResult g2 = run({"generate", "--diffusion-model", w.q4k.string(), "--vae", w.vae, "--text-encoder", w.t5,
                            "--prompt", "a cat", "--seed", "1", "--threads", "2", "-o", q2.string()});
  ASSERT_EQ(g2.code, 0) << g2.err;
  EXPECT_EQ(rel_l2(latents(q2), a), 0.0);
  const json side = json::parse(std::ifstream(q2.string() + ".json"));
  EXPECT_EQ(side["model"], "wan2.1-tiny-wide-demo");
  EXPECT_EQ(side["files"]["diffusion_model"], w.q4k.string());
}

// `inspect` with part files: each checked to be its part, the model detected from the DiT file,
// the quant types counted.
TEST(SingleFiles, InspectReportsPartsAndQuantTypes) {
  const Wide& w = wide();
  const CmdResult r = run({"inspect", "--diffusion-model", w.q4k.string(), "--vae", w.vae, "--text-encoder", w.t5},
                          with_stdout());
  ASSERT_EQ(r.code, 0) << r.err << r.out;
  EXPECT_NE(r.out.find("model: wan2.1-tiny-wide-demo (wan)"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--diffusion-model " + w.q4k.string() + ": wan2.1-dit"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("F32 x49 Q4_K x20"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--vae " + w.vae + ": wan2.1-vae"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("--text-encoder " + w.t5), std::string::npos) << r.out;
  const CmdResult j = run({"inspect", "--diffusion-model", w.q4k.string(), "--json"}, with_stdout());
  ASSERT_EQ(j.code, 0) << j.err;
  const json rep = json::parse(j.out);
  EXPECT_EQ(rep["variant"], "wan2.1-tiny-wide-demo");
  ASSERT_EQ(rep["parts"].size(), 1u);
  EXPECT_EQ(rep["parts"][0]["component"], "wan2.1-dit");
  // A file under the wrong flag is refused, naming the flag, the file and what it is.
  const CmdResult bad = run({"inspect", "--vae", w.q4k.string()}, with_stdout());
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("--vae " + w.q4k.string() + " is not"), std::string::npos) << bad.err;
  EXPECT_NE(bad.err.find("DiT"), std::string::npos) << bad.err;
  const CmdResult both = run({"inspect", w.demo.string(), "--vae", w.vae}, with_stdout());
  EXPECT_EQ(both.code, 1);
  EXPECT_NE(both.err.find("together"), std::string::npos) << both.err;
}

// `convert --diffusion-model FILE OUT`: the part checked, then converted (here back to f32; the
// GGUF's Q4_K blocks dequantized); a wrong part or a second path is refused.
TEST(SingleFiles, ConvertTakesAPartFile) {
  const Wide& w = wide();
  const fs::path out = w.dir / "dequantized.safetensors";
  const CmdResult c = run({"convert", "--diffusion-model", w.q4k.string(), out.string(), "--dtype", "f32"}, with_stdout());
  ASSERT_EQ(c.code, 0) << c.err;
  EXPECT_NE(c.err.find("wan2.1-dit of wan2.1-tiny-wide-demo"), std::string::npos) << c.err;
  const io::Checkpoint ck = io::Checkpoint::open(out.string());
  EXPECT_EQ(ck.get("blocks.0.ffn.0.weight").dtype(), DType::F32);
  const CmdResult wrong = run({"convert", "--text-encoder", w.vae, (w.dir / "x.safetensors").string()});
  EXPECT_EQ(wrong.code, 1);
  EXPECT_NE(wrong.err.find("--text-encoder " + w.vae + " is not"), std::string::npos) << wrong.err;
  EXPECT_FALSE(fs::exists(w.dir / "x.safetensors"));
  const CmdResult two = run({"convert", "--vae", w.vae, w.dit, (w.dir / "y.safetensors").string()});
  EXPECT_EQ(two.code, 1);
  EXPECT_NE(two.err.find("give only OUT"), std::string::npos) << two.err;
}

// `bench` on the files: the model is the DiT file's, each stage runs on the file's weights.
TEST(SingleFiles, BenchTimesTheFilesWeights) {
  const Wide& w = wide();
  const CmdResult b = run({"bench", "--diffusion-model", w.q4k.string(), "--vae", w.vae, "--text-encoder", w.t5,
                           "--frames", "5", "--height", "64", "--width", "64", "--threads", "2", "--json"},
                          with_stdout());
  ASSERT_EQ(b.code, 0) << b.err;
  const json r = json::parse(b.out);
  EXPECT_EQ(r["model"], "wan2.1-tiny-wide-demo");
  EXPECT_EQ(r["dit_weights"], w.q4k.string());
  EXPECT_EQ(r["vae_weights"], w.vae);
  EXPECT_EQ(r["text_encoder"]["weights"], w.t5);
  EXPECT_GT(r["step_seconds_median"].get<double>(), 0.0);
  // --vae alone keeps timing random weights.
  const CmdResult rnd = run({"bench", "--model", "wan2.1-tiny-demo", "--steps", "0", "--vae", "--frames", "5",
                             "--height", "64", "--width", "64", "--threads", "2", "--json"},
                            with_stdout());
  ASSERT_EQ(rnd.code, 0) << rnd.err;
  EXPECT_EQ(json::parse(rnd.out)["vae_weights"], "random (real shapes)");
  const CmdResult bad = run({"bench", "--diffusion-model", w.vae, "--threads", "2"});
  EXPECT_EQ(bad.code, 1);
  EXPECT_NE(bad.err.find("--diffusion-model " + w.vae + " is not"), std::string::npos) << bad.err;
}

// `bench --offload`: the random weights written once into --scratch-dir and streamed per block,
// the same steps timed resident; both finite, the ratio reported. (Times at this toy size say
// nothing about the real cost: docs/quantization.md has the measured 1.3B figure.)
TEST(SingleFiles, BenchOffloadStreamsAndComparesWithResident) {
  const fs::path d = vidax::test::scratch_dir("cli_bench_offload");
  const CmdResult b = run({"bench", "--model", "wan2.1-tiny-demo", "--offload", "--scratch-dir", d.string(), "--frames",
                           "5", "--height", "64", "--width", "64", "--steps", "2", "--threads", "2", "--json"},
                          with_stdout());
  ASSERT_EQ(b.code, 0) << b.err;
  const json r = json::parse(b.out);
  EXPECT_TRUE(r["offload"].get<bool>());
  EXPECT_GT(r["offload_step_ratio"].get<double>(), 0.0);
  EXPECT_EQ(r["offload_resident_step"]["count"], 2);
  EXPECT_GT(r["offload_streamed_peak_rss_bytes"].get<double>(), 0.0);
  EXPECT_LE(r["offload_streamed_peak_rss_bytes"].get<double>(), r["peak_rss_bytes"].get<double>());
  EXPECT_TRUE(fs::is_regular_file(d / "vidax-bench-wan2.1-tiny-demo-seed0-BF16.safetensors"));
  EXPECT_NE(b.err.find("blocks streamed from"), std::string::npos) << b.err;
  const CmdResult again = run({"bench", "--model", "wan2.1-tiny-demo", "--offload", "--scratch-dir", d.string(),
                               "--frames", "5", "--height", "64", "--width", "64", "--threads", "2"});
  ASSERT_EQ(again.code, 0) << again.err;
  EXPECT_NE(again.err.find("written before"), std::string::npos) << again.err;  // reused, not rewritten
  const CmdResult np = run({"bench", "--model", "wan2.1-tiny-demo", "--no-prefetch"});
  EXPECT_EQ(np.code, 1);
  EXPECT_NE(np.err.find("--no-prefetch needs --offload"), std::string::npos) << np.err;
}

// `bench --vae --vae-tile`: the tiled decode's own peak resident set is below the untiled one's.
// Measured on the tiny demo VAE at 512x512x5: 159 MB untiled, 67.5 MB with 128-pixel tiles; the
// test asserts the tiled peak is under 3/4 of the untiled (the values: tests/wan_vae, tiled).
TEST(SingleFiles, BenchTiledVaeDecodeLowersThePeak) {
  auto peak = [](const std::vector<std::string>& extra) {
    std::vector<std::string> args{"bench", "--model", "wan2.1-tiny-demo", "--steps", "0", "--vae", "--frames", "5",
                                  "--height", "512", "--width", "512", "--threads", "2", "--json"};
    args.insert(args.end(), extra.begin(), extra.end());
    const CmdResult b = run(args, with_stdout());
    EXPECT_EQ(b.code, 0) << b.err;
    const json r = json::parse(b.out);
    if (!r.contains("vae_decode_peak_rss_above_start_bytes")) return -1.0;  // the kernel keeps VmHWM
    return r["vae_decode_peak_rss_above_start_bytes"].get<double>();
  };
  const double whole = peak({}), tiled = peak({"--vae-tile", "128"});
  if (whole < 0 || tiled < 0) GTEST_SKIP() << "this kernel does not reset the peak resident set (/proc/self/clear_refs)";
  EXPECT_GT(whole, 0.0);
  EXPECT_LT(tiled, 0.75 * whole) << "untiled " << whole << " B, tiled " << tiled << " B";
}
