// The HunyuanVideo DiT goldens through PJRT (`vidax parity FILE --device pjrt`) at their fp32 bounds:
// the forward recorded as one program (the latent and the text states its inputs), the taps its outputs.
#include "pjrt_test.h"

#include "engine/builtin_kinds.h"
#include "parity/parity.h"

using namespace vidax;

class PjrtHunyuanDiTGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(PjrtHunyuanDiTGolden, PassesAtTheFp32Bound) {
  VIDAX_REQUIRE_PJRT();
  engine::register_builtin_kinds();
  parity::Options opt;
  opt.device = "pjrt";
  opt.pjrt_plugin = VIDAX_PJRT_TEST_PLUGIN;
  const parity::Report rep = parity::run(std::string(VIDAX_TEST_DATA_DIR) + "/golden/hunyuan/" + GetParam(), opt);
  for (const auto& r : rep.rows)
    if (r.status == parity::Comparison::Status::Fail) ADD_FAILURE() << r.name << " rel_l2=" << r.rel_l2 << " " << r.note;
  EXPECT_TRUE(rep.ok());
  EXPECT_EQ(rep.precision, "fp32");
  EXPECT_GE(rep.compared, 8);
}

INSTANTIATE_TEST_SUITE_P(Goldens, PjrtHunyuanDiTGolden,
                         ::testing::Values("hunyuan_dit_tiny.safetensors", "hunyuan_dit_noguid.safetensors",
                                           "hunyuan_dit_linear_gelu.safetensors", "hunyuan_dit_hd128.safetensors",
                                           "hunyuan_dit_holes.safetensors", "hunyuan_dit_relu.safetensors",
                                           "hunyuan_dit_silu.safetensors", "hunyuan_dit_diffusers.safetensors"));
