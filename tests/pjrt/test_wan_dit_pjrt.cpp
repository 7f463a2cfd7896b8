// The Wan DiT goldens through PJRT (`vidax parity FILE --device pjrt`) at their fp32 bounds, and
// the compile cache on disk: a second session on the same program loads it instead of compiling.
#include "pjrt_test.h"

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "parity/parity.h"

using namespace vidax;

class PjrtWanDiTGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(PjrtWanDiTGolden, PassesAtTheFp32Bound) {
  VIDAX_REQUIRE_PJRT();
  engine::register_builtin_kinds();
  parity::Options opt;
  opt.device = "pjrt";
  opt.pjrt_plugin = VIDAX_PJRT_TEST_PLUGIN;
  const parity::Report rep = parity::run(std::string(VIDAX_TEST_DATA_DIR) + "/golden/" + GetParam(), opt);
  for (const auto& r : rep.rows)
    if (r.status == parity::Comparison::Status::Fail) ADD_FAILURE() << r.name << " rel_l2=" << r.rel_l2 << " " << r.note;
  EXPECT_TRUE(rep.ok());
  EXPECT_EQ(rep.precision, "fp32");
  EXPECT_GE(rep.compared, 7);  // the output and the taps, all outputs of the one program
}

INSTANTIATE_TEST_SUITE_P(Goldens, PjrtWanDiTGolden,
                         ::testing::Values("wan_dit_tiny.safetensors", "wan_dit_tiny_b2.safetensors",
                                           "wan_dit_diffusers_tiny.safetensors", "wan_dit_heads4_odd_b2.safetensors",
                                           "wan_dit_i2v_tiny.safetensors", "wan_dit_flf2v_tiny.safetensors",
                                           "wan_dit_block1536.safetensors"));

TEST(PjrtParity, AKindWithoutPjrtRefusesTheDevice) {
  engine::register_builtin_kinds();
  parity::Options opt;
  opt.device = "pjrt";
  try {
    parity::run(std::string(VIDAX_TEST_DATA_DIR) + "/golden/wan_vae_decode.safetensors", opt);
    FAIL() << "ran";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("runs on the cpu only"), std::string::npos) << e.what();
  }
}

TEST(PjrtCompileCache, ASecondRunHitsTheCacheOnDisk) {
  VIDAX_REQUIRE_PJRT();
  const std::string dir = testing::TempDir() + "/vidax_pjrt_cache_test";
  std::filesystem::remove_all(dir);
  const Tensor x = pjrt_test::randt({4, 8}, 40), w = pjrt_test::randt({16, 8}, 41);  // > 64 elements: a param, not a constant
  auto run = [&](pjrt::Session& s) {
    const Tensor mx = Tensor::empty(x.shape(), x.dtype(), Device::Meta);
    Trace trace;
    Tensor y;
    {
      RecordingScope rec(trace);
      y = ops::silu(ops::linear(mx, w));
    }
    return s.run(trace, {y}, {{mx, x}})[0];
  };
  pjrt::Session first(VIDAX_PJRT_TEST_PLUGIN, dir);
  const Tensor a = run(first);
  EXPECT_EQ(first.stats().compiles, 1);
  EXPECT_EQ(first.stats().disk_hits, 0);
  const Tensor a2 = run(first);  // same program, same session: loaded, weights resident
  EXPECT_EQ(first.stats().compiles, 1);
  EXPECT_EQ(first.stats().memory_hits, 1);
  EXPECT_EQ(first.stats().uploads, 1);
  pjrt::Session second(VIDAX_PJRT_TEST_PLUGIN, dir);
  const Tensor b = run(second);
  EXPECT_EQ(second.stats().compiles, 0);
  EXPECT_EQ(second.stats().disk_hits, 1);
  EXPECT_LT(second.stats().last_compile_s, 1.0);
  EXPECT_EQ(a.to_f32_vector(), b.to_f32_vector());
  EXPECT_EQ(a.to_f32_vector(), a2.to_f32_vector());
}
