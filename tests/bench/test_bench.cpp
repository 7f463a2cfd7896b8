// `vidax bench` smoke tests on the tiny demo architecture (seconds): the report's
// fields are present and sane, FLOPs match a hand count, the profile adds up,
// models that do not fit are refused, and the CLI prints parseable JSON.
#include <gtest/gtest.h>

#include <omp.h>

#include <cstdio>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "cli_child.h"
#include "core/error.h"
#include "pipeline/bench.h"
#include "engine/families.h"
#include "models/wan/bench.h"
#include "models/wan/presets.h"

namespace {

using nlohmann::json;
using vidax::pipeline::BenchOptions;

BenchOptions tiny_options() {
  BenchOptions o;
  o.model = vidax::wan::kTinyDemoModel;
  o.frames = 5;  // 2 latent frames
  o.height = 64;
  o.width = 96;  // latent 8 x 12 -> 4 x 6 patches
  o.steps = 2;
  o.repeats = 1;
  o.vae = true;
  return o;
}

void quiet(const std::string&) {}

// One thread: the machine the tests run on is shared, and OpenMP spin-waits of a
// descheduled team make a tiny model's wall time balloon.
struct OneThread : ::testing::Environment {
  void SetUp() override { omp_set_num_threads(1); }
};
const auto* const kOneThread = ::testing::AddGlobalTestEnvironment(new OneThread);

TEST(Bench, TinyReportFieldsAreSane) {
  BenchOptions o = tiny_options();
  o.profile = true;
  const json r = vidax::engine::run_bench(o, quiet);

  EXPECT_EQ(r.at("tokens").get<int64_t>(), 2 * 4 * 6);
  EXPECT_EQ(r.at("threads").get<int>(), 1);
  EXPECT_EQ(r.at("dit_step").at("count").get<int>(), 2);
  const double step = r.at("step_seconds_median").get<double>();
  EXPECT_GT(step, 0.0);
  EXPECT_LE(r.at("step_seconds_min").get<double>(), step);
  EXPECT_GT(r.at("step_cpu_seconds_median").get<double>(), 0.0);
  EXPECT_GT(r.at("step_flops").get<double>(), 0.0);
  const double mfu = r.at("mfu").get<double>();
  EXPECT_GT(mfu, 0.0);
  EXPECT_LT(mfu, 1.5);  // a tiny model cannot beat a large GEMM by much
  EXPECT_GT(r.at("gemm_peak").at("flops_per_cpu_second").get<double>(), 1e9);
  EXPECT_GT(r.at("vae_seconds").get<double>(), 0.0);
  const double rss = r.at("peak_rss_bytes").get<double>();
  EXPECT_GT(rss, 1e6);
  EXPECT_LT(rss, r.at("machine").at("mem_total_bytes").get<double>());

  // The profiled step: classes partition the step's CPU time (shares sum to 1, GEMM present).
  const json& prof = r.at("dit_profile");
  double share = 0;
  for (const auto& [name, v] : prof.at("summary").items()) share += v.get<double>();
  EXPECT_NEAR(share, 1.0, 1e-9);
  EXPECT_GT(prof.at("classes").at("gemm").at("calls").get<int>(), 0);
  EXPECT_GT(prof.at("classes").at("attention").at("calls").get<int>(), 0);
}

TEST(Bench, StepFlopsMatchAHandCount) {
  // Wan2.1 1.3B at 256x256x9: 3 x 16 x 16 = 768 tokens, dim 1536, ffn 8960, 30 blocks, text 512.
  const auto cfg = vidax::wan::DiTConfig::from_json(vidax::wan::preset("wan2.1-t2v-1.3b").dit);
  const double block_linear = 30.0 * 2 * 768 * (6.0 * 1536 * 1536 + 2.0 * 1536 * 8960);  // 1.92065568768e12
  const double edge = 2.0 * 768 * 1536 * 4 * (16 + 16) + 2.0 * (256 * 1536 + 7.0 * 1536 * 1536);
  const double self_attn = 30.0 * 4 * 768.0 * 768 * 1536;
  const double cross_attn = 30.0 * 4 * 768.0 * 512 * 1536;
  EXPECT_DOUBLE_EQ(vidax::wan::dit_step_flops(cfg, 768), block_linear + edge + self_attn + cross_attn);
  // About 2 x parameters x tokens for the linears (1.3B parameters, minus the per-prompt cross K/V).
  EXPECT_NEAR(block_linear / (2 * 768) / 1e9, 1.25, 0.05);
}

TEST(Bench, RefusesAModelThatDoesNotFit) {
  BenchOptions o;
  o.model = "wan2.1-t2v-14b";
  o.precision = "bf16";
  o.memory_limit_bytes = 24e9;  // a 24 GB machine: 28 GB of bf16 weights alone
  try {
    (void)vidax::engine::run_bench(o, quiet);
    FAIL() << "expected the 14B model to be refused";
  } catch (const vidax::Error& e) {
    EXPECT_NE(std::string(e.what()).find("--offload"), std::string::npos) << e.what();
  }
}

TEST(Bench, RejectsBadShapes) {
  BenchOptions o = tiny_options();
  o.frames = 6;
  EXPECT_THROW((void)vidax::engine::run_bench(o, quiet), vidax::Error);
  o = tiny_options();
  o.height = 72;
  EXPECT_THROW((void)vidax::engine::run_bench(o, quiet), vidax::Error);
}

TEST(Bench, CliPrintsJson) {
  if (!std::filesystem::exists(vidax::test::cli::vidax_binary())) GTEST_SKIP() << vidax::test::cli::vidax_binary() << " is not built";
  const auto run = vidax::test::cli::run_line(
      "bench --model wan2.1-tiny-demo --random-weights --frames 5 --height 64 --width 96 --steps 1 --threads 1 --json");
  ASSERT_EQ(run.code, 0) << run.all();
  const std::string& out = run.out;
  const json r = json::parse(out);
  EXPECT_EQ(r.at("threads").get<int>(), 1);
  for (const char* k : {"step_seconds_median", "step_flops", "mfu", "peak_rss_bytes"})
    EXPECT_TRUE(r.contains(k)) << k;
  EXPECT_FALSE(r.contains("vae_seconds"));  // not asked for

  // Random weights are the only mode, so the flag is optional: without it the same report.
  const auto run2 = vidax::test::cli::run_line(
      "bench --model wan2.1-tiny-demo --frames 5 --height 64 --width 96 --steps 1 --threads 1 --json");
  ASSERT_EQ(run2.code, 0) << run2.all();
  const std::string& out2 = run2.out;
  EXPECT_EQ(json::parse(out2).at("weights").get<std::string>(), "random (real shapes)");
}

}  // namespace

namespace {

// --weights-dtype fp8|int8: the DiT's matrices made directly as scaled weights (one byte per
// value) and computed on: the report names the type and the weights take about a quarter of
// the fp32 bytes; an unknown type is refused naming the valid ones.
TEST(Bench, ScaledWeightsDtypes) {
  BenchOptions base = tiny_options();
  base.vae = false;
  base.steps = 1;
  const json f32 = vidax::engine::run_bench(base, quiet);
  for (const char* t : {"fp8", "int8"}) {
    BenchOptions o = base;
    o.weights_dtype = t;
    const json r = vidax::engine::run_bench(o, quiet);
    EXPECT_EQ(r.at("weights_dtype").get<std::string>(), t);
    EXPECT_GT(r.at("step_seconds_median").get<double>(), 0.0);
    EXPECT_LT(r.at("dit_weight_bytes_per_rank").get<double>(), 0.6 * f32.at("dit_weight_bytes_per_rank").get<double>())
        << t;
  }
  BenchOptions bad = base;
  bad.weights_dtype = "fp9";
  EXPECT_THROW(vidax::engine::run_bench(bad, quiet), vidax::Error);
}

}  // namespace

// VACE: the step runs the vace blocks on a random vace context of the real shape, and the FLOPs
// count them (a vace block is a block plus after_proj, before_proj at vace layer 0, on as many
// tokens); --device pjrt is refused naming VACE rather than timing a step without the vace blocks.
TEST(Bench, VaceStepRunsAndCountsTheVaceBlocks) {
  BenchOptions o = tiny_options();
  o.model = "wan2.1-vace-tiny-demo";
  o.vae = false;
  const json r = vidax::engine::run_bench(o, quiet);
  EXPECT_GT(r.at("step_seconds_median").get<double>(), 0.0);
  EXPECT_EQ(r.at("vace_context_shape"), json({96, 2, 8, 12}));
  // The published 1.3B VACE at 256x256x9 (768 tokens): 6 vace blocks at layers 0, 5, .., 25.
  const auto vace = vidax::wan::DiTConfig::from_json(vidax::wan::preset("wan2.1-vace-1.3b").dit);
  const auto t2v = vidax::wan::DiTConfig::from_json(vidax::wan::preset("wan2.1-t2v-1.3b").dit);
  ASSERT_EQ(vace.vace_layers.size(), 6u);
  const double L = 768, D = 1536, F = 8960;
  const double per_block = 2 * L * (6 * D * D + 2 * D * F) + 4 * L * L * D + 4 * L * 512 * D;
  const double extra = 6 * per_block + 2 * L * D * D * 7 + 2 * L * D * 4 * 96;  // 6 after_proj + 1 before_proj
  EXPECT_DOUBLE_EQ(vidax::wan::dit_step_flops(vace, 768), vidax::wan::dit_step_flops(t2v, 768) + extra);
  BenchOptions p = o;
  p.device = "pjrt";
  try {
    (void)vidax::engine::run_bench(p, quiet);
    FAIL() << "expected --device pjrt to be refused for VACE";
  } catch (const vidax::Error& e) {
    EXPECT_NE(std::string(e.what()).find("VACE"), std::string::npos) << e.what();
  }
}
