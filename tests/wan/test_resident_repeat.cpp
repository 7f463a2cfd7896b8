// A resident model (a server's, Request::keep_loaded) gives the same video for the same request
// every time: nothing a run leaves behind (caches, recycled buffers) changes the next one.
#include <gtest/gtest.h>

#include <filesystem>
#include <unistd.h>

#include <thread>

#include "engine/families.h"
#include "pipeline/generate.h"

namespace fs = std::filesystem;
using namespace vidax;
using namespace vidax::pipeline;

namespace {

void expect_same_twice(const std::string& variant, int64_t size) {
  const fs::path dir = fs::temp_directory_path() / ("vidax_resident_" + variant + "_" + std::to_string(::getpid()));
  fs::remove_all(dir);
  DemoOptions o;
  o.out_dir = dir.string();
  o.spiece_model = std::string(VIDAX_TEST_DATA_DIR) + "/text/data/tiny_spiece.model";
  const Family& f = engine::family_of_model(variant);
  f.make_demo(variant, o);
  LoadOptions lo;
  lo.weights_dir = dir.string();
  lo.model = variant;
  const LoadedModel m = f.load(lo);
  Request r;
  r.prompt = "a red panda";
  r.default_negative_prompt = m.variant.defaults.negative_prompt;
  r.frames = 5;
  r.height = r.width = size;
  r.steps = 2;
  r.seed = 4;
  r.guidance = 5;
  r.sampler = m.variant.defaults.sampler;
  r.shift = m.variant.defaults.shift;
  r.keep_loaded = true;
  // On a thread of their own, as a server's worker runs its jobs.
  Result a, b;
  std::thread worker([&] {
    a = run_generation(m.parts, r);
    b = run_generation(m.parts, r);
  });
  worker.join();
  const auto la = a.latents.to_f32_vector(), lb = b.latents.to_f32_vector();
  const auto va = a.video.to_f32_vector(), vb = b.video.to_f32_vector();
  size_t dl = 0, dv = 0;
  for (size_t i = 0; i < la.size(); ++i) dl += la[i] != lb[i];
  for (size_t i = 0; i < va.size(); ++i) dv += va[i] != vb[i];
  EXPECT_EQ(dl, 0u) << variant << ": latents differ between two runs on one load";
  EXPECT_EQ(dv, 0u) << variant << ": video differs between two runs on one load (of " << va.size() << ")";
  fs::remove_all(dir);
}

}  // namespace

TEST(ResidentRepeat, Wan21DemoSameTwice) { expect_same_twice("wan2.1-tiny-demo", 64); }
TEST(ResidentRepeat, Wan22Ti2vDemoSameTwice) { expect_same_twice("wan2.2-ti2v-tiny-demo", 64); }
