#include "models/hunyuan15/checkpoint_keys.h"

#include "models/hunyuan/checkpoint_keys.h"
#include "translate/config_fields.h"

namespace vidax::hunyuan15 {

using translate::Json;
using translate::KeyMap;
using translate::ParamSpec;
using translate::Rule;
using translate::Transform;

ParamSpec dit_params(const DiTConfig& c) {
  ParamSpec s;
  const int64_t d = c.hidden_size;
  auto linear = [&](const std::string& n, int64_t out, int64_t in) {
    s.add(n + ".weight", {out, in});
    s.add(n + ".bias", {out});
  };
  auto layer_norm = [&](const std::string& n, int64_t w) {
    s.add(n + ".weight", {w});
    s.add(n + ".bias", {w});
  };
  if (c.glyph_byT5_v2) {  // ByT5Mapper(in 1472, out 2048, hidden 2048, out_dim1 hidden_size)
    layer_norm("byt5_in.layernorm", kByT5InDim);
    linear("byt5_in.fc1", kByT5HiddenDim, kByT5InDim);
    linear("byt5_in.fc2", kByT5HiddenDim, kByT5HiddenDim);
    linear("byt5_in.fc3", d, kByT5HiddenDim);
  }
  const auto [pt, ph, pw] = c.patch_size;
  s.add("img_in.proj.weight", {d, c.embed_channels(), pt, ph, pw});
  s.add("img_in.proj.bias", {d});
  if (c.vision_projection == "linear") {  // VisionProjection: LayerNorm, Linear, GELU, Linear, LayerNorm
    const int64_t v = c.vision_states_dim;
    layer_norm("vision_in.proj.0", v);
    linear("vision_in.proj.1", v, v);
    linear("vision_in.proj.3", d, v);
    layer_norm("vision_in.proj.4", d);
  }
  // The modules 1.0 has under the same names (hunyuan/checkpoint_keys.h).
  hunyuan::add_text_in_params(s, c);
  hunyuan::add_timestep_embedder_params(s, "time_in", d);
  if (c.text_pool_type) {
    linear("vector_in.in_layer", d, c.text_states_dim_2);
    linear("vector_in.out_layer", d, d);
  }
  if (c.guidance_embed) hunyuan::add_timestep_embedder_params(s, "guidance_in", d);
  if (c.use_meanflow) hunyuan::add_timestep_embedder_params(s, "time_r_in", d);
  hunyuan::add_block_params(s, c);
  hunyuan::add_final_layer_params(s, c);
  if (c.use_cond_type_embedding) s.add("cond_type_embedding.weight", {3, d});
  return s;
}

namespace {

// engine <- the concatenation (dim 0) of the official split projections.
const std::vector<std::pair<std::string, std::vector<std::string>>> kOfficialFused = {
    {"double_blocks.{i}.img_attn_qkv.{p}",
     {"double_blocks.{i}.img_attn_q.{p}", "double_blocks.{i}.img_attn_k.{p}", "double_blocks.{i}.img_attn_v.{p}"}},
    {"double_blocks.{i}.txt_attn_qkv.{p}",
     {"double_blocks.{i}.txt_attn_q.{p}", "double_blocks.{i}.txt_attn_k.{p}", "double_blocks.{i}.txt_attn_v.{p}"}},
    {"single_blocks.{i}.linear1.{p}",
     {"single_blocks.{i}.linear1_q.{p}", "single_blocks.{i}.linear1_k.{p}", "single_blocks.{i}.linear1_v.{p}",
      "single_blocks.{i}.linear1_mlp.{p}"}},
};

// engine <- diffusers, one-to-one renames ({p} = weight | bias), of the modules 1.0's diffusers
// class does not have or spells otherwise (the rest: hunyuan::add_diffusers_shared_rules).
const translate::SuffixTable kDiffusersRenames = {
    {"byt5_in.layernorm.{p}", "context_embedder_2.norm.{p}"},
    {"byt5_in.fc1.{p}", "context_embedder_2.linear_1.{p}"},
    {"byt5_in.fc2.{p}", "context_embedder_2.linear_2.{p}"},
    {"byt5_in.fc3.{p}", "context_embedder_2.linear_3.{p}"},
    {"vision_in.proj.0.{p}", "image_embedder.norm_in.{p}"},
    {"vision_in.proj.1.{p}", "image_embedder.linear_1.{p}"},
    {"vision_in.proj.3.{p}", "image_embedder.linear_2.{p}"},
    {"vision_in.proj.4.{p}", "image_embedder.norm_out.{p}"},
    {"time_in.mlp.0.{p}", "time_embed.timestep_embedder.linear_1.{p}"},
    {"time_in.mlp.2.{p}", "time_embed.timestep_embedder.linear_2.{p}"},
    {"time_r_in.mlp.0.{p}", "time_embed.timestep_embedder_r.linear_1.{p}"},
    {"time_r_in.mlp.2.{p}", "time_embed.timestep_embedder_r.linear_2.{p}"},
    {"cond_type_embedding.weight", "cond_type_embed.weight"},
};

KeyMap original_map() {
  KeyMap m{"original", {}, {}};
  for (const auto& [engine, keys] : kOfficialFused) m.rules.push_back(Rule{engine, keys, Transform::Concat, 0});
  m.rules.push_back(translate::key_rule("single_blocks.{i}.linear2.{p}", "single_blocks.{i}.linear2.fc.{p}"));
  m.rules.push_back(translate::key_rule("{name*}", "{name}"));
  return m;
}

}  // namespace

KeyMap dit_keymap(const std::string& layout) {
  if (layout == "original") return original_map();
  if (layout == "module") return translate::with_key_prefix(original_map(), "module.", "module");
  if (layout == "diffusers") {
    KeyMap m{"diffusers", {}, {}};
    hunyuan::add_diffusers_shared_rules(m.rules);
    translate::add_nested(m.rules, "", "", kDiffusersRenames);
    return m;
  }
  throw Error(msg() << "hunyuanvideo1.5-dit: unknown layout '" << layout << "' (original, module, diffusers)");
}

namespace {

class DitComponent : public translate::Component {
 public:
  std::string name() const override { return "hunyuanvideo1.5-dit"; }
  std::string family() const override { return "hunyuanvideo1.5"; }
  std::vector<std::string> layouts() const override { return {"original", "module", "diffusers"}; }
  Json default_config() const override { return DiTConfig::published().to_json(); }
  std::optional<Json> read_config(const Json& j) const override {
    if (!is_config(j)) return std::nullopt;
    return DiTConfig::from_json(j).to_json();
  }
  Json infer_config(const translate::TensorSource& src, const std::string& layout) const override {
    const KeyMap m = dit_keymap(layout);
    DiTConfig c = DiTConfig::published();
    auto info = [&](const std::string& n) { return translate::find_param(src, m, n); };
    hunyuan::infer_shared_fields(src, m, c);
    if (info("img_in.proj.weight")) c.concat_condition = false;  // the stored channel count is the embedded one
    c.use_meanflow = info("time_r_in.mlp.0.weight") != nullptr;
    c.glyph_byT5_v2 = info("byt5_in.fc1.weight") != nullptr;
    c.use_cond_type_embedding = info("cond_type_embedding.weight") != nullptr;
    if (auto* t = info("vision_in.proj.1.weight"); t && t->shape.size() == 2) {
      c.vision_projection = "linear";
      c.vision_states_dim = t->shape[1];
    } else {
      c.vision_projection = "none";
    }
    if (auto* t = info("vector_in.in_layer.weight"); t && t->shape.size() == 2) {
      c.text_pool_type = "mean";  // any non-null value builds vector_in
      c.text_states_dim_2 = t->shape[1];
    } else {
      c.text_pool_type.reset();
    }
    return c.to_json();
  }
  ParamSpec params(const Json& cfg) const override { return dit_params(DiTConfig::from_json(cfg)); }
  KeyMap keymap(const std::string& layout, const Json&) const override { return dit_keymap(layout); }
  std::string variant(const Json& cfg) const override {
    DiTConfig c = DiTConfig::from_json(cfg);
    c.layout = DiTLayout::Original;
    return c == DiTConfig::published() ? "480p-720p" : "custom";
  }
};

}  // namespace

const translate::Component& dit_component() {
  static const DitComponent c;
  return c;
}

}  // namespace vidax::hunyuan15
