// The LTX-2 one-stage text-to-video+audio pipeline (models/ltx2/t2v.h, guidance.h, kind
// ltx2.pipeline.t2v) against the official TI2VidOneStagePipeline.__call__ pieces
// (tools/golden/ltx2_pipeline_t2v.py): the CFG run with the decoders, the STG + modality + rescale +
// skip_step run; controls (guidance scale, seed), the guidance passes, and bad requests.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <functional>

#include "backend/ops.h"
#include "ltx2_golden.h"
#include "models/ltx2/dit.h"
#include "models/ltx2/guidance.h"
#include "models/ltx2/t2v.h"
#include "models/ltx2/video_vae.h"

namespace vidax::test::ltx2 {
namespace {

using vidax::ltx2::GuiderParams;
using vidax::ltx2::Pass;

// The golden's DiT (model.diffusion_model.*) and contexts, to run denoise_t2v with other requests.
struct PipelineRun {
  GoldenParams g;
  std::unique_ptr<vidax::ltx2::LTXModel> dit;
  vidax::ltx2::PromptContexts ctx;
  vidax::ltx2::T2VRequest req;

  explicit PipelineRun(const char* name) : g(load_golden(name)) {
    std::map<std::string, Tensor> p;
    const std::string pre = "model.diffusion_model.";
    for (const auto& [n, t] : g.params)
      if (n.rfind(pre, 0) == 0) p[n.substr(pre.size())] = t;
    nn::ParamSource src = nn::ParamSource::from_map(std::move(p), name);
    dit = std::make_unique<vidax::ltx2::LTXModel>(vidax::ltx2::DiTConfig::from_json(g.config.at("transformer")), src,
                                                  DType::F32);
    src.expect_all_taken();
    ctx = {g.file.get("input.v_context_p"), g.file.get("input.a_context_p"), g.file.get("input.v_context_n"),
           g.file.get("input.a_context_n")};
    req = vidax::ltx2::T2VRequest::from_json(g.config);
  }
  vidax::ltx2::T2VLatents denoise(const vidax::ltx2::T2VRequest& r, bool keep_steps = false) const {
    TorchGenerator gen(r.seed);
    return vidax::ltx2::denoise_t2v(*dit, r, ctx, gen, keep_steps);
  }
  Tensor want(const char* name) const { return g.file.get(name); }
};

// The file through the kind at the default fp32 bound (rel L2 1e-5), then per row: the noise and the
// sigmas exact; the latents (and the per-step taps) max abs <= 2e-5: the guidance multiplies the DiT's
// fp32 differences (about 3e-6 per pass at these magnitudes, |x0| up to ~10) by up to
// cfg + stg + modality - 1; the decoded video and audio max abs <= 1e-6.
parity::Report expect_pipeline_rows(const char* name) {
  engine::register_builtins();
  const parity::Report rep = parity::run(golden(name), parity::Options{});
  for (const auto& c : rep.rows) {
    std::printf("  %s %-32s max_abs=%.3g rel_l2=%.3g\n", name, c.name.c_str(), c.max_abs, c.rel_l2);
    EXPECT_EQ(c.status, parity::Comparison::Status::Ok) << c.name << " " << c.note;
    if (c.name.rfind("inter.noise", 0) == 0 || c.name == "inter.sigmas")
      EXPECT_EQ(c.max_abs, 0.0) << c.name;
    else if (c.name == "output.video" || c.name == "output.audio")
      EXPECT_LE(c.max_abs, 1e-6) << c.name;
    else
      EXPECT_LE(c.max_abs, 2e-5) << c.name;
  }
  EXPECT_TRUE(rep.ok()) << rep.passed << "/" << rep.compared;
  return rep;
}

TEST(Ltx2PipelineGolden, CfgRunWithDecodersMatchesTheReference) {
  const parity::Report rep = expect_pipeline_rows("ltx2_pipeline_t2v.safetensors");
  EXPECT_EQ(rep.compared, 2 + 2 + 3 + 2 * 6);  // latents, video + audio, sigmas + 2 noises, 2 steps x 6 taps
}

TEST(Ltx2PipelineGolden, StgModalityRescaleSkipStepMatchesTheReference) {
  const parity::Report rep = expect_pipeline_rows("ltx2_pipeline_t2v_guided.safetensors");
  EXPECT_EQ(rep.compared, 2 + 3 + 3 * 6);  // latents only (no decoders in the config)
}

TEST(Ltx2PipelineGolden, EachDecoderIsReadFromTheFile) {
  using Status = parity::Comparison::Status;
  // The audio decoder's one statistic (ch = 1) applies to every value: scaling it moves the waveform only.
  parity::Report rep = run_edited("ltx2_pipeline_t2v.safetensors", [](auto& t, auto&) {
    Tensor& s = t.at("audio_vae.per_channel_statistics.std-of-means");
    s = ops::scale(s, 1.5);
  });
  EXPECT_EQ(row_status(rep, "output.audio"), Status::Fail);
  EXPECT_EQ(row_status(rep, "output.video"), Status::Ok);
  EXPECT_EQ(row_status(rep, "output.audio_latent"), Status::Ok);
  // A video decoder parameter moves the video alone.
  rep = run_edited("ltx2_pipeline_t2v.safetensors", [](auto& t, auto&) {
    Tensor& b = t.at("vae.decoder.conv_out.conv.bias");
    b = ops::add_scalar(b, 0.05);
  });
  EXPECT_EQ(row_status(rep, "output.video"), Status::Fail);
  EXPECT_EQ(row_status(rep, "output.video_latent"), Status::Ok);
  // The video guider's cfg from the config is the one that runs.
  rep =
      run_edited("ltx2_pipeline_t2v.safetensors", [](auto&, auto& c) { c["video_guider_params"]["cfg_scale"] = 2.0; });
  EXPECT_EQ(row_status(rep, "output.video_latent"), Status::Fail);
  EXPECT_EQ(row_status(rep, "inter.noise.video"), Status::Ok);
}

TEST(Ltx2PipelineGolden, TheVideoDecodeContinuesTheNoiseGenerator) {
  // decode_video gets the generator the noiser drew the video, then the audio noise from: the
  // conditioned decoder's draws follow those. From a fresh generator the video differs.
  const GoldenParams g = load_golden("ltx2_pipeline_t2v.safetensors");
  std::map<std::string, Tensor> p;
  for (const auto& [n, t] : g.params) {
    if (n.rfind("vae.decoder.", 0) == 0)
      p[n.substr(12)] = t;
    else if (n.rfind("vae.per_channel_statistics.", 0) == 0)
      p[n.substr(4)] = t;
  }
  nn::ParamSource src = nn::ParamSource::from_map(std::move(p), "vae");
  const vidax::ltx2::VideoDecoder dec(vidax::ltx2::VideoVaeConfig::from_json(g.config.at("vae")), src);
  src.expect_all_taken();
  ASSERT_TRUE(dec.uses_noise());
  const Tensor latent = g.file.get("output.video_latent");
  auto decode = [&](TorchGenerator& gen) {
    vidax::ltx2::DecoderConditioning cond;
    cond.generator = &gen;
    const Tensor v = dec.forward(latent, {}, cond).select(0, 0).permute({1, 2, 3, 0}).contiguous();
    return ops::clamp(ops::scale(ops::add_scalar(v, 1.0), 0.5), 0.0, 1.0);
  };
  const uint64_t seed = g.config.at("seed").get<uint64_t>();
  TorchGenerator continued(seed);
  continued.randn(g.file.get("inter.noise.video").shape());
  continued.randn(g.file.get("inter.noise.audio").shape());
  EXPECT_LE(max_abs_diff(g.file.get("output.video"), decode(continued)), 1e-6);
  TorchGenerator fresh(seed);
  EXPECT_GT(max_abs_diff(g.file.get("output.video"), decode(fresh)), 1e-3);
}

TEST(Ltx2PipelineGolden, BadFilesAreErrors) {
  expect_error([] { run_edited("ltx2_pipeline_t2v.safetensors", [](auto&, auto& c) { c["num_frames"] = 10; }); },
               "nearest valid: 9 or 17");
  expect_error([] { run_edited("ltx2_pipeline_t2v.safetensors", [](auto&, auto& c) { c["width"] = 80; }); },
               "width 64 or 96");
  expect_error([] { run_edited("ltx2_pipeline_t2v.safetensors", [](auto&, auto& c) { c.erase("vocoder"); }); },
               "all of \"vae\", \"audio_vae\" and \"vocoder\"");
  expect_error(
      [] { run_edited("ltx2_pipeline_t2v.safetensors", [](auto&, auto& c) { c["vocoder"].erase("stereo"); }); },
      "stereo");
  expect_error(
      [] {
        run_edited("ltx2_pipeline_t2v_guided.safetensors",
                   [](auto& t, auto&) { t["text_encoder.weight"] = Tensor::zeros({2}, DType::F32); });
      },
      "belongs to no part");
  expect_error(
      [] { run_edited("ltx2_pipeline_t2v_guided.safetensors", [](auto& t, auto&) { t.erase("input.a_context_n"); }); },
      "a_context_n");
  expect_error(
      [] {
        run_edited("ltx2_pipeline_t2v_guided.safetensors",
                   [](auto& t, auto&) { t.erase("model.diffusion_model.proj_out.bias"); });
      },
      "proj_out.bias");
}

TEST(Ltx2Pipeline, SkipStepReusesTheDenoisedAudio) {
  // The guided golden's audio guider has skip_step 1: step 1 reuses step 0's denoised audio.
  const PipelineRun run("ltx2_pipeline_t2v_guided.safetensors");
  ASSERT_EQ(run.req.audio_guider.skip_step, 1);
  EXPECT_EQ(max_abs_diff(run.want("inter.step0.audio_denoised"), run.want("inter.step1.audio_denoised")), 0.0);
  const vidax::ltx2::T2VLatents got = run.denoise(run.req, /*keep_steps=*/true);
  ASSERT_EQ(got.steps.size(), 3u);
  EXPECT_EQ(max_abs_diff(got.steps[0].audio_denoised, got.steps[1].audio_denoised), 0.0);
  EXPECT_GT(max_abs_diff(got.steps[1].audio_denoised, got.steps[2].audio_denoised), 1e-3);
  // Without the skip, step 1 runs the audio guider again and the result moves.
  vidax::ltx2::T2VRequest r = run.req;
  r.audio_guider.skip_step = 0;
  EXPECT_GT(max_abs_diff(run.want("output.audio_latent"), run.denoise(r).audio), 1e-3);
}

TEST(Ltx2Pipeline, ControlsMoveTheOutput) {
  const PipelineRun run("ltx2_pipeline_t2v.safetensors");
  const vidax::ltx2::T2VLatents base = run.denoise(run.req);
  EXPECT_LE(max_abs_diff(run.want("output.video_latent"), base.video), 2e-5);
  EXPECT_LE(max_abs_diff(run.want("output.audio_latent"), base.audio), 2e-5);

  vidax::ltx2::T2VRequest r = run.req;
  r.video_guider.cfg_scale += 1.0;  // another video guidance scale: the video moves (and, through A2V/V2A, audio)
  vidax::ltx2::T2VLatents got = run.denoise(r);
  EXPECT_GT(max_abs_diff(base.video, got.video), 1e-3);

  r = run.req;
  r.audio_guider.cfg_scale = 1.0;  // no audio CFG: the audio moves
  got = run.denoise(r);
  EXPECT_GT(max_abs_diff(base.audio, got.audio), 1e-3);

  r = run.req;
  r.seed += 1;  // another seed: other noise, other latents
  got = run.denoise(r);
  EXPECT_GT(max_abs_diff(base.video, got.video), 1e-2);
  EXPECT_GT(max_abs_diff(base.audio, got.audio), 1e-2);

  // The negative prompt matters (CFG reads it).
  PipelineRun swapped("ltx2_pipeline_t2v.safetensors");
  swapped.ctx.v_context_n = swapped.ctx.v_context_p;
  got = swapped.denoise(swapped.req);
  EXPECT_GT(max_abs_diff(base.video, got.video), 1e-3);
}

TEST(Ltx2Pipeline, PassesAndPerturbationMasks) {
  GuiderParams v, a;
  EXPECT_EQ(vidax::ltx2::guidance_passes(v, a), std::vector<Pass>{Pass::Cond});
  a.cfg_scale = 2.0;
  v.stg_scale = 1.0;
  v.stg_blocks = std::vector<int64_t>{1};
  a.modality_scale = 3.0;
  const std::vector<Pass> passes = vidax::ltx2::guidance_passes(v, a);
  ASSERT_EQ(passes, (std::vector<Pass>{Pass::Cond, Pass::Uncond, Pass::Perturbed, Pass::Modality}));
  const std::vector<float> m = vidax::ltx2::perturbation_masks(passes, v, a, 2, 1).to_f32_vector();
  ASSERT_EQ(m.size(), 4u * 2 * 4);
  auto keep = [&](int type, int block, int pass) { return m[(type * 2 + block) * 4 + pass]; };
  EXPECT_EQ(keep(0, 0, 2), 1.0f);  // video self-attention kept in block 0 of the STG pass
  EXPECT_EQ(keep(0, 1, 2), 0.0f);  // skipped in block 1
  EXPECT_EQ(keep(1, 1, 2), 1.0f);  // audio stg_scale 0: its self-attention is never skipped
  EXPECT_EQ(keep(2, 0, 3), 0.0f);  // the modality pass skips A2V and V2A everywhere
  EXPECT_EQ(keep(3, 1, 3), 0.0f);
  EXPECT_EQ(keep(2, 0, 0), 1.0f);
  v.stg_blocks = std::nullopt;  // None: every block
  EXPECT_EQ(vidax::ltx2::perturbation_masks(passes, v, a, 2, 1).to_f32_vector()[(0 * 2 + 0) * 4 + 2], 0.0f);
  GuiderParams s;
  s.skip_step = 2;
  EXPECT_FALSE(s.should_skip_step(0));
  EXPECT_TRUE(s.should_skip_step(1));
  EXPECT_TRUE(s.should_skip_step(2));
  EXPECT_FALSE(s.should_skip_step(3));
}

TEST(Ltx2Pipeline, GuideIsTheGuidersFormula) {
  const Tensor cond = Tensor::from_f32({1, 2, 3, 4}, {1, 4});
  const Tensor uncond = Tensor::from_f32({0, 1, 1, 1}, {1, 4});
  GuiderParams p;
  p.cfg_scale = 3.0;
  p.stg_scale = 0.5;  // no STG pass given: (cond - 0.0)
  const std::vector<float> got = vidax::ltx2::guide(p, cond, &uncond, nullptr, nullptr).to_f32_vector();
  const std::vector<float> c{1, 2, 3, 4}, u{0, 1, 1, 1};
  for (size_t i = 0; i < 4; ++i) EXPECT_FLOAT_EQ(got[i], c[i] + 2.0f * (c[i] - u[i]) + 0.5f * c[i]);
  p.rescale_scale = 1.0;  // full rescale: the prediction gets cond's std
  const std::vector<float> r = vidax::ltx2::guide(p, cond, &uncond, nullptr, nullptr).to_f32_vector();
  auto std_of = [](const std::vector<float>& v) {
    double m = 0, s = 0;
    for (float x : v) m += x;
    m /= v.size();
    for (float x : v) s += (x - m) * (x - m);
    return std::sqrt(s / (v.size() - 1));
  };
  EXPECT_NEAR(std_of(r), std_of(c), 1e-5);
}

TEST(Ltx2Pipeline, BadRequestsNameTheNearestValidValues) {
  vidax::ltx2::T2VRequest r;
  r.height = 64;
  r.width = 64;
  r.num_frames = 9;
  r.frame_rate = 24;
  r.num_inference_steps = 2;
  EXPECT_NO_THROW(vidax::ltx2::check_t2v_request(r));
  r.num_frames = 10;
  expect_error([&] { vidax::ltx2::check_t2v_request(r); }, "nearest valid: 9 or 17");
  r.num_frames = 0;
  expect_error([&] { vidax::ltx2::check_t2v_request(r); }, "8k + 1");
  r.num_frames = 9;
  r.height = 48;
  expect_error([&] { vidax::ltx2::check_t2v_request(r); }, "height 32 or 64");
  r.height = 64;
  r.width = 100;
  expect_error([&] { vidax::ltx2::check_t2v_request(r); }, "width 96 or 128");
  r.width = 64;
  r.frame_rate = 0;
  expect_error([&] { vidax::ltx2::check_t2v_request(r); }, "frame_rate");
  r.frame_rate = 24;
  r.num_inference_steps = 0;
  expect_error([&] { vidax::ltx2::check_t2v_request(r); }, "num_inference_steps");

  // The latent grid as the reference computes it: 121 frames at 24 fps -> 16 latent frames,
  // round(121 / 24 * 25) = 126 audio frames; 512 x 768 -> 16 x 24.
  r = {};
  r.height = 512;
  r.width = 768;
  r.num_frames = 121;
  r.frame_rate = 24;
  r.num_inference_steps = 1;
  const vidax::ltx2::LatentGrid g = vidax::ltx2::latent_grid(r);
  EXPECT_EQ(g.video_frames, 16);
  EXPECT_EQ(g.video_height, 16);
  EXPECT_EQ(g.video_width, 24);
  EXPECT_EQ(g.audio_frames, 126);

  // Bad inputs to the run itself.
  const PipelineRun run("ltx2_pipeline_t2v.safetensors");
  vidax::ltx2::PromptContexts c = run.ctx;
  c.v_context_n = run.ctx.v_context_n.slice(1, 0, 3).contiguous();
  TorchGenerator gen(0);
  expect_error([&] { vidax::ltx2::denoise_t2v(*run.dit, run.req, c, gen); }, "same shape");
  c = run.ctx;
  c.a_context_p = Tensor();
  expect_error([&] { vidax::ltx2::denoise_t2v(*run.dit, run.req, c, gen); }, "a_context_p");
  c = run.ctx;
  c.v_context_n = Tensor();  // the video guider's cfg 3 needs it
  expect_error([&] { vidax::ltx2::denoise_t2v(*run.dit, run.req, c, gen); }, "negative video context");
  // Without video CFG the positive video context stands in for the uncond pass the audio CFG runs.
  vidax::ltx2::T2VRequest no_vcfg = run.req;
  no_vcfg.video_guider.cfg_scale = 1.0;
  vidax::ltx2::PromptContexts positive_as_negative = run.ctx;
  positive_as_negative.v_context_n = run.ctx.v_context_p;
  TorchGenerator g1(no_vcfg.seed), g2(no_vcfg.seed);
  const vidax::ltx2::T2VLatents stand_in = vidax::ltx2::denoise_t2v(*run.dit, no_vcfg, positive_as_negative, g1);
  const vidax::ltx2::T2VLatents missing = vidax::ltx2::denoise_t2v(*run.dit, no_vcfg, c, g2);
  EXPECT_EQ(max_abs_diff(stand_in.video, missing.video), 0.0);
  EXPECT_EQ(max_abs_diff(stand_in.audio, missing.audio), 0.0);
  vidax::ltx2::T2VRequest bad = run.req;
  bad.num_frames = 8;
  expect_error([&] { vidax::ltx2::denoise_t2v(*run.dit, bad, run.ctx, gen); }, "nearest valid: 1 or 9");
  expect_error([] { GuiderParams::from_json({{"cfg", 2.0}}); }, "unknown field 'cfg'");
}

}  // namespace
}  // namespace vidax::test::ltx2
