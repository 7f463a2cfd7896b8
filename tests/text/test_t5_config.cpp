// T5/UMT5 config parsing, parameter names, relative-position buckets (against
// the reference's _relative_position_bucket, tests/text/data/t5_buckets.json
// from tools/golden/t5_encoder.py) and the prompt-length helpers.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/t5_config.h"
#include "text/umt5_keys.h"

namespace vidax::text {
namespace {

const std::string kData = std::string(VIDAX_TEST_DATA_DIR) + "/text/data";

TEST(T5Buckets, MatchReferenceForEveryRelativePosition) {
  std::ifstream f(kData + "/t5_buckets.json");
  ASSERT_TRUE(f.good());
  auto j = nlohmann::json::parse(f);
  const int64_t rel_min = j["rel_min"];
  for (bool bidirectional : {true, false}) {
    auto expected = j[bidirectional ? "bidirectional_32_128" : "unidirectional_32_128"].get<std::vector<int64_t>>();
    const int64_t L = 1024;
    ASSERT_EQ(static_cast<int64_t>(expected.size()), 2 * L - 1);
    auto got = t5_relative_position_buckets(L, L, bidirectional, 32, 128);
    int mismatches = 0;
    for (int64_t i = 0; i < L; ++i)
      for (int64_t k = 0; k < L; ++k)
        if (got[i * L + k] != expected[k - i - rel_min] && ++mismatches < 5)
          ADD_FAILURE() << "query " << i << " key " << k << ": " << got[i * L + k] << " vs reference "
                        << expected[k - i - rel_min];
    EXPECT_EQ(mismatches, 0) << (bidirectional ? "bidirectional" : "unidirectional");
  }
}

TEST(T5Buckets, BoundaryValues) {
  // rel = key - query. Exact below 8, log buckets 8..15, clipped at 15 from 128 on; keys after the query +16.
  auto b = t5_relative_position_buckets(1, 200, true, 32, 128);
  EXPECT_EQ(b[0], 0);
  EXPECT_EQ(b[7], 16 + 7);
  EXPECT_EQ(b[16], 16 + 10);   // log(2)/log(16)*8 = 2 exactly in fp32
  EXPECT_EQ(b[127], 16 + 15);
  EXPECT_EQ(b[199], 16 + 15);
  auto back = t5_relative_position_buckets(200, 1, true, 32, 128);
  EXPECT_EQ(back[7], 7);
  EXPECT_EQ(back[199], 15);
}

TEST(T5Config, OfficialAndTransformersSpellings) {
  auto off = T5EncoderConfig::from_json({{"vocab", 96}, {"dim", 32}, {"dim_attn", 48}, {"dim_ffn", 40},
                                         {"num_heads", 4}, {"num_layers", 3}, {"num_buckets", 32},
                                         {"shared_pos", false}});
  EXPECT_EQ(off.head_dim(), 12);
  EXPECT_FALSE(off.shared_pos);
  auto names = t5_encoder_parameter_names(off);
  ASSERT_EQ(names.size(), 2u + 3 * 10);
  EXPECT_EQ(names[1], "blocks.0.norm1.weight");
  EXPECT_NE(std::find(names.begin(), names.end(), "blocks.2.pos_embedding.embedding.weight"), names.end());

  nlohmann::json hf = {{"model_type", "t5"}, {"vocab_size", 96}, {"d_model", 32}, {"d_kv", 12},
                       {"d_ff", 40}, {"num_layers", 3}, {"num_heads", 4}, {"feed_forward_proj", "gated-gelu"},
                       {"relative_attention_num_buckets", 32}, {"relative_attention_max_distance", 128},
                       {"layer_norm_epsilon", 1e-6}};
  auto t5 = T5EncoderConfig::from_json(hf);
  EXPECT_TRUE(t5.shared_pos);
  EXPECT_EQ(t5.dim_attn, 48);
  auto t5_names = t5_encoder_parameter_names(t5);
  EXPECT_EQ(t5_names[1], "pos_embedding.embedding.weight");
  hf["model_type"] = "umt5";
  EXPECT_FALSE(T5EncoderConfig::from_json(hf).shared_pos);

  hf["feed_forward_proj"] = "relu";
  EXPECT_THROW(T5EncoderConfig::from_json(hf), Error);
  EXPECT_THROW(T5EncoderConfig::from_json({{"vocab", 96}}), Error);
  EXPECT_THROW(T5EncoderConfig::from_json({{"vocab", 96}, {"dim", 32}, {"dim_attn", 50}, {"dim_ffn", 40},
                                           {"num_heads", 4}, {"num_layers", 3}, {"num_buckets", 32}}),
               Error);  // 50 % 4 != 0
  auto xxl = T5EncoderConfig::umt5_xxl();
  EXPECT_EQ(xxl.head_dim(), 64);
  EXPECT_EQ(t5_encoder_parameter_names(xxl).size(), 2u + 24 * 10);
}

TEST(T5Masks, LengthsAndTrim) {
  Tensor mask = Tensor::from_i64({1, 1, 1, 0, 0, 1, 1, 1, 1, 1}, {2, 5});
  EXPECT_EQ(mask_lengths(mask), (std::vector<int64_t>{3, 5}));
  std::vector<float> ctx(2 * 5 * 2);
  for (size_t i = 0; i < ctx.size(); ++i) ctx[i] = static_cast<float>(i);
  auto parts = trim_to_prompt_lengths(Tensor::from_f32(ctx, {2, 5, 2}), mask);
  ASSERT_EQ(parts.size(), 2u);
  EXPECT_EQ(parts[0].shape(), (Shape{3, 2}));
  EXPECT_EQ(parts[1].shape(), (Shape{5, 2}));
  EXPECT_EQ(parts[0].to_f32_vector(), (std::vector<float>{0, 1, 2, 3, 4, 5}));
  EXPECT_EQ(parts[1].to_f32_vector()[0], 10.f);

  EXPECT_THROW(mask_lengths(Tensor::from_i64({1, 0, 1}, {1, 3})), Error);  // not right-padded
  EXPECT_THROW(mask_lengths(Tensor::from_i64({0, 0, 0}, {1, 3})), Error);  // empty prompt
  EXPECT_THROW(mask_lengths(Tensor::from_i64({1, 1, 1}, {3})), Error);     // not [B, L]
}

}  // namespace
}  // namespace vidax::text

// One reader of the T5 model fields (text/umt5_keys.h): the encoder's config and the translator's
// component agree on every config, and follow transformers' class defaults (a T5Config without
// feed_forward_proj is relu: refused by both; the translator used to assume gated-gelu).
TEST(T5ConfigOneParser, EncoderAndTranslatorReadTheSameModel) {
  const std::vector<nlohmann::json> configs = {
      {{"vocab", 96}, {"dim", 32}, {"dim_attn", 48}, {"dim_ffn", 40}, {"num_heads", 4}, {"num_layers", 2},
       {"num_buckets", 8}, {"shared_pos", false}},
      {{"model_type", "umt5"}, {"vocab_size", 100}, {"d_model", 16}, {"d_kv", 4}, {"d_ff", 24}, {"num_heads", 4},
       {"num_layers", 3}, {"relative_attention_num_buckets", 8}},
      {{"model_type", "t5"}, {"feed_forward_proj", "gated-gelu"}, {"vocab_size", 100}, {"d_model", 16},
       {"d_kv", 4}, {"d_ff", 24}, {"num_heads", 4}, {"num_layers", 3}},
  };
  for (const auto& j : configs) {
    const vidax::text::T5EncoderConfig e = vidax::text::T5EncoderConfig::from_json(j);
    const vidax::translate::t5::T5Config t = vidax::translate::t5::T5Config::from_json(j);
    EXPECT_EQ(e.to_json(), t.to_json()) << j.dump();
  }
  const nlohmann::json relu{{"model_type", "t5"}, {"vocab_size", 100}, {"d_model", 16}, {"d_kv", 4},
                            {"d_ff", 24}, {"num_heads", 4}, {"num_layers", 3}};
  EXPECT_THROW(vidax::translate::t5::T5Config::from_json(relu), vidax::Error);
  EXPECT_THROW(vidax::text::T5EncoderConfig::from_json(relu), vidax::Error);
  // A missing size is named, not filled with UMT5-XXL's.
  nlohmann::json partial = configs[0];
  partial.erase("dim_ffn");
  try {
    (void)vidax::translate::t5::T5Config::from_json(partial);
    FAIL() << "accepted a config without dim_ffn";
  } catch (const vidax::Error& err) {
    EXPECT_NE(std::string(err.what()).find("config field 'dim_ffn' is missing"), std::string::npos) << err.what();
  }
}
