// The 3-D RoPE table builder against the official get_nd_rotary_pos_embed (and diffusers', the
// same: tools/golden/hunyuan_rope.py), and the one config parser on both spellings.
#include <gtest/gtest.h>

#include <filesystem>

#include "io/checkpoint.h"
#include "models/hunyuan/checkpoint_keys.h"
#include "models/hunyuan/dit_config.h"
#include "models/hunyuan/rope.h"
#include "test_diff.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

std::vector<int64_t> parse_list(const std::string& s) {  // "16x56x56" -> {16, 56, 56}
  std::vector<int64_t> out;
  size_t at = 0;
  while (at <= s.size()) {
    const size_t x = s.find('x', at);
    out.push_back(std::stoll(s.substr(at, x == std::string::npos ? std::string::npos : x - at)));
    if (x == std::string::npos) break;
    at = x + 1;
  }
  return out;
}

nlohmann::json golden_config(const std::string& name) {
  const auto f = io::Checkpoint::open((fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan" / name).string());
  return nlohmann::json::parse(f.metadata().at("config"));
}

}  // namespace

TEST(HunyuanRope, MatchesTheReferenceTables) {
  const auto f = io::Checkpoint::open((fs::path(VIDAX_TEST_DATA_DIR) / "hunyuan" / "data" / "rope_tables.safetensors").string());
  int checked = 0;
  for (const std::string& name : f.names()) {
    if (name.rfind("cos.", 0) != 0) continue;
    const std::string key = name.substr(4);
    const size_t dot = key.find('.');
    const auto dims = parse_list(key.substr(0, dot));
    const auto g = parse_list(key.substr(dot + 1));
    const hunyuan::RotaryTables t = hunyuan::rotary_pos_embed(dims, {g[0], g[1], g[2]}, 256.0);
    const test::Diff dc = test::diff(f.get(name), t.cos), ds = test::diff(f.get("sin." + key), t.sin);
    EXPECT_LE(dc.rel_l2, 1e-6) << name << " max_abs " << dc.max_abs;
    EXPECT_LE(ds.rel_l2, 1e-6) << "sin." << key << " max_abs " << ds.max_abs;
    EXPECT_LE(dc.max_abs, 1e-5) << name;
    ++checked;
  }
  EXPECT_EQ(checked, 3);
  // The control: another theta gives other tables.
  const hunyuan::RotaryTables other = hunyuan::rotary_pos_embed({16, 56, 56}, {3, 6, 10}, 10000.0);
  EXPECT_GT(test::rel_l2(f.get("cos.16x56x56.3x6x10"), other.cos), 1e-2);
}

TEST(HunyuanRope, MatchesTheGoldensInputs) {
  for (const char* name : {"hunyuan_dit_tiny.safetensors", "hunyuan_dit_linear_gelu.safetensors"}) {
    const auto f = io::Checkpoint::open((fs::path(VIDAX_TEST_DATA_DIR) / "golden" / "hunyuan" / name).string());
    const hunyuan::DiTConfig c = hunyuan::DiTConfig::from_json(nlohmann::json::parse(f.metadata().at("config")));
    const Shape x = f.get("input.x").shape();
    const std::array<int64_t, 3> grid{x[2] / c.patch_size[0], x[3] / c.patch_size[1], x[4] / c.patch_size[2]};
    const hunyuan::RotaryTables t = hunyuan::rotary_pos_embed(c.rope_dim_list, grid, c.rope_theta);
    EXPECT_LE(test::rel_l2(f.get("input.freqs_cos"), t.cos), 1e-6) << name;
    EXPECT_LE(test::rel_l2(f.get("input.freqs_sin"), t.sin), 1e-6) << name;
  }
}

TEST(HunyuanConfig, BothSpellingsGiveOneModel) {
  hunyuan::DiTConfig official = hunyuan::DiTConfig::from_json(golden_config("hunyuan_dit_tiny.safetensors"));
  const hunyuan::DiTConfig diffusers = hunyuan::DiTConfig::from_json(golden_config("hunyuan_dit_diffusers.safetensors"));
  EXPECT_EQ(official.layout, hunyuan::DiTLayout::Original);
  EXPECT_EQ(diffusers.layout, hunyuan::DiTLayout::Diffusers);
  official.layout = hunyuan::DiTLayout::Diffusers;
  EXPECT_EQ(official, diffusers);
  // The official spelling round-trips.
  EXPECT_EQ(hunyuan::DiTConfig::from_json(diffusers.to_json()).hidden_size, 32);
  // The published model: 20 + 40 blocks of width 3072, 24 heads of 128, guidance_in.
  const hunyuan::DiTConfig big = hunyuan::DiTConfig::from_json(nlohmann::json{{"_class_name", "HunyuanVideoTransformer3DModel"}});
  EXPECT_EQ(big.hidden_size, 3072);
  EXPECT_EQ(big.head_dim(), 128);
  EXPECT_TRUE(big.guidance_embed);
  EXPECT_EQ(hunyuan::dit_component().variant(big.to_json()), "t2v-720p");
  // diffusers: `out_channels or in_channels`, with the default 16 when the field is absent.
  const nlohmann::json i2v{{"_class_name", "HunyuanVideoTransformer3DModel"}, {"in_channels", 33}};
  EXPECT_EQ(hunyuan::DiTConfig::from_json(i2v).out_channels, 16);
  nlohmann::json null_out = i2v;
  null_out["out_channels"] = nullptr;
  EXPECT_EQ(hunyuan::DiTConfig::from_json(null_out).out_channels, 33);
}

TEST(HunyuanConfig, RefusesWhatItCannotBuild) {
  auto fails_with = [](const nlohmann::json& j, const std::string& what) {
    try {
      hunyuan::DiTConfig::from_json(j);
      ADD_FAILURE() << "expected an error naming " << what << " for " << j.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
    }
  };
  fails_with({{"hidden_size", 64}, {"heads_num", 4}}, "rope_dim_list [16,56,56] must be 3 widths summing to the head dim 16");
  fails_with({{"hidden_size", 64}, {"heads_num", 3}}, "must be divisible by heads_num 3");
  fails_with({{"hidden_size", 3072}, {"mlp_act_type", "swish"}}, "mlp_act_type 'swish'");
  fails_with({{"hidden_size", 3072}, {"text_projection", "double"}}, "text_projection 'double'");
  fails_with({{"hidden_size", 3072}, {"qkv_bias", 1}}, "'qkv_bias' must be true or false");
  fails_with({{"num_attention_heads", 24}, {"image_condition_type", "token_replace"}}, "token_replace");
  fails_with({{"num_attention_heads", 24}, {"qk_norm", "layer_norm"}}, "qk_norm 'layer_norm'");
  fails_with({{"dim", 1536}}, "not a HunyuanVideo DiT config");
}
