// The LTX-2 embeddings connectors against the official EmbeddingsProcessor.create_embeddings
// (tests/golden/ltx2/ltx2_text_connector_*.safetensors, tools/golden/ltx2_text.py): fp32 through kind
// ltx2.text.connector; controls that must fail (a register, a q_norm weight, the rope theta, a
// feature at a valid position) and one that must not (a feature at a pad the registers replace);
// bad config and inputs.
#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

#include "backend/ops.h"
#include "engine/builtin_kinds.h"
#include "io/checkpoint.h"
#include "models/ltx2/text_connector.h"
#include "parity/parity.h"
#include "ltx2_golden.h"
#include "test_diff.h"
#include "translate/inspect.h"

using namespace vidax;
namespace fs = std::filesystem;

namespace {

using test::ltx2::expect_error;
using test::ltx2::golden;
using test::ltx2::max_abs_diff;

void expect_golden(const char* name, int outputs) {
  EXPECT_EQ(test::ltx2::expect_golden_rows(name).compared, outputs);
}



using Loaded = test::ltx2::GoldenParams;
Loaded load(const char* name) { return test::ltx2::load_golden(name); }

// The video context with the golden's audio connector, `video` the features.
Tensor run_video(const Loaded& l, std::map<std::string, Tensor> params, const Tensor& video,
                 nlohmann::json video_cfg = nullptr) {
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), "golden");
  const ltx2::EmbeddingsConnector v(ltx2::ConnectorConfig::from_json(video_cfg.is_null() ? l.config.at("video") : video_cfg),
                                    src, "video_connector.");
  const ltx2::EmbeddingsConnector a(ltx2::ConnectorConfig::from_json(l.config.at("audio")), src, "audio_connector.");
  src.expect_all_taken();
  return ltx2::create_embeddings(v, &a, video, l.file.get("input.audio_features"), l.file.get("input.attention_mask"))
      .video;
}



}  // namespace

// Registers, split rope, video + audio, a left-padded and a scattered mask (the stable reorder).
TEST(Ltx2TextConnectorGolden, RegistersVideoAudioMatchTheReferenceFp32) {
  expect_golden("ltx2_text_connector_registers.safetensors", 3);
}
// No registers (pads masked as keys), interleaved rope, gated attention, ff without bias, video only.
TEST(Ltx2TextConnectorGolden, PlainGatedInterleavedMatchesTheReferenceFp32) {
  expect_golden("ltx2_text_connector_plain.safetensors", 2);
}

TEST(Ltx2TextConnector, ControlsFail) {
  const Loaded l = load("ltx2_text_connector_registers.safetensors");
  const Tensor feats = l.file.get("input.video_features"), want = l.file.get("output.video");
  EXPECT_LE(max_abs_diff(run_video(l, l.params, feats), want), 1e-5);
  for (const char* key : {"video_connector.learnable_registers", "video_connector.transformer_1d_blocks.1.attn1.q_norm.weight",
                          "video_connector.transformer_1d_blocks.0.ff.net.2.bias"}) {
    auto p = l.params;
    ASSERT_TRUE(p.count(key)) << key;
    p[key] = ops::add_scalar(p[key], 0.1);
    EXPECT_GT(max_abs_diff(run_video(l, p, feats), want), 1e-4) << key;
  }
  auto cfg = l.config.at("video");
  cfg["positional_embedding_theta"] = 20000.0;
  EXPECT_GT(max_abs_diff(run_video(l, l.params, feats, cfg), want), 1e-4) << "theta";
  // Row 0 is padded at positions 0..2: the registers replace what is there; position 3 is a token.
  std::vector<float> f = feats.to_f32_vector();
  const int64_t d = feats.size(2);
  for (int64_t c = 0; c < d; ++c) f[c] += 1.0f;
  EXPECT_LE(max_abs_diff(run_video(l, l.params, Tensor::from_f32(f, feats.shape())), want), 1e-5) << "a pad";
  for (int64_t c = 0; c < d; ++c) f[3 * d + c] += 1.0f;
  EXPECT_GT(max_abs_diff(run_video(l, l.params, Tensor::from_f32(f, feats.shape())), want), 1e-4) << "a token";
}

TEST(Ltx2TextConnector, BadConfigAndInputFail) {
  const Loaded l = load("ltx2_text_connector_registers.safetensors");
  auto bad = [&](const char* key, nlohmann::json v, const std::string& needle) {
    auto c = l.config.at("video");
    c[key] = v;
    expect_error([&] { ltx2::ConnectorConfig::from_json(c); }, needle);
  };
  bad("double_precision_rope", false, "fp32 frequency grid");
  bad("rope_type", "yarn", "rope_type");
  bad("positional_embedding_max_pos", {1, 2}, "one entry");
  bad("heads", 2, "unknown key 'heads'");
  auto p = l.params;
  nn::ParamSource src = nn::ParamSource::from_map(p, "golden");
  const ltx2::EmbeddingsConnector v(ltx2::ConnectorConfig::from_json(l.config.at("video")), src, "video_connector.");
  const Tensor feats = l.file.get("input.video_features");
  expect_error([&] { ltx2::create_embeddings(v, nullptr, feats, std::nullopt, Tensor::from_i64(std::vector<int64_t>(16, 0), {2, 8})); },
               "has no tokens");
  expect_error([&] { ltx2::create_embeddings(v, nullptr, feats, feats, l.file.get("input.attention_mask")); },
               "without an audio connector");
  // 6 tokens are not a multiple of the 4 registers.
  expect_error([&] { v.forward(feats.slice(1, 0, 6), {6, 6}); }, "multiple of the 4 registers");
}
