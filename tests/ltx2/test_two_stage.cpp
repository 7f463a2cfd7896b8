// The LTX-2 two-stage pipelines (models/ltx2/two_stage.h, kinds ltx2.pipeline.two_stage and
// ltx2.pipeline.distilled) against the official TI2VidTwoStagesPipeline.__call__ and
// DistilledPipeline.__call__ (tools/golden/ltx2_two_stage.py): every row, negative controls (the
// LoRA's strength, an upsampler weight, the seed), the stage-2 LoRA patched out after the run, the
// stage options, bad requests.
#include <gtest/gtest.h>

#include "backend/ops.h"
#include "ltx2_golden.h"
#include "models/ltx2/checkpoint_keys.h"
#include "models/ltx2/dit.h"
#include "models/ltx2/t2v.h"
#include "models/ltx2/two_stage.h"
#include "models/ltx2/video_vae_config.h"

namespace vidax::test::ltx2 {
namespace {

namespace L = vidax::ltx2;

// The kind's rows: stage 1's noise and both sigma tables exact; every latent and tap max abs <= 2e-5
// (the bound of ltx2.pipeline.t2v: the guidance multiplies the DiT's ~7e-6; stage 2 starts from the
// upsampled stage-1 latent, so its noised state carries stage 1's differences); the decoded video
// max abs <= 2e-6.
parity::Report expect_two_stage_rows(const char* name) {
  engine::register_builtins();
  const parity::Report rep = parity::run(golden(name), parity::Options{});
  for (const auto& c : rep.rows) {
    std::printf("  %s %-36s max_abs=%.3g rel_l2=%.3g\n", name, c.name.c_str(), c.max_abs, c.rel_l2);
    EXPECT_EQ(c.status, parity::Comparison::Status::Ok) << c.name << " " << c.note;
    if (c.name.rfind("inter.stage1.noise", 0) == 0 || c.name.find(".sigmas") != std::string::npos)
      EXPECT_EQ(c.max_abs, 0.0) << c.name;
    else if (c.name == "output.video")
      EXPECT_LE(c.max_abs, 2e-6) << c.name;
    else
      EXPECT_LE(c.max_abs, 2e-5) << c.name;
  }
  EXPECT_TRUE(rep.ok()) << rep.passed << "/" << rep.compared;
  return rep;
}

TEST(Ltx2TwoStageGolden, TwoStagePipelineMatchesTheReference) {
  const parity::Report rep = expect_two_stage_rows("ltx2_two_stage.safetensors");
  // 4 latents + video, upsampled, 2 x (sigmas + 2 noises), 2 + 3 steps x 4 taps.
  EXPECT_EQ(rep.compared, 5 + 1 + 6 + 5 * 4);
}

TEST(Ltx2TwoStageGolden, DistilledPipelineMatchesTheReference) {
  const parity::Report rep = expect_two_stage_rows("ltx2_distilled.safetensors");
  EXPECT_EQ(rep.compared, 4 + 1 + 6 + (8 + 3) * 4);
}

// Negative controls: each must fail the final latents.
TEST(Ltx2TwoStageGolden, PerturbedLoraUpsamplerOrSeedFails) {
  // The LoRA's strength 0.8 -> 0.7: stage 1 still passes, stage 2 does not.
  parity::Report rep = run_edited("ltx2_two_stage.safetensors", [](auto&, auto& c) { c["distilled_lora"]["strength"] = 0.7; });
  EXPECT_EQ(row_status(rep, "output.stage1.video_latent"), parity::Comparison::Status::Ok);
  EXPECT_EQ(row_status(rep, "inter.upsampled"), parity::Comparison::Status::Ok);
  EXPECT_EQ(row_status(rep, "output.video_latent"), parity::Comparison::Status::Fail);
  EXPECT_FALSE(rep.ok());
  // No LoRA at all (strength 0): stage 2 is the base DiT.
  rep = run_edited("ltx2_two_stage.safetensors", [](auto&, auto& c) { c["distilled_lora"]["strength"] = 0.0; });
  EXPECT_EQ(row_status(rep, "output.video_latent"), parity::Comparison::Status::Fail);
  // One upsampler weight moved: the upsampled latent and everything after it fail.
  rep = run_edited("ltx2_distilled.safetensors", [](auto& t, auto&) {
    Tensor& w = t.at("upsampler.final_conv.bias");
    w = ops::add_scalar(w.to(DType::F32), 0.05).to(w.dtype());
  });
  EXPECT_EQ(row_status(rep, "output.stage1.video_latent"), parity::Comparison::Status::Ok);
  EXPECT_EQ(row_status(rep, "inter.upsampled"), parity::Comparison::Status::Fail);
  EXPECT_EQ(row_status(rep, "output.video_latent"), parity::Comparison::Status::Fail);
  // Another seed: the noise of both stages differs.
  rep = run_edited("ltx2_distilled.safetensors", [](auto&, auto& c) { c["seed"] = 6; });
  EXPECT_EQ(row_status(rep, "inter.stage1.noise.video"), parity::Comparison::Status::Fail);
  EXPECT_EQ(row_status(rep, "output.audio_latent"), parity::Comparison::Status::Fail);
}

// The golden's parts, to run denoise_two_stage by hand.
struct TwoStageRun {
  GoldenParams g;
  std::map<std::string, Tensor> dit_params;
  std::unique_ptr<L::LTXModel> dit;
  std::unique_ptr<L::LatentUpsampler> upsampler;
  std::optional<L::vae::PerChannelStatistics> stats;
  nn::Adapters lora;
  L::PromptContexts ctx;
  L::T2VRequest req;

  explicit TwoStageRun(const char* name) : g(load_golden(name)) {
    std::map<std::string, Tensor> up, st;
    translate::MemorySource lora_src("distilled_lora");
    for (const auto& [n, t] : g.params) {
      if (n.rfind("model.diffusion_model.", 0) == 0) dit_params[n.substr(22)] = t;
      if (n.rfind("upsampler.", 0) == 0) up[n.substr(10)] = t;
      if (n.rfind("vae.per_channel_statistics.", 0) == 0) st[n.substr(4)] = t;
      if (n.rfind("distilled_lora.", 0) == 0) lora_src.add(n.substr(15), t);
    }
    nn::ParamSource src = nn::ParamSource::from_map(dit_params, name);
    const L::DiTConfig cfg = L::DiTConfig::from_json(g.config.at("transformer"));
    dit = std::make_unique<L::LTXModel>(cfg, src, DType::F32);
    nn::ParamSource usrc = nn::ParamSource::from_map(up, name);
    upsampler = std::make_unique<L::LatentUpsampler>(L::UpsamplerConfig::from_json(g.config.at("upsampler")), usrc);
    stats = L::latent_statistics(st, name);
    if (g.config.contains("distilled_lora"))
      lora = L::lora_as_adapters(dit_params, L::dit_config_json(cfg), lora_src,
                                 g.config.at("distilled_lora").at("strength").get<double>(),
                                 L::linear_weight_names(*dit));
    ctx = {g.file.get("input.v_context_p"), g.file.get("input.a_context_p"), g.file.get("input.v_context_n"),
           g.file.get("input.a_context_n")};
    req = L::T2VRequest::from_json(g.config);
  }
  L::TwoStageParts parts() {
    L::TwoStageParts p;
    p.dit = dit.get();
    p.stage2_lora = lora.empty() ? nullptr : &lora;
    p.upsampler = upsampler.get();
    p.stats = &*stats;
    return p;
  }
  size_t adapters_on_the_dit() {
    size_t n = 0;
    dit->for_each_linear([&](const std::string&, nn::Linear& l) { n += l.adapters.size(); });
    return n;
  }
};

TEST(Ltx2TwoStage, TheStage2LoraIsPatchedInForTheStageAndOutAfter) {
  TwoStageRun run("ltx2_two_stage.safetensors");
  ASSERT_FALSE(run.lora.empty());
  EXPECT_EQ(run.adapters_on_the_dit(), 0u);
  // One DiT forward before any run, to compare with after.
  L::T2VRequest r1 = L::stage1_request(run.req);
  TorchGenerator g0(1);
  const L::T2VLatents before = L::denoise_t2v(*run.dit, r1, run.ctx, g0);
  {
    L::StageLora patch(*run.dit, run.lora);
    EXPECT_EQ(patch.patched(), run.lora.size());
    EXPECT_EQ(run.adapters_on_the_dit(), run.lora.size());  // one rank-4 adapter per target
    TorchGenerator g1(1);
    const L::T2VLatents with = L::denoise_t2v(*run.dit, r1, run.ctx, g1);
    EXPECT_GT(max_abs_diff(before.video, with.video), 1e-3);  // the LoRA changes the DiT
  }
  EXPECT_EQ(run.adapters_on_the_dit(), 0u);
  TorchGenerator gen(run.req.seed);
  const L::TwoStageLatents lat = L::denoise_two_stage(run.parts(), L::TwoStageKind::TwoStage, run.req, run.ctx, gen);
  EXPECT_EQ(run.adapters_on_the_dit(), 0u);  // patched out after stage 2
  TorchGenerator g2(1);
  const L::T2VLatents after = L::denoise_t2v(*run.dit, r1, run.ctx, g2);
  EXPECT_EQ(max_abs_diff(before.video, after.video), 0.0);
  EXPECT_EQ(max_abs_diff(before.audio, after.audio), 0.0);
  // The pipeline's audio is stage 1's (TwoStages discards stage 2's audio).
  EXPECT_EQ(max_abs_diff(lat.stage1.audio, lat.audio), 0.0);
  EXPECT_GT(max_abs_diff(lat.stage2.audio, lat.audio), 1e-4);
  EXPECT_LE(max_abs_diff(run.g.file.get("output.video_latent"), lat.video), 2e-5);
  // The LoRA is patched out even when stage 2 throws (a step callback that stops the run).
  TorchGenerator g3(run.req.seed);
  expect_error(
      [&] {
        L::denoise_two_stage(run.parts(), L::TwoStageKind::TwoStage, run.req, run.ctx, g3, {}, {}, false,
                             [](int64_t done, int64_t total) {
                               EXPECT_EQ(total, 2 + 3);
                               if (done == 3) throw Error("stopped in stage 2");
                             });
      },
      "stopped in stage 2");
  EXPECT_EQ(run.adapters_on_the_dit(), 0u);
}

TEST(Ltx2TwoStage, DistilledRunsWithoutGuidanceOrLora) {
  TwoStageRun run("ltx2_distilled.safetensors");
  EXPECT_TRUE(run.lora.empty());
  // No negative context is needed (SimpleDenoiser), and the guiders are not read.
  run.ctx.v_context_n = Tensor();
  run.ctx.a_context_n = Tensor();
  run.req.video_guider.cfg_scale = 5.0;
  TorchGenerator gen(run.req.seed);
  const L::TwoStageLatents lat = L::denoise_two_stage(run.parts(), L::TwoStageKind::Distilled, run.req, run.ctx, gen);
  EXPECT_LE(max_abs_diff(run.g.file.get("output.video_latent"), lat.video), 2e-5);
  EXPECT_LE(max_abs_diff(run.g.file.get("output.audio_latent"), lat.audio), 2e-5);
  EXPECT_EQ(lat.stage1.sigmas, L::distilled_stage1_sigmas());
  EXPECT_EQ(lat.stage2.sigmas, L::stage2_sigmas());
  EXPECT_EQ(max_abs_diff(lat.stage2.audio, lat.audio), 0.0);  // Distilled keeps stage 2's audio
  // TwoStage without its LoRA is refused.
  TorchGenerator g2(run.req.seed);
  expect_error([&] { L::denoise_two_stage(run.parts(), L::TwoStageKind::TwoStage, run.req, run.ctx, g2); },
               "distilled LoRA");
}

TEST(Ltx2TwoStage, StageOptionsAndRequestsAreChecked) {
  TwoStageRun run("ltx2_distilled.safetensors");
  L::T2VRequest r = run.req;
  // assert_resolution(is_two_stage=True): multiples of 64, nearest named.
  r.width = 96;
  expect_error([&] { L::check_two_stage_request(r); }, "nearest valid: height 64, width 64 or 128");
  r = run.req;
  r.height = 32;
  expect_error([&] { L::check_two_stage_request(r); }, "multiples of 64");
  r = run.req;
  r.num_frames = 10;
  expect_error([&] { L::check_two_stage_request(r); }, "nearest valid: 9 or 17");
  // A sigma table that does not decrease to 0, an initial latent of another grid.
  L::StageOptions o;
  o.sigmas = {0.9f, 0.95f, 0.0f};
  o.guided = false;
  TorchGenerator gen(1);
  const L::T2VRequest r1 = L::stage1_request(run.req);
  expect_error([&] { L::denoise_stage(*run.dit, r1, run.ctx, gen, o); }, "strictly decreasing to a last 0");
  o.sigmas = {0.9f, 0.5f};
  expect_error([&] { L::denoise_stage(*run.dit, r1, run.ctx, gen, o); }, "strictly decreasing to a last 0");
  o.sigmas = L::stage2_sigmas();
  o.initial_video = Tensor::zeros({1, 128, 2, 2, 2}, DType::F32);  // stage 1's grid is 2 x 1 x 1
  expect_error([&] { L::denoise_stage(*run.dit, r1, run.ctx, gen, o); }, "initial video latent");
  // noise_scale 0 with an initial latent: the stage starts from the latent itself.
  o.initial_video = Tensor();
  o.initial_audio = Tensor::full({1, 8, L::latent_grid(r1).audio_frames, 16}, 0.25f, DType::F32);
  o.audio_noise_scale = 0.0;
  TorchGenerator g2(1);
  const L::T2VLatents s = L::denoise_stage(*run.dit, r1, run.ctx, g2, o);
  for (float v : s.audio_noise.to_f32_vector()) ASSERT_EQ(v, 0.25f);
  // A LoRA target that is no Linear's weight is refused by name.
  translate::MemorySource bad("bad_lora");
  bad.add("diffusion_model.transformer_blocks.0.scale_shift_table.diff", Tensor::zeros({6, 32}, DType::F32));
  const L::DiTConfig cfg = L::DiTConfig::from_json(run.g.config.at("transformer"));
  expect_error(
      [&] { L::lora_as_adapters(run.dit_params, L::dit_config_json(cfg), bad, 1.0, L::linear_weight_names(*run.dit)); },
      "no Linear's weight");
}

}  // namespace
}  // namespace vidax::test::ltx2
