// The parameter specs and key maps at the published size, against the key lists the reference code
// builds (tools/golden/hunyuan_keylists.py: the official HYVideoDiffusionTransformer and diffusers'
// HunyuanVideoTransformer3DModel on the meta device): every name and shape, both layouts, strictly.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "models/hunyuan/checkpoint_keys.h"
#include "models/hunyuan/dit.h"
#include "nn/params.h"
#include "translate/source.h"
#include "translate/translate.h"

using namespace vidax;

namespace {

std::map<std::string, Shape> key_list(const std::string& layout) {
  std::ifstream f(std::filesystem::path(VIDAX_TEST_DATA_DIR) / "hunyuan" / "data" / ("dit_keys_" + layout + ".json"));
  const auto j = nlohmann::json::parse(f);
  std::map<std::string, Shape> out;
  for (const auto& [k, v] : j.items()) out[k] = v.get<Shape>();
  return out;
}

translate::MemorySource shapes_only(const std::map<std::string, Shape>& keys) {
  translate::MemorySource src("key list");
  for (const auto& [k, s] : keys) src.add(k, DType::BF16, s);
  return src;
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
  std::map<std::string, Shape> taken;
  nn::ParamSource params = nn::ParamSource::generated(
      [&taken](const std::string& name, const Shape& shape) {
        taken[name] = shape;
        return Tensor::empty(shape, DType::BF16, Device::Meta);
      },
      "meta");
  const hunyuan::HunyuanDiT model(cfg, params, DType::BF16);
  std::map<std::string, Shape> spec;
  for (const auto& p : hunyuan::dit_params(cfg).params) spec[p.name] = p.shape;
  EXPECT_EQ(taken, spec);
}
