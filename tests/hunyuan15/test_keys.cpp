// The HunyuanVideo 1.5 DiT's parameters at the published size against the state dicts the reference
// codes build (tests/hunyuan15/data/dit_keys_*.json, tools/golden/hunyuan15_keylists.py): every
// parameter filled, every key used, shapes equal, for the official, "module." and diffusers names.
#include <gtest/gtest.h>

#include <filesystem>

#include "hunyuan/dit_test_support.h"
#include "models/hunyuan15/checkpoint_keys.h"
#include "models/hunyuan15/dit.h"
#include "translate/translate.h"

using namespace vidax;
using test::hunyuan_dit::shapes_only;
using hunyuan15::DiTConfig;

namespace {

std::map<std::string, Shape> key_list(const std::string& layout) {
  return test::hunyuan_dit::key_list(std::filesystem::path(VIDAX_TEST_DATA_DIR) / "hunyuan15" / "data" /
                                     ("dit_keys_" + layout + ".json"));
}

void expect_complete(const translate::Plan& p, size_t keys) {
  EXPECT_TRUE(p.complete()) << p.problems();
  EXPECT_EQ(p.consumed_keys, keys);
}

}  // namespace

TEST(Hunyuan15Keys, OfficialLayoutFillsEveryParameterAndUsesEveryKey) {
  const auto keys = key_list("original");
  ASSERT_EQ(keys.size(), 1793u);
  const translate::ParamSpec spec = hunyuan15::dit_params(DiTConfig::published());
  EXPECT_EQ(spec.parameter_count(), 8326608160LL);
  expect_complete(translate::plan(shapes_only(keys), spec, hunyuan15::dit_keymap("original")), keys.size());
  // load_hunyuan_state_dict's load_key: the same names under "module.".
  expect_complete(translate::plan(shapes_only(keys, "module."), spec, hunyuan15::dit_keymap("module")), keys.size());
}

TEST(Hunyuan15Keys, DiffusersLayoutFillsEveryParameterAndUsesEveryKey) {
  const auto keys = key_list("diffusers");
  ASSERT_EQ(keys.size(), 1801u);
  const DiTConfig cfg = DiTConfig::from_json(nlohmann::json{{"_class_name", "HunyuanVideo15Transformer3DModel"}});
  expect_complete(translate::plan(shapes_only(keys), hunyuan15::dit_params(cfg), hunyuan15::dit_keymap("diffusers")),
                  keys.size());
}

// The config read from the official key shapes builds the same parameters as the published one.
TEST(Hunyuan15Keys, InferredConfigBuildsThePublishedParameters) {
  const translate::MemorySource src = shapes_only(key_list("original"));
  const auto inferred = DiTConfig::from_json(hunyuan15::dit_component().infer_config(src, "original"));
  const translate::ParamSpec a = hunyuan15::dit_params(inferred), b = hunyuan15::dit_params(DiTConfig::published());
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    EXPECT_EQ(a.params[i].name, b.params[i].name);
    EXPECT_EQ(a.params[i].shape, b.params[i].shape) << a.params[i].name;
  }
}

// The model takes exactly the spec's parameters at the published size (shape-only Meta tensors: no
// memory; what a random-weight bench of the 8.3B step would build on).
TEST(Hunyuan15Keys, TheModelTakesExactlyTheSpecAtThePublishedSize) {
  const DiTConfig cfg = DiTConfig::published();
  test::hunyuan_dit::expect_model_takes_exactly<hunyuan15::HunyuanVideo15DiT>(cfg, hunyuan15::dit_params(cfg));
}
