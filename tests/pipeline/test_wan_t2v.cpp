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
#include "pipeline/wan_t2v.h"

using namespace vidax;
using namespace vidax::pipeline;

namespace {

// cond context = 1s, uncond = 0s; the stand-in DiT returns (context value + 0.5)
// everywhere, so v_cond = 1.5, v_uncond = 0.5, and records its calls.
struct StandIn {
  std::vector<std::pair<double, float>> calls;  // (t, context value)
  std::vector<Tensor> inputs;
  int nan_at_call = -1;
  bool truncate = false;

  WanT2VComponents parts() {
    WanT2VComponents p;
    p.encode_prompt = [this](const std::string& s) {
      EncodedPrompt e;
      e.context = Tensor::full({3, 8}, s == "cond" ? 1.0 : 0.0, DType::F32);
      e.truncated = truncate && s == "cond";
      return e;
    };
    p.predict = [this](const Tensor& x, double t, const EncodedPrompt& prompt) {
      const float c = prompt.context.to_f32_vector()[0];
      calls.push_back({t, c});
      inputs.push_back(x.clone());
      const bool nan = static_cast<int>(calls.size()) == nan_at_call;
      return Tensor::full(x.shape(), nan ? std::numeric_limits<double>::quiet_NaN() : c + 0.5, DType::F32);
    };
    p.decode = [](const Tensor& z) {
      return Tensor::zeros({3, 1 + 4 * (z.size(1) - 1), z.size(2) * 8, z.size(3) * 8}, DType::F32);
    };
    return p;
  }
};

T2VRequest small_request() {
  T2VRequest r;
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

TEST(WanT2V, GuidanceCondThenUncondAndOneEulerStep) {
  StandIn m;
  T2VRequest r = small_request();
  T2VResult res = run_wan_t2v(m.parts(), r);
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

TEST(WanT2V, SameSeedSameNoiseOtherSeedOther) {
  StandIn a, b, c;
  T2VRequest r = small_request();
  run_wan_t2v(a.parts(), r);
  run_wan_t2v(b.parts(), r);
  r.seed = 8;
  run_wan_t2v(c.parts(), r);
  EXPECT_EQ(a.inputs[0].to_f32_vector(), b.inputs[0].to_f32_vector());
  EXPECT_NE(a.inputs[0].to_f32_vector(), c.inputs[0].to_f32_vector());
}

TEST(WanT2V, GivenNoiseIsUsed) {
  StandIn m;
  T2VRequest r = small_request();
  r.noise = Tensor::full({16, 2, 4, 6}, 0.25, DType::F32);
  run_wan_t2v(m.parts(), r);
  for (float v : m.inputs[0].to_f32_vector()) ASSERT_EQ(v, 0.25f);
  r.noise = Tensor::full({16, 2, 4, 8}, 0.25, DType::F32);
  const std::string e = error_of([&] { run_wan_t2v(m.parts(), r); });
  EXPECT_NE(e.find("noise F32[16, 2, 4, 8] does not fit the request: 5 frames of 48x32 need [16, 2, 4, 6]"),
            std::string::npos) << e;
}

TEST(WanT2V, EmptyNegativePromptMeansTheDefault) {
  StandIn m;
  T2VRequest r = small_request();
  r.negative_prompt = "";
  r.default_negative_prompt = "uncond";
  T2VResult res = run_wan_t2v(m.parts(), r);
  EXPECT_EQ(res.negative_prompt, "uncond");
  EXPECT_EQ(m.calls[1].second, 0.0f);
}

TEST(WanT2V, NanStopsWithTheStep) {
  StandIn m;
  m.nan_at_call = 4;  // step 2's uncond pass
  T2VRequest r = small_request();
  r.steps = 3;
  const std::string e = error_of([&] { run_wan_t2v(m.parts(), r); });
  EXPECT_NE(e.find("the DiT output for the negative prompt contains NaN or Inf at denoising step 2/3"),
            std::string::npos) << e;
  EXPECT_EQ(m.calls.size(), 4u);  // nothing ran after it
}

TEST(WanT2V, CtrlCStopsBetweenSteps) {
  StandIn m;
  T2VRequest r = small_request();
  r.steps = 3;
  T2VEvents ev;
  ev.on_step = [](int done, int, double) {
    if (done == 1) request_interrupt_for_testing(SIGINT);
  };
  try {
    run_wan_t2v(m.parts(), r, ev);
    FAIL() << "no stop";
  } catch (const Interrupted& e) {
    EXPECT_EQ(std::string(e.what()), "stopped by SIGINT (Ctrl-C) during denoising step 1/3; no output was written");
  }
  clear_interrupt();
  EXPECT_EQ(m.calls.size(), 2u);
}

TEST(WanT2V, OverlongPromptWarns) {
  StandIn m;
  m.truncate = true;
  std::vector<std::string> warnings;
  T2VEvents ev;
  ev.warn = [&](const std::string& w) { warnings.push_back(w); };
  run_wan_t2v(m.parts(), small_request(), ev);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_EQ(warnings[0], "the prompt is longer than 512 tokens; it was truncated to that length (as the reference does)");
}

TEST(WanT2V, BadRequestsHaveClearMessages) {
  const WanGeometry g;
  auto check = [&](std::function<void(T2VRequest&)> edit, const std::string& expected) {
    T2VRequest r = small_request();
    edit(r);
    const std::string e = error_of([&] { validate_request(g, r); });
    EXPECT_NE(e.find(expected), std::string::npos) << "got: " << e;
  };
  check([](T2VRequest& r) { r.frames = 80; }, "--frames 80: the Wan VAE needs 4k+1 frames (e.g. 77 or 81)");
  check([](T2VRequest& r) { r.frames = 0; }, "--frames 0: the Wan VAE needs 4k+1 frames");
  check([](T2VRequest& r) { r.height = 100; },
        "--height 100: must be a positive multiple of 16 (VAE stride 8 x patch 2); nearest: 96 or 112");
  check([](T2VRequest& r) { r.width = 8; }, "--width 8: must be a positive multiple of 16");
  check([](T2VRequest& r) { r.steps = 0; }, "--steps 0: needs at least 1 step");
  check([](T2VRequest& r) { r.shift = 0; }, "--shift 0: must be a positive number");
  check([](T2VRequest& r) { r.guidance = std::nan(""); }, "--guidance nan: must be a finite number");
  check([](T2VRequest& r) { r.sampler = "ddim"; }, "--sampler ddim: unknown; choose one of unipc, dpm++, euler");
}

