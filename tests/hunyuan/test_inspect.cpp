// `vidax inspect`'s detection knows the HunyuanVideo DiT (both layouts) and still gives Wan's files
// to Wan: the golden file that stores its parameters inspects with full coverage as
// hunyuanvideo-dit, and diffusers' key list is detected as its diffusers layout.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "translate/inspect.h"
#include "translate/source.h"

using namespace vidax;
namespace fs = std::filesystem;

TEST(HunyuanInspect, GoldenFilesAreRecognisedWithFullCoverage) {
  engine::register_builtins();
  int n = 0;
  for (const auto& e : fs::directory_iterator(fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan")) {
    // A file whose parameters are synthetic (described in its metadata) stores none to recognise;
    // the text encoders' goldens (hunyuan.text.*) share the folder.
    const auto meta = io::Checkpoint::open(e.path().string()).metadata();
    if (meta.count("synthetic_params") || meta.at("kind") != "hunyuan.dit") continue;
    const translate::InspectReport r = translate::inspect(e.path().string());
    ASSERT_EQ(r.units.size(), 1u) << e.path();
    ASSERT_NE(r.units[0].comp, nullptr) << r.to_text();
    EXPECT_EQ(r.units[0].comp->name(), "hunyuanvideo-dit");
    EXPECT_EQ(r.units[0].match.layout, "original");
    EXPECT_TRUE(r.complete()) << r.to_text();
    ++n;
  }
  EXPECT_EQ(n, 1);  // hunyuan_dit_linear_gelu stores its parameters; the others describe them
  // The diffusers layout, by the key list diffusers' own model has at the published size.
  std::ifstream f(fs::path(VIDAX_TEST_DATA_DIR) / "hunyuan" / "data" / "dit_keys_diffusers.json");
  translate::MemorySource src("diffusers key list");
  const nlohmann::json keys = nlohmann::json::parse(f);
  for (const auto& [k, v] : keys.items()) src.add(k, DType::BF16, v.get<Shape>());
  const auto d = translate::detect(src);
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->comp->name(), "hunyuanvideo-dit");
  EXPECT_EQ(d->layout, "diffusers");
  EXPECT_EQ(d->claimed, src.names().size());
  const translate::InspectReport wan =
      translate::inspect((fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "wan_dit_tiny.safetensors").string());
  ASSERT_NE(wan.units[0].comp, nullptr);
  EXPECT_EQ(wan.units[0].comp->name(), "wan2.1-dit");
}

// Detection counts each component's claims with the config the file's shapes give, not its
// defaults: the Llama-3 golden with attention and MLP biases (hunyuan_text_llama_llama3) was taken
// for a Qwen2.5-VL encoder (whose defaults have q/k/v biases) and inspect then failed on Qwen's
// 28-head default; LTX-2's Gemma-3 goldens were taken for Llama (Gemma's q/k norms unused, k/v
// mismatched) before gemma3-text-encoder was registered for detection (bugs rows 136, 137).
TEST(HunyuanInspect, TextEncoderGoldensAreTheirOwnEncoders) {
  engine::register_builtins();
  const fs::path golden = fs::path(VIDAX_TEST_DATA_DIR) / "golden";
  const translate::InspectReport llama = translate::inspect((golden / "hunyuan" / "hunyuan_text_llama_llama3.safetensors").string());
  ASSERT_EQ(llama.units.size(), 1u);
  ASSERT_NE(llama.units[0].comp, nullptr) << llama.to_text();
  EXPECT_EQ(llama.units[0].comp->name(), "llama-text-encoder");
  EXPECT_TRUE(llama.complete()) << llama.to_text();
  // The Gemma golden also holds LTX-2's feature extractor (feature_extractor.*, not a Gemma part):
  // every Gemma parameter is filled and only those keys stay unused.
  const translate::InspectReport gemma = translate::inspect((golden / "ltx2" / "ltx2_text_gemma3_v2.safetensors").string());
  ASSERT_GE(gemma.units.size(), 1u);
  ASSERT_NE(gemma.units[0].comp, nullptr) << gemma.to_text();
  EXPECT_EQ(gemma.units[0].comp->name(), "gemma3-text-encoder");
  const translate::Plan& plan = gemma.units[0].match.plan;
  EXPECT_TRUE(plan.missing.empty() && plan.mismatches.empty()) << gemma.to_text();
  ASSERT_FALSE(plan.unused_keys.empty());
  for (const std::string& k : plan.unused_keys) EXPECT_EQ(k.rfind("feature_extractor.", 0), 0u) << k;
}
