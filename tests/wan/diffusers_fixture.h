// Writing a Wan checkpoint in diffusers' layout from a tiny golden's original-layout files, for the
// tests that check the diffusers path gives the original's results (test_diffusers_layout,
// test_wan22_diffusers): the renamed weights and the configs as diffusers / transformers spell them.
#pragma once
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "io/checkpoint.h"
#include "text/umt5_keys.h"
#include "translate/keymap.h"

namespace vidax::test::wan_diffusers {

namespace fs = std::filesystem;
using nlohmann::json;

// Rewrites an original-layout file under the diffusers names of `map`.
inline void write_renamed(const std::string& from, const translate::KeyMap& map, const fs::path& to) {
  io::Checkpoint ck = io::Checkpoint::open(from);
  std::map<std::string, Tensor> out;
  for (const auto& name : ck.names()) {
    auto rr = translate::resolve(map, name);
    ASSERT_TRUE(rr.has_value()) << "no diffusers rule for " << name;
    ASSERT_EQ(rr->rule->transform, translate::Transform::Identity) << name;
    out[rr->keys.at(0)] = ck.get(name);
  }
  fs::create_directories(to.parent_path());
  io::save_safetensors(to.string(), out);
}

inline void write_json(const fs::path& p, const json& j) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << j.dump(1);
}

// WanTransformer3DModel's config for a WanModel config without an image branch (callers add their own keys).
inline json transformer_config(const json& dit) {
  return {{"_class_name", "WanTransformer3DModel"},
          {"patch_size", dit["patch_size"]},
          {"num_attention_heads", dit["num_heads"]},
          {"attention_head_dim", dit["dim"].get<int64_t>() / dit["num_heads"].get<int64_t>()},
          {"in_channels", dit["in_dim"]},
          {"out_channels", dit["out_dim"]},
          {"text_dim", dit["text_dim"]},
          {"freq_dim", dit["freq_dim"]},
          {"ffn_dim", dit["ffn_dim"]},
          {"num_layers", dit["num_layers"]},
          {"cross_attn_norm", true},
          {"qk_norm", "rms_norm_across_heads"},
          {"eps", 1e-6},
          {"image_dim", nullptr},
          {"added_kv_proj_dim", nullptr},
          {"rope_max_seq_len", 1024}};
}

// text_encoder/ and tokenizer/ of the golden folder `g`, in transformers' names.
inline void write_text_encoder(const fs::path& d, const std::string& g, const json& t5) {
  write_renamed(g + "/models_t5_umt5-xxl-enc-bf16.safetensors", translate::t5::t5_keymap("diffusers"),
                d / "text_encoder/model.safetensors");
  write_json(d / "text_encoder/config.json",
             {{"model_type", "umt5"},
              {"vocab_size", t5["vocab"]},
              {"d_model", t5["dim"]},
              {"d_kv", t5["dim_attn"].get<int64_t>() / t5["num_heads"].get<int64_t>()},
              {"d_ff", t5["dim_ffn"]},
              {"num_heads", t5["num_heads"]},
              {"num_layers", t5["num_layers"]},
              {"relative_attention_num_buckets", t5["num_buckets"]},
              {"relative_attention_max_distance", 128},
              {"feed_forward_proj", "gated-gelu"},
              {"layer_norm_epsilon", 1e-6}});
  fs::create_directories(d / "tokenizer");
  fs::copy_file(g + "/google/umt5-xxl/spiece.model", d / "tokenizer/spiece.model", fs::copy_options::overwrite_existing);
}

}  // namespace vidax::test::wan_diffusers
