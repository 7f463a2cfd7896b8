// Parts::run (pipeline/parts.h): a family that owns its whole run gets the request after the
// generic checks (size rules, images, control inputs) and reports through the same Events; the loop's
// own steps do not run. Stand-in parts, no family.
#include <gtest/gtest.h>

#include <string>

#include "core/error.h"
#include "pipeline/generate.h"

using namespace vidax;

namespace {

pipeline::Parts stand_in(int* calls, pipeline::Request* seen) {
  pipeline::Parts p;
  p.geometry.z_dim = 4;
  p.geometry.vae_stride_t = 8;
  p.geometry.vae_stride_s = 32;
  p.geometry.patch_t = p.geometry.patch_h = p.geometry.patch_w = 1;
  p.run = [calls, seen](const pipeline::Request& q, const pipeline::Events& ev, bool decode) {
    ++*calls;
    *seen = q;
    if (ev.on_stage) ev.on_stage("denoising");
    for (int i = 1; i <= q.steps; ++i)
      if (ev.on_step) ev.on_step(i, static_cast<int>(q.steps), 0.0);
    pipeline::Result r;
    r.latents = Tensor::zeros({4, 2, 1, 1}, DType::F32);
    if (decode) {
      r.video = Tensor::zeros({3, static_cast<int64_t>(q.frames), 32, 32}, DType::F32);
      r.audio = Tensor::zeros({2, 100}, DType::F32);
      r.audio_sample_rate = 48000;
    }
    return r;
  };
  return p;
}

pipeline::Request request() {
  pipeline::Request r;
  r.prompt = "a cat";
  r.frames = 9;
  r.height = r.width = 32;
  r.steps = 3;
  r.sampler = "euler";
  r.fps = 25;
  return r;
}

}  // namespace

TEST(PartsRun, TheFamilysRunGetsTheCheckedRequestAndReportsThroughEvents) {
  int calls = 0, steps = 0;
  pipeline::Request seen;
  const pipeline::Parts p = stand_in(&calls, &seen);
  pipeline::Events ev;
  ev.on_step = [&](int done, int total, double) {
    EXPECT_EQ(total, 3);
    steps = done;
  };
  const pipeline::Result r = pipeline::run_generation(p, request(), ev, true);
  EXPECT_EQ(calls, 1);
  EXPECT_EQ(steps, 3);
  EXPECT_EQ(seen.fps, 25);  // Request::fps reaches the family
  EXPECT_EQ(seen.prompt, "a cat");
  EXPECT_EQ(r.frames, 9);  // filled from the request when the family leaves them
  EXPECT_EQ(r.height, 32);
  EXPECT_EQ(r.width, 32);
  EXPECT_EQ(r.audio_sample_rate, 48000);
  EXPECT_EQ(r.denoiser_calls, 0);  // the loop's own steps did not run
  const pipeline::Result nodecode = pipeline::run_generation(p, request(), {}, false);
  EXPECT_FALSE(nodecode.video.defined());
}

TEST(PartsRun, TheGenericChecksComeFirst) {
  int calls = 0;
  pipeline::Request seen;
  const pipeline::Parts p = stand_in(&calls, &seen);
  auto error_of = [&](pipeline::Request q) {
    try {
      pipeline::run_generation(p, q, {}, false);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string();
  };
  pipeline::Request q = request();
  q.frames = 10;
  EXPECT_NE(error_of(q).find("9 or 17"), std::string::npos);
  q = request();
  q.width = 48;
  EXPECT_NE(error_of(q).find("32 or 64"), std::string::npos);
  q = request();
  q.image = Tensor::zeros({3, 32, 32}, DType::F32);
  EXPECT_NE(error_of(q).find("--image"), std::string::npos);
  EXPECT_EQ(calls, 0);  // none of them reached the family
}
