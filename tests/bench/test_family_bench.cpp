// `vidax bench` for LTX-2, HunyuanVideo 1.0 and 1.5 on their tiny demo architectures (seconds):
// every stage named and timed, FLOPs counted by the backend (cross-checked against Wan's hand
// count), --weights-dtype, and every option or shape a family cannot honour refused by name.
#include <gtest/gtest.h>

#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_child.h"
#include "core/error.h"
#include "engine/families.h"
#include "models/hunyuan/presets.h"
#include "models/hunyuan15/presets.h"
#include "models/ltx2/presets.h"
#include "models/wan/bench.h"
#include "models/wan/presets.h"
#include "pipeline/bench.h"

namespace {

using nlohmann::json;
using vidax::pipeline::BenchOptions;

void quiet(const std::string&) {}

// 9 frames of 64 x 64: HunyuanVideo 1.0 (4x8x8 VAE, 1x2x2 patch) and 1.5 (4x16x16, patch 1) both
// 3 x 4 x 4 = 48 tokens; LTX-2 (8x32x32, patch 1) 2 x 2 x 2 = 8.
struct Demo {
  const char* model;
  int64_t tokens;
};
const Demo kDemos[] = {{vidax::hunyuan15::kT2VTinyDemo, 48},
                       {vidax::hunyuan::kT2VTinyDemo, 48},
                       {vidax::ltx2::k23TinyDemo, 8}};

BenchOptions demo_options(const char* model) {
  BenchOptions o;
  o.model = model;
  o.frames = 9;
  o.height = 64;
  o.width = 64;
  o.steps = 2;
  o.vae = true;
  o.text_encoder = true;
  return o;
}

std::string error_of(const BenchOptions& o) {
  try {
    (void)vidax::engine::run_bench(o, quiet);
  } catch (const vidax::Error& e) {
    return e.what();
  }
  return "";
}

TEST(FamilyBench, DemoReportsEveryStage) {
  for (const Demo& d : kDemos) {
    SCOPED_TRACE(d.model);
    const json r = vidax::engine::run_bench(demo_options(d.model), quiet);
    EXPECT_EQ(r.at("model").get<std::string>(), d.model);
    EXPECT_EQ(r.at("tokens").get<int64_t>(), d.tokens);
    EXPECT_EQ(r.at("dit_step").at("count").get<int>(), 2);
    EXPECT_GT(r.at("step_seconds_median").get<double>(), 0.0);
    EXPECT_LE(r.at("step_seconds_min").get<double>(), r.at("step_seconds_median").get<double>());
    EXPECT_GT(r.at("step_cpu_seconds_min").get<double>(), 0.0);
    EXPECT_GT(r.at("dit_warmup_seconds").get<double>(), 0.0);
    // FLOPs as the backend executed them: GEMMs and attention both present, and their sum.
    const json& parts = r.at("step_flops_parts");
    ASSERT_TRUE(parts.contains("gemm") && parts.contains("attention")) << parts.dump();
    EXPECT_GT(parts.at("attention").get<double>(), 0.0);
    EXPECT_DOUBLE_EQ(r.at("step_flops").get<double>(),
                     parts.at("gemm").get<double>() + parts.at("attention").get<double>());
    const double mfu = r.at("mfu").get<double>();
    EXPECT_GT(mfu, 0.0);
    EXPECT_LT(mfu, 1.5);
    EXPECT_GT(r.at("machine_peak_flops_per_cpu_second").get<double>(), 1e9);
    EXPECT_FALSE(r.at("cpu_tier").get<std::string>().empty());
    EXPECT_EQ(r.at("weights_dtype").get<std::string>(), "fp32 drawn, cast to the precision");
    EXPECT_GT(r.at("dit_parameters").get<double>(), 0.0);
    EXPECT_GT(r.at("text_encoder_seconds").get<double>(), 0.0);
    EXPECT_GT(r.at("text_encoder").at("batch_rows").get<int64_t>(), 0);
    EXPECT_GT(r.at("vae_seconds").get<double>(), 0.0);
    const double rss = r.at("peak_rss_bytes").get<double>();
    EXPECT_GT(rss, 1e6);
    EXPECT_LT(rss, r.at("machine").at("mem_total_bytes").get<double>());
  }
}

// The counted FLOPs grow with the video (twice the latent frames; the text rows stay, so less than
// twice), and are the same on a second run of the same shape.
TEST(FamilyBench, CountedFlopsFollowTheShape) {
  for (const Demo& d : kDemos) {
    SCOPED_TRACE(d.model);
    BenchOptions o = demo_options(d.model);
    o.vae = o.text_encoder = false;
    o.steps = 1;
    const json small = vidax::engine::run_bench(o, quiet);
    o.frames = d.tokens == 8 ? 25 : 21;  // LTX-2: 2 -> 4 latent frames; HunyuanVideo: 3 -> 6
    const json big = vidax::engine::run_bench(o, quiet);
    EXPECT_EQ(big.at("tokens").get<int64_t>(), 2 * small.at("tokens").get<int64_t>());
    EXPECT_GT(big.at("step_flops_parts").at("gemm").get<double>(), small.at("step_flops_parts").at("gemm").get<double>());
    EXPECT_GT(big.at("step_flops_parts").at("attention").get<double>(),
              small.at("step_flops_parts").at("attention").get<double>());
    EXPECT_LT(big.at("step_flops").get<double>(), 4.0 * small.at("step_flops").get<double>());
    o.frames = 9;
    EXPECT_DOUBLE_EQ(vidax::engine::run_bench(o, quiet).at("step_flops").get<double>(),
                     small.at("step_flops").get<double>());
  }
}

// The backend's count against Wan's hand count of the same step (bench.h: every linear and both
// attentions, from the shapes): the profiled step's FLOPs are those of the timed steps.
TEST(FamilyBench, CountedFlopsMatchWansHandCount) {
  BenchOptions o;
  o.model = vidax::wan::kTinyDemoModel;
  o.frames = 5;
  o.height = 64;
  o.width = 96;
  o.steps = 1;
  o.prompt_tokens = 512;  // the hand count's cross-attention keys: text_len rows
  o.profile = true;
  const json r = vidax::engine::run_bench(o, quiet);
  const double hand = r.at("step_flops").get<double>();
  const double counted = r.at("dit_profile").at("total_flops").get<double>();
  EXPECT_GT(hand, 0.0);
  EXPECT_NEAR(counted / hand, 1.0, 0.01) << "counted " << counted << ", by hand " << hand;
}

TEST(FamilyBench, QuantizedWeights) {
  for (const Demo& d : kDemos) {
    SCOPED_TRACE(d.model);
    BenchOptions o = demo_options(d.model);
    o.vae = o.text_encoder = false;
    o.steps = 1;
    const json f = vidax::engine::run_bench(o, quiet);
    for (const char* t : {"q8_0", "fp8"}) {
      o.weights_dtype = t;
      const json r = vidax::engine::run_bench(o, quiet);
      EXPECT_EQ(r.at("weights_dtype").get<std::string>(), t);
      EXPECT_GT(r.at("step_seconds_median").get<double>(), 0.0);
      EXPECT_LT(r.at("dit_memory_estimate_bytes").get<double>(), f.at("dit_memory_estimate_bytes").get<double>()) << t;
      // The same GEMMs: a quantized weight's panels are counted once (bugs row 134).
      EXPECT_DOUBLE_EQ(r.at("step_flops").get<double>(), f.at("step_flops").get<double>()) << t;
    }
    o.weights_dtype = "q9";
    EXPECT_NE(error_of(o).find("--weights-dtype"), std::string::npos) << error_of(o);
  }
}

TEST(FamilyBench, RefusesWhatAFamilyCannotHonour) {
  for (const Demo& d : kDemos) {
    SCOPED_TRACE(d.model);
    const BenchOptions base = demo_options(d.model);
    auto expect = [&](BenchOptions o, const std::string& names) {
      const std::string e = error_of(o);
      EXPECT_NE(e.find(names), std::string::npos) << "expected an error naming '" << names << "', got: " << e;
    };
    BenchOptions o = base;
    o.frames = 10;
    expect(o, "--frames");
    o = base;
    o.height = 40;
    expect(o, "--height");
    o = base;
    o.offload = true;
    expect(o, "--offload");
    o = base;
    o.mesh = "tp=2";
    expect(o, "--mesh");
    o = base;
    o.device = "pjrt";
    expect(o, "--device");
    o = base;
    o.vae_tile = 128;
    expect(o, "--vae-tile");
    o = base;
    o.loras = {"x.safetensors"};
    expect(o, "--lora");
    o = base;
    o.diffusion_model_file = "x.safetensors";
    expect(o, "--diffusion-model");
    o = base;
    o.precision = "fp16";
    expect(o, "--precision fp16");
  }
}

// The published models at their real shapes are refused before any allocation when they do not
// fit (their DiTs in bf16: 8.3B, 13B, 22B), the message naming the quantized weights that would
// (not --offload, which these families refuse: bugs row 133).
TEST(FamilyBench, RealShapesThatDoNotFitAreRefused) {
  for (const char* m : {vidax::hunyuan15::kT2V480p, vidax::hunyuan::kT2V544p, vidax::ltx2::k23Dev}) {
    SCOPED_TRACE(m);
    BenchOptions o;
    o.model = m;
    o.frames = 9;
    o.height = 512;
    o.width = 768;
    o.memory_limit_bytes = 8e9;
    const std::string e = error_of(o);
    EXPECT_NE(e.find("--weights-dtype q8_0"), std::string::npos) << e;
  }
  BenchOptions o;
  o.model = vidax::ltx2::k23Dev;
  o.frames = 9;
  o.height = 512;
  o.width = 768;
  o.steps = 0;
  o.vae = true;
  EXPECT_NE(error_of(o).find("--vae"), std::string::npos) << error_of(o);
}

TEST(FamilyBench, CliPrintsJson) {
  if (!std::filesystem::exists(vidax::test::cli::vidax_binary()))
    GTEST_SKIP() << vidax::test::cli::vidax_binary() << " is not built";
  const auto run = vidax::test::cli::run_line(
      "bench --model hunyuanvideo1.5-t2v-tiny-demo --frames 9 --height 64 --width 64 --steps 1 --threads 1 --vae "
      "--text-encoder --json");
  ASSERT_EQ(run.code, 0) << run.all();
  const json r = json::parse(run.out);
  for (const char* k : {"step_seconds_median", "step_flops", "mfu", "text_encoder_seconds", "vae_seconds",
                        "peak_rss_bytes", "cpu_tier"})
    EXPECT_TRUE(r.contains(k)) << k;
}

}  // namespace
