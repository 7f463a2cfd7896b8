// The LTX-2 DiT goldens through PJRT (`vidax parity FILE --device pjrt`) at their fp32 bounds: the
// forward recorded as one program (each stream's latent and context its inputs), the taps its outputs.
#include "pjrt_test.h"

#include "engine/builtin_kinds.h"
#include "parity/parity.h"

using namespace vidax;

class PjrtLtx2DiTGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(PjrtLtx2DiTGolden, PassesAtTheFp32Bound) {
  VIDAX_REQUIRE_PJRT();
  engine::register_builtin_kinds();
  parity::Options opt;
  opt.device = "pjrt";
  opt.pjrt_plugin = VIDAX_PJRT_TEST_PLUGIN;
  const parity::Report rep = parity::run(std::string(VIDAX_TEST_DATA_DIR) + "/golden/ltx2/" + GetParam(), opt);
  for (const auto& r : rep.rows) {
    std::printf("  %s %-32s max_abs=%.3g rel_l2=%.3g\n", GetParam(), r.name.c_str(), r.max_abs, r.rel_l2);
    if (r.status == parity::Comparison::Status::Fail) ADD_FAILURE() << r.name << " rel_l2=" << r.rel_l2 << " " << r.note;
    if (r.status == parity::Comparison::Status::Ok) {
      EXPECT_LE(r.max_abs, 1e-5) << r.name;
    }
  }
  EXPECT_TRUE(rep.ok());
  EXPECT_EQ(rep.precision, "fp32");
  EXPECT_GE(rep.compared, 4);
}

INSTANTIATE_TEST_SUITE_P(Goldens, PjrtLtx2DiTGolden,
                         ::testing::Values("ltx2_dit_av.safetensors", "ltx2_dit_av23.safetensors",
                                           "ltx2_dit_video.safetensors", "ltx2_dit_av_cond.safetensors",
                                           "ltx2_dit_audio.safetensors", "ltx2_dit_av_video_off.safetensors"));
