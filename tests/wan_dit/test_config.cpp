#include <gtest/gtest.h>

#include "core/error.h"
#include "models/wan/dit_config.h"
#include "models/wan/checkpoint_keys.h"

using vidax::wan::DiTConfig;
using vidax::wan::DiTLayout;

namespace {

// Wan-AI/Wan2.1-T2V-1.3B config.json (WanModel's register_to_config output: no
// patch_size/text_dim/qk_norm/cross_attn_norm/window_size, they are ignore_for_config).
const char* kOfficial13B = R"({"__name__": "Config", "_class_name": "WanModel", "_diffusers_version": "0.30.0",
  "dim": 1536, "eps": 1e-06, "ffn_dim": 8960, "freq_dim": 256, "in_dim": 16, "model_type": "t2v",
  "num_heads": 12, "num_layers": 30, "out_dim": 16, "text_len": 512})";

// Wan-AI/Wan2.1-T2V-14B-Diffusers transformer/config.json.
const char* kDiffusers14B = R"({"_class_name": "WanTransformer3DModel", "_diffusers_version": "0.33.0.dev0",
  "added_kv_proj_dim": null, "attention_head_dim": 128, "cross_attn_norm": true, "eps": 1e-06, "ffn_dim": 13824,
  "freq_dim": 256, "image_dim": null, "in_channels": 16, "num_attention_heads": 40, "num_layers": 40,
  "out_channels": 16, "patch_size": [1, 2, 2], "qk_norm": "rms_norm_across_heads", "rope_max_seq_len": 1024,
  "text_dim": 4096})";

void expect_same(const DiTConfig& a, const DiTConfig& b) {
  EXPECT_EQ(a.model_type, b.model_type);
  EXPECT_EQ(a.patch_size, b.patch_size);
  EXPECT_EQ(a.text_len, b.text_len);
  EXPECT_EQ(a.in_dim, b.in_dim);
  EXPECT_EQ(a.dim, b.dim);
  EXPECT_EQ(a.ffn_dim, b.ffn_dim);
  EXPECT_EQ(a.freq_dim, b.freq_dim);
  EXPECT_EQ(a.text_dim, b.text_dim);
  EXPECT_EQ(a.out_dim, b.out_dim);
  EXPECT_EQ(a.num_heads, b.num_heads);
  EXPECT_EQ(a.num_layers, b.num_layers);
  EXPECT_EQ(a.qk_norm, b.qk_norm);
  EXPECT_EQ(a.cross_attn_norm, b.cross_attn_norm);
  EXPECT_DOUBLE_EQ(a.eps, b.eps);
}

}  // namespace

TEST(WanDiTConfig, OfficialConfigJsonFillsIgnoredFieldsWithWanModelDefaults) {
  DiTConfig c = DiTConfig::from_json(nlohmann::json::parse(kOfficial13B));
  EXPECT_EQ(c.layout, DiTLayout::Original);
  expect_same(c, DiTConfig::preset("wan2.1-t2v-1.3b"));
  EXPECT_EQ(c.head_dim(), 128);
}

TEST(WanDiTConfig, DiffusersConfigMapsToTheSameModel) {
  DiTConfig c = DiTConfig::from_json(nlohmann::json::parse(kDiffusers14B));
  EXPECT_EQ(c.layout, DiTLayout::Diffusers);
  expect_same(c, DiTConfig::preset("wan2.1-t2v-14b"));
  // diffusers builds norm_q/norm_k whatever qk_norm says.
  auto j = nlohmann::json::parse(kDiffusers14B);
  j["qk_norm"] = nullptr;
  EXPECT_TRUE(DiTConfig::from_json(j).qk_norm);
  j["cross_attn_norm"] = false;
  EXPECT_FALSE(DiTConfig::from_json(j).cross_attn_norm);
}

TEST(WanDiTConfig, ModelFieldsAreTheTranslatorsOwn) {
  // One parser reads the model-defining fields (translate::wan::DitConfig): the
  // engine and the weight translator cannot disagree on a config's model. Edge
  // cases where two parsers once differed: out_channels absent (16) or null (in_channels).
  auto d = nlohmann::json::parse(kDiffusers14B);
  d["in_channels"] = 36;
  d["image_dim"] = 1280;
  d.erase("out_channels");
  for (int k = 0; k < 2; ++k) {
    const DiTConfig c = DiTConfig::from_json(d);
    const auto t = vidax::translate::wan::DitConfig::from_json(d);
    EXPECT_EQ(c.out_dim, k == 0 ? 16 : 36);
    EXPECT_EQ(c.out_dim, t.out_dim);
    EXPECT_EQ(c.in_dim, t.in_dim);
    EXPECT_EQ(c.dim, t.dim);
    EXPECT_EQ(c.num_heads, t.num_heads);
    EXPECT_EQ(c.model_type, t.model_type);
    EXPECT_EQ(c.image_dim, 1280);
    d["out_channels"] = nullptr;
  }
  expect_same(DiTConfig::from_json(nlohmann::json::parse(kOfficial13B)), DiTConfig::preset("wan2.1-t2v-1.3b"));
}

TEST(WanDiTConfig, RopeSplitFollowsRopeParams) {
  DiTConfig c = DiTConfig::preset("wan2.1-t2v-1.3b");
  EXPECT_EQ(c.rope_axis_dims(), (std::array<int64_t, 3>{44, 42, 42}));
  c.dim = 48, c.num_heads = 2;  // head dim 24
  EXPECT_EQ(c.rope_axis_dims(), (std::array<int64_t, 3>{8, 8, 8}));
  c.dim = 64, c.num_heads = 4;  // head dim 16
  EXPECT_EQ(c.rope_axis_dims(), (std::array<int64_t, 3>{8, 4, 4}));
}

TEST(WanDiTConfig, RejectsWhatIsNotImplementedOrInconsistent) {
  auto j = nlohmann::json::parse(kOfficial13B);
  j["model_type"] = "magic";
  EXPECT_THROW(DiTConfig::from_json(j), vidax::Error);
  j["model_type"] = "i2v";
  EXPECT_TRUE(DiTConfig::from_json(j).has_image_input());
  j["text_len"] = 256;  // the reference splits image and text context at a hard-coded 512
  EXPECT_THROW(DiTConfig::from_json(j), vidax::Error);
  j = nlohmann::json::parse(kOfficial13B);
  j["num_heads"] = 7;  // 1536 % 7 != 0
  EXPECT_THROW(DiTConfig::from_json(j), vidax::Error);
  j = nlohmann::json::parse(kOfficial13B);
  j["window_size"] = {256, 256};
  EXPECT_THROW(DiTConfig::from_json(j), vidax::Error);
  j = nlohmann::json::parse(kOfficial13B);
  j["dim"] = "1536";
  EXPECT_THROW(DiTConfig::from_json(j), vidax::Error);
  auto d = nlohmann::json::parse(kDiffusers14B);
  d["image_dim"] = 1280;  // I2V
  d["added_kv_proj_dim"] = 5120;
  EXPECT_EQ(DiTConfig::from_json(d).model_type, "i2v");
  d["pos_embed_seq_len"] = 514;
  EXPECT_EQ(DiTConfig::from_json(d).model_type, "flf2v");
  EXPECT_THROW(DiTConfig::from_json(nlohmann::json::parse(R"({"foo": 1})")), vidax::Error);
  EXPECT_THROW(DiTConfig::preset("wan2.1-t2v-2b"), vidax::Error);
}

// VaceWanModel's defaults (vace_layers every second layer from 0, vace_in_dim = in_dim), the
// published VACE config, and what the reference would assert on or misread.
TEST(WanDiTConfig, ReadsVaceAndRefusesBadVaceLayers) {
  auto j = nlohmann::json::parse(kOfficial13B);
  j["model_type"] = "vace";
  DiTConfig c = DiTConfig::from_json(j);
  EXPECT_TRUE(c.is_vace());
  EXPECT_EQ(c.vace_layers, (std::vector<int64_t>{0, 2, 4, 6, 8, 10, 12, 14, 16, 18, 20, 22, 24, 26, 28}));
  EXPECT_EQ(c.vace_in_dim, c.in_dim);
  j["vace_layers"] = {0, 5, 10, 15, 20, 25};
  j["vace_in_dim"] = 96;
  c = DiTConfig::from_json(j);
  EXPECT_EQ(c.vace_layers, (std::vector<int64_t>{0, 5, 10, 15, 20, 25}));
  EXPECT_EQ(c.vace_in_dim, 96);
  EXPECT_EQ(DiTConfig::from_json(c.to_json()).vace_layers, c.vace_layers);  // round trip
  for (const char* bad : {"[5, 10]", "[0, 30]", "[0, 10, 5]", "[0, 0]", "[]"}) {
    j["vace_layers"] = nlohmann::json::parse(bad);
    EXPECT_THROW(DiTConfig::from_json(j), vidax::Error) << bad;
  }
  j["vace_layers"] = {0, 5};
  j["vace_in_dim"] = 0;
  EXPECT_THROW(DiTConfig::from_json(j), vidax::Error);
  j = nlohmann::json::parse(kOfficial13B);
  j["vace_layers"] = {0, 5};  // on a t2v model
  EXPECT_THROW(DiTConfig::from_json(j), vidax::Error);
}

// diffusers' WanVACETransformer3DModel config: its class defaults (vace_layers 0, 5, .., 35,
// vace_in_channels 96) and its fields.
TEST(WanDiTConfig, ReadsTheDiffusersVaceConfig) {
  auto d = nlohmann::json::parse(kDiffusers14B);
  d["_class_name"] = "WanVACETransformer3DModel";
  DiTConfig c = DiTConfig::from_json(d);
  EXPECT_EQ(c.model_type, "vace");
  EXPECT_EQ(c.layout, vidax::wan::DiTLayout::Diffusers);
  EXPECT_EQ(c.vace_layers, (std::vector<int64_t>{0, 5, 10, 15, 20, 25, 30, 35}));
  EXPECT_EQ(c.vace_in_dim, 96);
  d["vace_layers"] = {0, 2};
  d["vace_in_channels"] = 12;
  c = DiTConfig::from_json(d);
  EXPECT_EQ(c.vace_layers, (std::vector<int64_t>{0, 2}));
  EXPECT_EQ(c.vace_in_dim, 12);
  d["vace_layers"] = {2, 4};  // diffusers refuses a list without 0 too
  EXPECT_THROW(DiTConfig::from_json(d), vidax::Error);
}
