// `vidax inspect`'s detection knows the HunyuanVideo DiT (both layouts) and still gives Wan's files
// to Wan: every golden file of the kind inspects with full coverage as hunyuanvideo-dit.
#include <gtest/gtest.h>

#include <filesystem>

#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "translate/inspect.h"

using namespace vidax;
namespace fs = std::filesystem;

TEST(HunyuanInspect, GoldenFilesAreRecognisedWithFullCoverage) {
  engine::register_builtins();
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan")) {
    // A file whose parameters are synthetic (described in its metadata) stores none to recognise.
    if (io::Checkpoint::open(e.path().string()).metadata().count("synthetic_params")) continue;
    const translate::InspectReport r = translate::inspect(e.path().string());
    ASSERT_EQ(r.units.size(), 1u) << e.path();
    ASSERT_NE(r.units[0].comp, nullptr) << r.to_text();
    EXPECT_EQ(r.units[0].comp->name(), "hunyuanvideo-dit");
    EXPECT_EQ(r.units[0].match.layout,
              e.path().filename().string().find("diffusers") != std::string::npos ? "diffusers" : "original");
    EXPECT_TRUE(r.complete()) << r.to_text();
    ++n;
  }
  EXPECT_EQ(n, 4);
  const translate::InspectReport wan =
      translate::inspect((fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "wan_dit_tiny.safetensors").string());
  ASSERT_NE(wan.units[0].comp, nullptr);
  EXPECT_EQ(wan.units[0].comp->name(), "wan2.1-dit");
}
