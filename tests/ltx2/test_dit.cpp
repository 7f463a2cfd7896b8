// The LTX-2 audio-video DiT against the official ltx_core LTXModel (tests/golden/ltx2/ltx2_dit_*.safetensors,
// tools/golden/ltx2_dit.py): both streams, the cross-modal attention and the text masks (ltx2_dit_av),
// the LTX-2.3 features (gated attention, cross-attention AdaLN, prompt AdaLN, bias-free FFN:
// ltx2_dit_av23), the video-only model with the 19B caption projection and interleaved RoPE
// (ltx2_dit_video), at fp32 through kind ltx2.dit, every per-block tap included.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/ltx2/dit.h"
#include "parity/parity.h"
#include "test_diff.h"
#include "translate/inspect.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

std::string golden(const char* name) {
  return (fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "ltx2" / name).string();
}

void expect_golden(const char* name, int outputs, const char* precision = "fp32", double bound = 1e-5) {
  engine::register_builtins();
  parity::Options opt;
  opt.precision = precision;
  opt.rtol = bound;
  const parity::Report rep = parity::run(golden(name), opt);
  int compared_outputs = 0;
  for (const auto& c : rep.rows) {
    std::printf("  %s %s %-32s max_abs=%.3g rel_l2=%.3g\n", name, precision, c.name.c_str(), c.max_abs, c.rel_l2);
    EXPECT_EQ(c.status, parity::Comparison::Status::Ok) << c.name << " " << c.note;
    if (std::string(precision) == "fp32") EXPECT_LE(c.max_abs, 1e-5) << c.name;
    if (c.name.rfind("output", 0) == 0) ++compared_outputs;
  }
  EXPECT_TRUE(rep.ok()) << rep.passed << "/" << rep.compared;
  EXPECT_EQ(compared_outputs, outputs);
}

}  // namespace

TEST(Ltx2DiTGolden, AudioVideoMaskedBatch2MatchesTheReferenceFp32) { expect_golden("ltx2_dit_av.safetensors", 2); }
TEST(Ltx2DiTGolden, AudioVideo23GatedCrossAdaLNMatchesTheReferenceFp32) {
  expect_golden("ltx2_dit_av23.safetensors", 2);
}
TEST(Ltx2DiTGolden, VideoOnlyCaptionProjectionInterleavedMatchesTheReferenceFp32) {
  expect_golden("ltx2_dit_video.safetensors", 1);
}
