// The parameter specs and key maps at the published size, against the key lists the reference code
// builds (tools/golden/hunyuan_keylists.py: the official HYVideoDiffusionTransformer and diffusers'
// HunyuanVideoTransformer3DModel on the meta device): every name and shape, both layouts, strictly.
#include <gtest/gtest.h>

#include <filesystem>

#include "hunyuan/dit_test_support.h"
#include "models/hunyuan/checkpoint_keys.h"
#include "models/hunyuan/dit.h"
#include "translate/translate.h"

using namespace vidax;
using test::hunyuan_dit::shapes_only;

namespace {

std::map<std::string, Shape> key_list(const std::string& layout) {
  return test::hunyuan_dit::key_list(std::filesystem::path(VIDAX_TEST_DATA_DIR) / "hunyuan" / "data" /
                                     ("dit_keys_" + layout + ".json"));
}

}  // namespace

TEST(HunyuanKeys, OfficialSpecIsTheReferenceStateDict) {
  const auto keys = key_list("original");
  const translate::ParamSpec spec = hunyuan::dit_params(hunyuan::DiTConfig::t2v_720p());
  std::map<std::string, Shape> ours;
  for (const auto& p : spec.params) ours[p.name] = p.shape;
  EXPECT_EQ(ours, keys);
  EXPECT_EQ(spec.parameter_count(), 12821012544);  // the 13B model's 12.82e9 parameters
}

TEST(HunyuanKeys, DiffusersLayoutFillsEveryParameterAndUsesEveryKey) {
  const auto keys = key_list("diffusers");
  const translate::MemorySource src = shapes_only(keys);
  const hunyuan::DiTConfig cfg =
      hunyuan::DiTConfig::from_json(nlohmann::json{{"_class_name", "HunyuanVideoTransformer3DModel"}});
  const translate::Plan p = translate::plan(src, hunyuan::dit_params(cfg), hunyuan::dit_keymap("diffusers"));
  EXPECT_TRUE(p.missing.empty() && p.unused_keys.empty() && p.mismatches.empty()) << p.problems();
  EXPECT_EQ(p.consumed_keys, keys.size());
}

TEST(HunyuanKeys, ShapesTellTheVariant) {
  const translate::Component& c = hunyuan::dit_component();
  for (const char* layout : {"original", "diffusers"}) {
    const translate::MemorySource src = shapes_only(key_list(layout));
    EXPECT_EQ(c.variant(c.infer_config(src, layout)), "t2v-720p") << layout;
  }
  // The original layout's map claims none of diffusers' keys and the reverse (detection by layout).
  const translate::MemorySource diff = shapes_only(key_list("diffusers"));
  const translate::Plan wrong = translate::plan(diff, hunyuan::dit_params(hunyuan::DiTConfig::t2v_720p()),
                                                hunyuan::dit_keymap("original"));
  EXPECT_EQ(wrong.consumed_keys, 0u);
}

// The model takes exactly the spec's parameters at the published size (shape-only Meta tensors:
// no memory; what a random-weight bench of the 13B step builds on).
TEST(HunyuanKeys, TheModelTakesExactlyTheSpecAtThePublishedSize) {
  const hunyuan::DiTConfig cfg = hunyuan::DiTConfig::t2v_720p();
  test::hunyuan_dit::expect_model_takes_exactly<hunyuan::HunyuanDiT>(cfg, hunyuan::dit_params(cfg));
}
