// LoRAs in the LTX-2 family's `vidax generate` (docs/lora.md, docs/models/ltx2.md "Checkpoint layouts
// and LoRAs"): a LoRA built for the tiny demo's DiT (ltx-trainer's naming, diffusion_model.<module>.
// lora_A / lora_B, with an alpha key, alpha != rank) moves the run; merged it equals a run on a
// checkpoint whose DiT weights were merged offline in this test (W += scale * alpha / rank * B @ A,
// fp32 loops); runtime equals merge within a bound; scale 0 is the run without it exactly; a Wan LoRA
// is refused naming the families; an unmatched key is an error naming it, and with
// --lora-allow-unmatched the run proceeds reporting it; Parts::use_loras switches a loaded model's
// LoRAs (a server's per-job LoRAs; a bad file leaves the base weights) and Parts::check_loras
// checks without merging. Then the CLI:
// `vidax generate --lora` reports what it merged, and `vidax inspect` on the demo checkpoint and on
// the ltx2.pipeline.t2v golden reports full coverage, a stray key failing it by name.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "cli_child.h"
#include "engine/families.h"
#include "io/checkpoint.h"
#include "ltx2_golden.h"
#include "models/ltx2/checkpoint.h"
#include "models/ltx2/checkpoint_keys.h"
#include "models/ltx2/family.h"
#include "models/ltx2/presets.h"
#include "pipeline/generate.h"
#include "pipeline/scratch.h"

namespace fs = std::filesystem;
using namespace vidax;
using vidax::test::ltx2::expect_error;

namespace {

// Every family's components (a Wan LoRA is told apart by them), as the CLI registers them.
struct Registered : ::testing::Environment {
  void SetUp() override { engine::register_builtins(); }
};
const auto* const kRegistered = ::testing::AddGlobalTestEnvironment(new Registered);

const fs::path& root() {
  static const fs::path r = test::scratch_dir("ltx2_generate_lora");
  return r;
}

const std::string& demo_dir() {
  static const std::string d = [] {
    pipeline::DemoOptions o;
    o.out_dir = (root() / "demo").string();
    ltx2::family().make_demo(ltx2::k23TinyDemo, o);
    return o.out_dir;
  }();
  return d;
}

std::string demo_checkpoint(const std::string& dir = demo_dir()) { return ltx2::find_checkpoint(dir).checkpoint; }

// The demo DiT's component config, as the loader builds it from the metadata's transformer dict.
nlohmann::json demo_dit_config() {
  const ltx2::CheckpointFiles f = ltx2::find_checkpoint(demo_dir());
  return ltx2::dit_config_json(ltx2::DiTConfig::from_json(f.config.at("transformer")));
}

constexpr int64_t kRank = 4;
constexpr double kAlpha = 8.0;  // alpha / rank = 2: a file whose alpha is ignored would be off by 2x

// Deterministic values in [-amp, amp).
std::vector<float> ramp(int64_t n, uint64_t seed, float amp) {
  std::vector<float> v(static_cast<size_t>(n));
  uint64_t s = seed * 2654435761u + 12345;
  for (auto& x : v) {
    s = s * 6364136223846793005ull + 1442695040888963407ull;
    x = amp * (static_cast<float>((s >> 40) & 0xFFFFFF) / 16777216.0f * 2.0f - 1.0f);
  }
  return v;
}

struct LoraModule {
  std::string module;  // the engine module name (transformer_blocks.0.attn1.to_q)
  int64_t out = 0, in = 0;
  std::vector<float> a, b;  // A [rank, in], B [out, rank]
};

// ltx-trainer's target modules (configs/t2v_lora.yaml's attention projections, and the FFNs) of the
// demo DiT, with A / B values.
std::vector<LoraModule> demo_lora_modules() {
  static const std::vector<std::string> targets = {"to_k", "to_q", "to_v", "to_out.0", "ff.net.0.proj", "ff.net.2"};
  std::vector<LoraModule> out;
  uint64_t seed = 1;
  for (const auto& p : ltx2::dit_component().params(demo_dit_config()).params) {
    if (p.shape.size() != 2 || !p.name.ends_with(".weight") || p.name.rfind("transformer_blocks.", 0) != 0) continue;
    const std::string module = p.name.substr(0, p.name.size() - 7);
    bool hit = false;
    for (const auto& t : targets) hit |= module.ends_with("." + t);
    if (!hit) continue;
    LoraModule m{module, p.shape[0], p.shape[1], ramp(kRank * p.shape[1], seed, 0.4f), ramp(p.shape[0] * kRank, seed + 7, 0.4f)};
    ++seed;
    out.push_back(std::move(m));
  }
  return out;
}

// The LoRA file: diffusion_model.<module>.lora_A.weight / .lora_B.weight and .alpha (fp32).
std::string write_lora(const std::string& name, const std::vector<std::string>& extra_keys = {}) {
  std::map<std::string, Tensor> t;
  for (const auto& m : demo_lora_modules()) {
    const std::string k = "diffusion_model." + m.module;
    t[k + ".lora_A.weight"] = Tensor::from_f32(m.a, {kRank, m.in});
    t[k + ".lora_B.weight"] = Tensor::from_f32(m.b, {m.out, kRank});
    t[k + ".alpha"] = Tensor::from_f32({static_cast<float>(kAlpha)}, {});
  }
  for (const auto& k : extra_keys) t[k] = Tensor::from_f32(std::vector<float>(kRank * 16, 0.01f), {kRank, 16});
  const std::string path = (root() / name).string();
  io::save_safetensors(path, t);
  return path;
}

// A copy of the demo folder whose checkpoint's DiT weights carry the LoRA merged offline:
// W += scale * (alpha / rank) * B @ A, accumulated in fp32.
std::string merged_offline_demo(double scale) {
  const fs::path dir = root() / ("merged_offline_" + std::to_string(scale));
  fs::remove_all(dir);
  fs::copy(demo_dir(), dir, fs::copy_options::recursive);
  const std::string ckpt = demo_checkpoint(dir.string());
  std::map<std::string, Tensor> t;
  std::map<std::string, std::string> meta;
  {
    const io::Checkpoint ck = io::Checkpoint::open(ckpt);
    meta = ck.metadata();
    for (const auto& n : ck.names()) t[n] = ck.get(n).to(DType::F32).contiguous();
  }
  const float f = static_cast<float>(scale * kAlpha / static_cast<double>(kRank));
  for (const auto& m : demo_lora_modules()) {
    const std::string key = "model.diffusion_model." + m.module + ".weight";
    std::vector<double> w64 = t.at(key).to_f64_vector();
    std::vector<float> w(w64.begin(), w64.end());
    for (int64_t o = 0; o < m.out; ++o)
      for (int64_t i = 0; i < m.in; ++i) {
        float acc = 0.0f;
        for (int64_t r = 0; r < kRank; ++r) acc += m.b[o * kRank + r] * m.a[r * m.in + i];
        w[o * m.in + i] += f * acc;
      }
    t[key] = Tensor::from_f32(w, {m.out, m.in});
  }
  fs::remove(ckpt);
  io::save_safetensors(ckpt, t, meta);
  return dir.string();
}

pipeline::LoadedModel load(const std::string& dir, const std::vector<translate::LoraSpec>& loras = {},
                           translate::LoraMode mode = translate::LoraMode::Merge, bool allow_unmatched = false,
                           std::vector<std::string>* stages = nullptr) {
  pipeline::LoadOptions lo;
  lo.weights_dir = dir;
  lo.precision = "fp32";
  lo.loras = loras;
  lo.lora.mode = mode;
  lo.lora.allow_unmatched = allow_unmatched;
  if (stages) lo.on_stage = [stages](const std::string& s) { stages->push_back(s); };
  return ltx2::family().load(lo);
}

pipeline::Request demo_request() {
  const pipeline::Defaults& d = ltx2::preset(ltx2::k23TinyDemo).variant.defaults;
  pipeline::Request r;
  r.prompt = "a red panda in the snow";
  r.default_negative_prompt = d.negative_prompt;
  r.frames = 9;
  r.height = 32;
  r.width = 64;
  r.steps = 2;
  r.seed = 11;
  r.guidance = d.guidance;
  r.shift = d.shift;
  r.sampler = d.sampler;
  r.fps = 24;
  return r;
}

struct Latents {
  Tensor video, audio;
};
Latents run(const pipeline::LoadedModel& m) {
  const pipeline::Result r = pipeline::run_generation(m.parts, demo_request(), {}, /*decode=*/false);
  return {r.latents, r.taps.at("audio_latent")};
}

double max_abs(const Tensor& a, const Tensor& b) {
  EXPECT_EQ(a.shape(), b.shape());
  const auto x = a.to_f64_vector(), y = b.to_f64_vector();
  double m = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) m = std::max(m, std::abs(x[i] - y[i]));
  return m;
}
double max_abs(const Latents& a, const Latents& b) { return std::max(max_abs(a.video, b.video), max_abs(a.audio, b.audio)); }

bool has_line(const std::vector<std::string>& lines, const std::string& needle) {
  for (const auto& l : lines)
    if (l.find(needle) != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(Ltx2GenerateLora, MergedEqualsTheOfflineMergeRuntimeAndScaleZeroAsStated) {
  const std::string lora = write_lora("demo_lora.safetensors");
  const size_t targets = demo_lora_modules().size();
  ASSERT_GT(targets, 0u);
  const Latents base = run(load(demo_dir()));

  std::vector<std::string> stages;
  const Latents merged = run(load(demo_dir(), {{lora, 0.75}}, translate::LoraMode::Merge, false, &stages));
  // The shared report (pipeline/lora_load.h), as Wan's: every target merged, none at run time.
  EXPECT_TRUE(has_line(stages, "LoRA " + lora + " (scale 0.750000) on the DiT: " + std::to_string(targets) +
                                   " target(s) merged, 0 kept at run time (--lora-mode merge)"));
  const double moves = max_abs(base, merged);

  const Latents offline = run(load(merged_offline_demo(0.75)));
  const double vs_offline = max_abs(merged, offline);

  stages.clear();
  const Latents runtime = run(load(demo_dir(), {{lora, 0.75}}, translate::LoraMode::Runtime, false, &stages));
  EXPECT_TRUE(has_line(stages, "0 target(s) merged, " + std::to_string(targets) + " kept at run time (--lora-mode runtime)"));
  const double vs_runtime = max_abs(merged, runtime);

  const Latents zero = run(load(demo_dir(), {{lora, 0.0}}));
  const double vs_zero = max_abs(base, zero);
  // The negative control of the offline comparison: another scale is not the same model.
  const Latents other = run(load(demo_dir(), {{lora, 0.5}}));
  const double vs_other = max_abs(offline, other);

  std::printf("  %zu targets (rank %lld, alpha %.0f): the LoRA moves the latents %.3g; merged vs offline merge %.3g; "
              "merged vs runtime %.3g; scale 0 vs none %.3g; scale 0.5 vs the 0.75 offline merge %.3g\n",
              targets, static_cast<long long>(kRank), kAlpha, moves, vs_offline, vs_runtime, vs_zero, vs_other);
  EXPECT_GT(moves, 1e-2);
  // The same fp32 sums in another order (the reader's B @ A then one scale; the loops here): a few ulps
  // of the weights, carried through 2 steps of 4 passes to latents of a few units (measured 8.9e-6).
  EXPECT_LE(vs_offline, 5e-5);
  // Runtime adds scale * factor * B (A x) to W x: other rounding of the same sum (measured 1e-5).
  EXPECT_LE(vs_runtime, 1e-4);
  EXPECT_EQ(vs_zero, 0.0);  // W + 0 * delta is W
  EXPECT_GT(vs_other, 1e-3);
}

TEST(Ltx2GenerateLora, WanLorasUnmatchedKeysAndExpertFlagsAreRefusedByName) {
  // A Wan LoRA: refused naming both families, allowed or not.
  const std::string wan = (fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "lora" / "wan_lora_comfyui.lora.safetensors").string();
  for (bool allow : {false, true})
    expect_error([&] { load(demo_dir(), {{wan, 1.0}}, translate::LoraMode::Merge, allow); },
                 "LoRA (its");
  try {
    load(demo_dir(), {{wan, 1.0}});
  } catch (const std::exception& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("a wan2.1 LoRA"), std::string::npos) << m;
    EXPECT_NE(m.find("given to a ltx2 model (ltx2-dit)"), std::string::npos) << m;
  }
  // A key that changes no parameter: an error naming it; allowed, the run proceeds and says so.
  const std::string stray = "diffusion_model.transformer_blocks.0.attn1.to_nothing.lora_A.weight";
  const std::string lora =
      write_lora("unmatched_lora.safetensors", {stray, "diffusion_model.transformer_blocks.0.attn1.to_nothing.lora_B.weight"});
  expect_error([&] { load(demo_dir(), {{lora, 1.0}}); }, stray);
  expect_error([&] { load(demo_dir(), {{lora, 1.0}}); }, "--lora-allow-unmatched");
  std::vector<std::string> stages;
  const pipeline::LoadedModel allowed = load(demo_dir(), {{lora, 1.0}}, translate::LoraMode::Merge, true, &stages);
  EXPECT_TRUE(has_line(stages, "warning: ")) << "no warning";
  EXPECT_TRUE(has_line(stages, stray));
  // The allowed file's other keys are applied: the same run as the clean file's.
  const Latents a = run(allowed), b = run(load(demo_dir(), {{write_lora("clean_lora.safetensors"), 1.0}}));
  EXPECT_EQ(max_abs(a, b), 0.0);
  // LTX-2 has one DiT: the expert flags are refused.
  pipeline::LoadOptions lo;
  lo.weights_dir = demo_dir();
  lo.loras_high_noise = {{lora, 1.0}};
  expect_error([&] { ltx2::family().load(lo); }, "--lora-high-noise / --lora-low-noise: LTX-2 has one DiT");
}

// A server's per-job LoRAs (Parts::use_loras, serve/model_residency.cpp): the loaded model switches
// to a LoRA and back without reading the checkpoint, each state the same run as a fresh load's;
// check_loras refuses a bad file without touching the model, and a failed switch leaves the base
// weights in use (Parts::use_loras' contract, as Wan's).
TEST(Ltx2GenerateLora, UseLorasSwitchesALoadedModel) {
  const std::string lora = write_lora("switch_lora.safetensors");
  const pipeline::LoadedModel m = load(demo_dir());
  ASSERT_TRUE(static_cast<bool>(m.parts.use_loras));
  ASSERT_TRUE(static_cast<bool>(m.parts.check_loras));
  const Latents base = run(m);
  m.parts.use_loras({{lora, 0.75}});
  const Latents with = run(m);
  EXPECT_EQ(max_abs(with, run(load(demo_dir(), {{lora, 0.75}}))), 0.0);
  EXPECT_GT(max_abs(with, base), 1e-2);
  const std::string wan = (fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "lora" / "wan_lora_comfyui.lora.safetensors").string();
  expect_error([&] { m.parts.check_loras({{wan, 1.0}}); }, "change no parameter");
  expect_error([&] { m.parts.use_loras({{wan, 1.0}}); }, "a wan2.1 LoRA");
  EXPECT_EQ(max_abs(run(m), base), 0.0);  // the failed switch left the base weights in use (parts.h)
  m.parts.use_loras({{lora, 0.75}});
  EXPECT_EQ(max_abs(run(m), with), 0.0);
  m.parts.use_loras({});
  EXPECT_EQ(max_abs(run(m), base), 0.0);  // no LoRA outlives the job that asked for it
}

TEST(Ltx2GenerateLoraCli, GenerateReportsTheMergeAndInspectCoversTheCheckpoint) {
  namespace cli = vidax::test::cli;
  const std::string lora = write_lora("cli_lora.safetensors");
  const std::string lat = (root() / "cli.safetensors").string();
  {
    const auto r = cli::run({"generate", "--weights", demo_dir(), "--prompt", "a cat", "--frames", "9", "--steps", "2",
                             "--threads", "2", "--lora", lora + ":0.5", "--lora-mode", "runtime", "--output-format",
                             "latents", "-o", lat},
                            {.timeout_s = 300});
    ASSERT_EQ(r.code, 0) << r.err;
    EXPECT_NE(r.err.find("LoRA " + lora + " (scale 0.500000) on the DiT: 0 target(s) merged"), std::string::npos) << r.err;
  }
  // inspect: every tensor of the demo checkpoint and of the pipeline golden belongs to a component.
  for (const std::string& f : {demo_checkpoint(), test::ltx2::golden("ltx2_pipeline_t2v.safetensors")}) {
    const auto r = cli::run({"inspect", f}, {.capture_stdout = true, .timeout_s = 120});
    EXPECT_EQ(r.code, 0) << f << ": " << r.out << r.err;
    EXPECT_NE(r.out.find("OK: full coverage"), std::string::npos) << r.out;
    EXPECT_EQ(r.out.find("INCOMPLETE"), std::string::npos) << r.out;
  }
  {
    const auto r = cli::run({"inspect", demo_checkpoint()}, {.capture_stdout = true, .timeout_s = 120});
    for (const char* c : {"ltx2-text-connectors", "ltx2-text-projection", "ltx2-dit"})
      EXPECT_NE(r.out.find(c), std::string::npos) << c << ": " << r.out;
  }
  // The negative control: a stray key under each text part's prefix is named and fails coverage.
  for (const std::string& stray : {std::string("model.diffusion_model.video_embeddings_connector.stray.weight"),
                                   std::string("text_embedding_projection.stray.weight")}) {
    const fs::path dir = root() / "stray";
    fs::create_directories(dir);
    const std::string f = (dir / "stray.safetensors").string();
    std::map<std::string, Tensor> t;
    std::map<std::string, std::string> meta;
    {
      const io::Checkpoint ck = io::Checkpoint::open(demo_checkpoint());
      meta = ck.metadata();
      for (const auto& n : ck.names()) t[n] = ck.get(n).contiguous();
    }
    t[stray] = Tensor::from_f32({1.0f, 2.0f}, {2});
    io::save_safetensors(f, t, meta);
    const auto r = cli::run({"inspect", f}, {.capture_stdout = true, .timeout_s = 120});
    EXPECT_NE(r.code, 0) << stray;
    EXPECT_NE(r.out.find("FAIL: incomplete coverage"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(stray), std::string::npos) << r.out;
  }
}
