// Qwen2.5-VL's text config as transformers reads it (configuration_qwen2_5_vl.py of transformers
// 5.23): the Hub's flat config.json of Qwen2.5-VL-7B-Instruct (text fields at the top, rope_scaling
// "mrope") is the 7B; a field left out takes Qwen2_5_VLTextConfig's default, not the 7B's;
// num_key_value_heads null means one kv head per head; what the encoder does not compute is refused.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "text/qwen2_config.h"

using namespace vidax;

TEST(Qwen25VLTextConfig, TheHubConfigIsThe7B) {
  const nlohmann::json hub = nlohmann::json::parse(R"({
    "architectures": ["Qwen2_5_VLForConditionalGeneration"], "attention_dropout": 0.0, "bos_token_id": 151643,
    "eos_token_id": 151645, "vision_start_token_id": 151652, "vision_end_token_id": 151653,
    "vision_token_id": 151654, "image_token_id": 151655, "video_token_id": 151656, "hidden_act": "silu",
    "hidden_size": 3584, "initializer_range": 0.02, "intermediate_size": 18944, "max_position_embeddings": 128000,
    "max_window_layers": 28, "model_type": "qwen2_5_vl", "num_attention_heads": 28, "num_hidden_layers": 28,
    "num_key_value_heads": 4, "rms_norm_eps": 1e-06, "rope_theta": 1000000.0, "sliding_window": 32768,
    "tie_word_embeddings": false, "torch_dtype": "bfloat16", "use_cache": true, "use_sliding_window": false,
    "vision_config": {"depth": 32, "hidden_act": "silu", "hidden_size": 1280, "intermediate_size": 3420,
                      "num_heads": 16, "in_chans": 3, "out_hidden_size": 3584, "patch_size": 14,
                      "spatial_merge_size": 2, "spatial_patch_size": 14, "window_size": 112,
                      "fullatt_block_indexes": [7, 15, 23, 31], "tokens_per_second": 2, "temporal_patch_size": 2},
    "rope_scaling": {"type": "mrope", "mrope_section": [16, 24, 24]}, "vocab_size": 152064})");
  const text::Qwen25VLTextConfig c = text::Qwen25VLTextConfig::from_json(hub);
  EXPECT_EQ(c, text::Qwen25VLTextConfig::qwen25_vl_7b());
  EXPECT_EQ(c.llama.head_dim, 128);
  EXPECT_TRUE(c.llama.attention_bias);
  EXPECT_FALSE(c.llama.o_proj_bias);
  EXPECT_EQ(text::qwen25_vl_text_component().variant(hub), "qwen2.5-vl-7b");
  // The transformers 5 spelling of the same model reads the same.
  EXPECT_EQ(text::Qwen25VLTextConfig::from_json({{"text_config", c.to_json()}}), c);
}

TEST(Qwen25VLTextConfig, MissingFieldsTakeTransformersDefaults) {
  text::Qwen25VLTextConfig c = text::Qwen25VLTextConfig::from_json({{"model_type", "qwen2_5_vl_text"}});
  EXPECT_EQ(c.llama.hidden_size, 8192);
  EXPECT_EQ(c.llama.intermediate_size, 29568);
  EXPECT_EQ(c.llama.num_hidden_layers, 80);
  EXPECT_EQ(c.llama.num_attention_heads, 64);
  EXPECT_EQ(c.llama.num_key_value_heads, 8);
  EXPECT_EQ(c.llama.max_position_embeddings, 32768);
  EXPECT_EQ(c.llama.rms_norm_eps, 1e-5);
  EXPECT_EQ(c.llama.rope_theta, 1000000.0);
  EXPECT_EQ(c.mrope_section, (std::vector<int64_t>{16, 24, 24}));
  c = text::Qwen25VLTextConfig::from_json({{"model_type", "qwen2_5_vl_text"}, {"num_key_value_heads", nullptr}});
  EXPECT_EQ(c.llama.num_key_value_heads, 64);
}

TEST(Qwen25VLTextConfig, WhatTheEncoderDoesNotComputeIsRefused) {
  const auto refused = [](const nlohmann::json& j, const std::string& needle) {
    try {
      text::Qwen25VLTextConfig::from_json(j);
      ADD_FAILURE() << "no error for " << j.dump();
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  const nlohmann::json base = text::Qwen25VLTextConfig::qwen25_vl_7b().to_json();
  nlohmann::json j = base;
  j["use_sliding_window"] = true;
  refused(j, "use_sliding_window true is not supported");
  j = base;
  j["layer_types"] = std::vector<std::string>(28, "sliding_attention");
  refused(j, "layer type \"sliding_attention\"");
  j = base;
  j["hidden_act"] = "gelu";
  refused(j, "hidden_act 'gelu'");
  j = base;
  j["num_attention_heads"] = 27;
  refused(j, "not divisible by num_attention_heads 27");
  j = base;
  j["model_type"] = "qwen2";
  refused(j, "model_type 'qwen2'");
}
