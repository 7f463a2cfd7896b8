// The T2V loop on stand-in parts (a DiT whose output is a known constant per
// context), so each assertion checks the pipeline's own arithmetic and
// control flow: CFG order and formula, noise, sampler use, NaN stop, Ctrl-C
// stop, warnings, and the validation messages.
#include <gtest/gtest.h>

#include "error_of.h"
#include <unistd.h>

#include <cmath>
#include <csignal>
#include <limits>

#include "core/error.h"
#include "core/rng.h"
#include "pipeline/interrupt.h"
#include "pipeline/generate.h"
#include "pipeline/residency.h"

using namespace vidax;
using namespace vidax::pipeline;

namespace {

// cond context = 1s, uncond = 0s; the stand-in DiT returns (context value + 0.5)
// everywhere, so v_cond = 1.5, v_uncond = 0.5, and records its calls.
struct StandIn {
  std::vector<std::pair<double, float>> calls;  // (t, context value)
  std::vector<Tensor> inputs;
  std::vector<double> embedded;  // the embedded guidance each call got
  int nan_at_call = -1;
  bool truncate = false;

  Parts parts() {
    Parts p;
    p.geometry.vae_label = "the Wan VAE";  // the stand-in has Wan's geometry (the defaults)
    p.encode_prompt = [this](const std::string& s) {
      EncodedPrompt e;
      e.context = Tensor::full({3, 8}, s == "cond" ? 1.0 : 0.0, DType::F32);
      e.truncated = truncate && s == "cond";
      return e;
    };
    p.predict = [this](const DenoiseInput& in) {
      const Tensor& x = in.x;
      const float c = in.prompt.context.to_f32_vector()[0];
      calls.push_back({in.t, c});
      embedded.push_back(in.embedded_guidance);
      inputs.push_back(x.clone());
      const bool nan = static_cast<int>(calls.size()) == nan_at_call;
      return Tensor::full(x.shape(), nan ? std::numeric_limits<double>::quiet_NaN() : c + 0.5, DType::F32);
    };
    p.decode = [](const Tensor& z, const Parts::DecodeProgress&) {
      return Tensor::zeros({3, 1 + 4 * (z.size(1) - 1), z.size(2) * 8, z.size(3) * 8}, DType::F32);
    };
    return p;
  }
};

Request small_request() {
  Request r;
  r.prompt = "cond";
  r.negative_prompt = "uncond";
  r.frames = 5;
  r.height = 32;
  r.width = 48;
  r.steps = 1;
  r.seed = 7;
  r.guidance = 5.0;
  r.shift = 1.0;
  r.sampler = "euler";
  return r;
}

}  // namespace

using test::error_of;

TEST(Generate, GuidanceCondThenUncondAndOneEulerStep) {
  StandIn m;
  Request r = small_request();
  Result res = run_generation(m.parts(), r);
  // Reference order: the prompt first, then the negative prompt, at the same t.
  ASSERT_EQ(m.calls.size(), 2u);
  EXPECT_EQ(m.calls[0].second, 1.0f);
  EXPECT_EQ(m.calls[1].second, 0.0f);
  EXPECT_EQ(m.calls[0].first, m.calls[1].first);
  EXPECT_EQ(m.calls[0].first, 1000.0);  // euler, shift 1: sigma 1 -> t = 1000
  // The noise is torch.manual_seed(7); torch.randn([16, 2, 4, 6]).
  const Shape shape{16, 2, 4, 6};
  EXPECT_EQ(latent_shape(m.parts().geometry, r), shape);
  TorchGenerator g(7);
  const std::vector<float> noise = g.randn(shape).to_f32_vector();
  EXPECT_EQ(m.inputs[0].to_f32_vector(), noise);
  // v = 0.5 + 5 * (1.5 - 0.5) = 5.5; euler from sigma 1 to 0: x = x0 + (0 - 1) * v.
  const std::vector<float> x = res.latents.to_f32_vector();
  ASSERT_EQ(x.size(), noise.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], noise[i] - 5.5f) << i;
  EXPECT_EQ(res.video.shape(), (Shape{3, 5, 32, 48}));
}

TEST(Generate, SameSeedSameNoiseOtherSeedOther) {
  StandIn a, b, c;
  Request r = small_request();
  run_generation(a.parts(), r);
  run_generation(b.parts(), r);
  r.seed = 8;
  run_generation(c.parts(), r);
  EXPECT_EQ(a.inputs[0].to_f32_vector(), b.inputs[0].to_f32_vector());
  EXPECT_NE(a.inputs[0].to_f32_vector(), c.inputs[0].to_f32_vector());
}

TEST(Generate, GivenNoiseIsUsed) {
  StandIn m;
  Request r = small_request();
  r.noise = Tensor::full({16, 2, 4, 6}, 0.25, DType::F32);
  run_generation(m.parts(), r);
  for (float v : m.inputs[0].to_f32_vector()) ASSERT_EQ(v, 0.25f);
  r.noise = Tensor::full({16, 2, 4, 8}, 0.25, DType::F32);
  const std::string e = error_of([&] { run_generation(m.parts(), r); });
  EXPECT_NE(e.find("noise F32[16, 2, 4, 8] does not fit the request: 5 frames of 48x32 need [16, 2, 4, 6]"),
            std::string::npos) << e;
}

TEST(Generate, EmptyNegativePromptMeansTheDefault) {
  StandIn m;
  Request r = small_request();
  r.negative_prompt = "";
  r.default_negative_prompt = "uncond";
  Result res = run_generation(m.parts(), r);
  EXPECT_EQ(res.negative_prompt, "uncond");
  EXPECT_EQ(m.calls[1].second, 0.0f);
}

TEST(Generate, NanStopsWithTheStep) {
  StandIn m;
  m.nan_at_call = 4;  // step 2's uncond pass
  Request r = small_request();
  r.steps = 3;
  const std::string e = error_of([&] { run_generation(m.parts(), r); });
  EXPECT_NE(e.find("the DiT output for the negative prompt contains NaN or Inf at denoising step 2/3"),
            std::string::npos) << e;
  EXPECT_EQ(m.calls.size(), 4u);  // nothing ran after it
}

TEST(Generate, CtrlCStopsBetweenSteps) {
  StandIn m;
  Request r = small_request();
  r.steps = 3;
  Events ev;
  ev.on_step = [](int done, int, double) {
    if (done == 1) request_interrupt_for_testing(SIGINT);
  };
  try {
    run_generation(m.parts(), r, ev);
    FAIL() << "no stop";
  } catch (const Interrupted& e) {
    EXPECT_EQ(std::string(e.what()), "stopped by SIGINT (Ctrl-C) during denoising step 1/3; no output was written");
  }
  clear_interrupt();
  EXPECT_EQ(m.calls.size(), 2u);
}

// A server's cancel: Events::cancelled stops the run at the next step boundary with Cancelled
// (not Interrupted, not a plain failure), runs nothing after it, and leaves the process-wide
// interrupt flag alone.
TEST(Generate, CancelledHookStopsAtTheNextStepBoundary) {
  StandIn m;
  Request r = small_request();
  r.steps = 4;
  int steps_seen = 0;
  Events ev;
  ev.on_step = [&](int done, int, double) { steps_seen = done; };
  ev.cancelled = [&] { return steps_seen >= 2; };
  bool decoded = false;
  Parts p = m.parts();
  auto decode = p.decode;
  p.decode = [&](const Tensor& z, const Parts::DecodeProgress& progress) {
    decoded = true;
    return decode(z, progress);
  };
  try {
    run_generation(p, r, ev);
    FAIL() << "no stop";
  } catch (const Interrupted&) {
    FAIL() << "a cancel is not a signal";
  } catch (const Cancelled& e) {
    EXPECT_EQ(std::string(e.what()), "cancelled during denoising step 2/4");
  }
  EXPECT_EQ(steps_seen, 2);
  EXPECT_EQ(m.calls.size(), 4u);  // two guided steps of two passes each, then nothing
  EXPECT_FALSE(decoded);
  EXPECT_FALSE(interrupt_requested());
  // Cancelled before the first step: no denoiser call at all.
  StandIn m2;
  Events ev2;
  ev2.cancelled = [] { return true; };
  EXPECT_EQ(error_of([&] { run_generation(m2.parts(), r, ev2); }), "cancelled during prompt encoding");
  EXPECT_TRUE(m2.calls.empty());
}

TEST(Generate, OverlongPromptWarns) {
  StandIn m;
  m.truncate = true;
  std::vector<std::string> warnings;
  Events ev;
  ev.warn = [&](const std::string& w) { warnings.push_back(w); };
  run_generation(m.parts(), small_request(), ev);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "the prompt is longer than 512 tokens; it was truncated to that length (as the reference does)");
}

TEST(Generate, BadRequestsHaveClearMessages) {
  Geometry g;
  g.vae_label = "the Wan VAE";
  auto check = [&](std::function<void(Request&)> edit, const std::string& expected) {
    Request r = small_request();
    edit(r);
    const std::string e = error_of([&] { validate_request(g, r); });
    EXPECT_NE(e.find(expected), std::string::npos) << "got: " << e;
  };
  check([](Request& r) { r.frames = 80; }, "--frames 80: the Wan VAE needs 4k+1 frames (e.g. 77 or 81)");
  check([](Request& r) { r.frames = 0; }, "--frames 0: the Wan VAE needs 4k+1 frames");
  check([](Request& r) { r.height = 100; },
        "--height 100: must be a positive multiple of 16 (VAE stride 8 x patch 2); nearest: 96 or 112");
  check([](Request& r) { r.width = 8; }, "--width 8: must be a positive multiple of 16");
  check([](Request& r) { r.steps = 0; }, "--steps 0: must be 1..1000");
  check([](Request& r) { r.shift = 0; }, "--shift 0: must be a positive number");
  check([](Request& r) { r.guidance = std::nan(""); }, "--guidance nan: must be a finite number");
  check([](Request& r) { r.sampler = "ddim"; }, "--sampler ddim: unknown; choose one of unipc, dpm++, euler");
}


// --guidance 1: v_uncond + 1 * (v_cond - v_uncond) is v_cond, so the unconditional
// pass (and the negative prompt's encoding) is skipped: one forward per step.
TEST(Generate, GuidanceOneRunsOneForwardPerStep) {
  StandIn m;
  Request r = small_request();
  r.steps = 3;
  r.guidance = 1.0;
  Result res = run_generation(m.parts(), r);
  ASSERT_EQ(m.calls.size(), 3u);
  EXPECT_EQ(res.denoiser_calls, 3);
  for (const auto& c : m.calls) EXPECT_EQ(c.second, 1.0f);  // every call is the prompt's
  EXPECT_EQ(res.negative_prompt, "");                      // nothing was encoded for it

  StandIn cfg;
  r.guidance = 5.0;
  res = run_generation(cfg.parts(), r);
  EXPECT_EQ(cfg.calls.size(), 6u);
  EXPECT_EQ(res.denoiser_calls, 6);
}

TEST(Generate, GuidanceOneGivesTheConditionalPrediction) {
  // One Euler step from sigma 1 to 0 with v = v_cond = 1.5.
  StandIn m;
  Request r = small_request();
  r.guidance = 1.0;
  Result res = run_generation(m.parts(), r);
  TorchGenerator g(7);
  const std::vector<float> noise = g.randn({16, 2, 4, 6}).to_f32_vector();
  const std::vector<float> x = res.latents.to_f32_vector();
  ASSERT_EQ(x.size(), noise.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], noise[i] - 1.5f) << i;
}

TEST(Generate, TruncatedCfgGuidesOnlyItsSteps) {
  StandIn m;
  Request r = small_request();
  r.steps = 4;
  r.cfg_from_step = 1;
  r.cfg_to_step = 3;
  Result res = run_generation(m.parts(), r);
  // steps 0 and 3 one pass, steps 1 and 2 two passes.
  EXPECT_EQ(res.denoiser_calls, 6);
  ASSERT_EQ(m.calls.size(), 6u);
  const std::vector<float> ctx{1, 1, 0, 1, 0, 1};
  for (size_t i = 0; i < ctx.size(); ++i) EXPECT_EQ(m.calls[i].second, ctx[i]) << i;
  r.cfg_to_step = 1;
  EXPECT_NE(error_of([&] { validate_request(Geometry{}, r); }).find("guidance step range [1, 1) is empty"),
            std::string::npos);
}

TEST(Generate, EmbeddedGuidanceIsADenoiserInput) {
  StandIn m;
  Parts p = m.parts();
  p.guidance = GuidanceKind::Embedded;
  Request r = small_request();
  r.steps = 2;
  r.guidance = 6.0;
  Result res = run_generation(p, r);
  EXPECT_EQ(res.denoiser_calls, 2);
  ASSERT_EQ(m.embedded.size(), 2u);
  EXPECT_EQ(m.embedded[0], 6.0);
  EXPECT_EQ(m.embedded[1], 6.0);
  // The guided value is the prediction itself: one Euler step with v = 1.5 (no 6x blend).
  r.steps = 1;
  res = run_generation(p, r);
  TorchGenerator g(7);
  const std::vector<float> noise = g.randn({16, 2, 4, 6}).to_f32_vector();
  const std::vector<float> x = res.latents.to_f32_vector();
  ASSERT_EQ(x.size(), noise.size());
  for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(x[i], noise[i] - 1.5f) << i;
}

TEST(Generate, TheFamilysFrameRuleIsUsed) {
  // An 8k+1 family (LTX's VAE: temporal stride 8) with a 32-pixel spatial rule.
  Geometry g;
  g.vae_label = "the LTX VAE";
  g.vae_stride_t = 8;
  g.vae_stride_s = 32;
  g.patch_h = g.patch_w = 1;
  Request r = small_request();
  r.frames = 9;
  r.height = 64;
  r.width = 96;
  EXPECT_NO_THROW(validate_request(g, r));
  EXPECT_EQ(latent_shape(g, r), (Shape{16, 2, 2, 3}));
  r.frames = 5;
  EXPECT_NE(error_of([&] { validate_request(g, r); }).find("--frames 5: the LTX VAE needs 8k+1 frames (e.g. 1 or 9)"),
            std::string::npos)
      << error_of([&] { validate_request(g, r); });
}

TEST(Prediction, ConversionsToFlowVelocity) {
  // x_t = (1 - s) x0 + s eps with x0 = 2, eps = -1, s = 0.25: x_t = 1.25, v = eps - x0 = -3.
  const Tensor xt = Tensor::full({4}, 1.25, DType::F32);
  const double s = 0.25;
  auto v_of = [&](PredictionType p, double pred) {
    return to_flow_velocity(p, Tensor::full({4}, pred, DType::F32), xt, s).to_f32_vector()[0];
  };
  EXPECT_FLOAT_EQ(v_of(PredictionType::FlowVelocity, -3.0), -3.0f);
  EXPECT_FLOAT_EQ(v_of(PredictionType::X0, 2.0), -3.0f);
  EXPECT_FLOAT_EQ(v_of(PredictionType::Epsilon, -1.0), -3.0f);
  EXPECT_NE(error_of([&] { v_of(PredictionType::VPrediction, 0.0); }).find("needs a DDPM-family scheduler"),
            std::string::npos);
  EXPECT_NE(error_of([&] { to_flow_velocity(PredictionType::X0, xt, xt, 0.0); }).find("at sigma 0"),
            std::string::npos);
}

TEST(Residency, FreeAfterUseReloadsResidentKeeps) {
  int loads = 0;
  auto load = [&] {
    ++loads;
    return std::make_shared<int>(42);
  };
  ResidentPart<int> freed("the text encoder", Residency::FreeAfterUse, load);
  std::weak_ptr<int> w = freed.acquire();
  EXPECT_TRUE(freed.loaded());
  freed.release();
  EXPECT_FALSE(freed.loaded());
  EXPECT_TRUE(w.expired());  // nobody else held it: the memory is back
  EXPECT_EQ(*freed.acquire(), 42);
  EXPECT_EQ(freed.loads(), 2);

  ResidentPart<int> kept("the text encoder", Residency::Resident, load);
  (void)kept.acquire();
  kept.release();
  EXPECT_TRUE(kept.loaded());
  (void)kept.acquire();
  EXPECT_EQ(kept.loads(), 1);
}

TEST(Generate, AfterEncodingRunsOnceBeforeTheSteps) {
  StandIn m;
  Parts p = m.parts();
  int after = 0;
  size_t calls_then = 99;
  p.after_encoding = [&] {
    ++after;
    calls_then = m.calls.size();
  };
  run_generation(p, small_request());
  EXPECT_EQ(after, 1);
  EXPECT_EQ(calls_then, 0u);
}
