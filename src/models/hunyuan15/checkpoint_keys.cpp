#include "models/hunyuan15/checkpoint_keys.h"

#include "translate/config_fields.h"

namespace vidax::hunyuan15 {

using translate::Json;
using translate::KeyMap;
using translate::ParamSpec;
using translate::Rule;
using translate::Transform;

ParamSpec dit_params(const DiTConfig& c) {
  ParamSpec s;
  const int64_t d = c.hidden_size, hd = c.head_dim(), mlp = c.mlp_hidden();
  auto linear = [&](const std::string& n, int64_t out, int64_t in, bool bias = true) {
    s.add(n + ".weight", {out, in});
    if (bias) s.add(n + ".bias", {out});
  };
  auto layer_norm = [&](const std::string& n, int64_t w) {
    s.add(n + ".weight", {w});
    s.add(n + ".bias", {w});
  };
  auto qk_norm = [&](const std::string& n) {
    if (!c.qk_norm) return;
    s.add(n + ".weight", {hd});
    if (c.qk_norm_type == "layer") s.add(n + ".bias", {hd});
  };
  auto timestep_embedder = [&](const std::string& n) {
    linear(n + ".mlp.0", d, 256);
    linear(n + ".mlp.2", d, d);
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
  if (c.text_projection == "linear") {
    linear("txt_in.linear_1", d, c.text_states_dim);
    linear("txt_in.linear_2", d, d);
  } else {
    linear("txt_in.input_embedder", d, c.text_states_dim);
    timestep_embedder("txt_in.t_embedder");
    linear("txt_in.c_embedder.linear_1", d, c.text_states_dim);
    linear("txt_in.c_embedder.linear_2", d, d);
    for (int64_t i = 0; i < c.refiner_depth; ++i) {
      const std::string b = "txt_in.individual_token_refiner.blocks." + std::to_string(i) + ".";
      layer_norm(b + "norm1", d);
      linear(b + "self_attn_qkv", 3 * d, d);
      linear(b + "self_attn_proj", d, d);
      layer_norm(b + "norm2", d);
      linear(b + "mlp.fc1", 4 * d, d);
      linear(b + "mlp.fc2", d, 4 * d);
      linear(b + "adaLN_modulation.1", 2 * d, d);
    }
  }
  timestep_embedder("time_in");
  if (c.text_pool_type) {
    linear("vector_in.in_layer", d, c.text_states_dim_2);
    linear("vector_in.out_layer", d, d);
  }
  if (c.guidance_embed) timestep_embedder("guidance_in");
  if (c.use_meanflow) timestep_embedder("time_r_in");
  for (int64_t i = 0; i < c.mm_double_blocks_depth; ++i) {
    const std::string b = "double_blocks." + std::to_string(i) + ".";
    for (const char* stream : {"img", "txt"}) {
      const std::string p = b + stream;
      linear(p + "_mod.linear", 6 * d, d);
      linear(p + "_attn_qkv", 3 * d, d, c.qkv_bias);
      qk_norm(p + "_attn_q_norm");
      qk_norm(p + "_attn_k_norm");
      linear(p + "_attn_proj", d, d, c.qkv_bias);
      linear(p + "_mlp.fc1", mlp, d);
      linear(p + "_mlp.fc2", d, mlp);
    }
  }
  for (int64_t i = 0; i < c.mm_single_blocks_depth; ++i) {
    const std::string b = "single_blocks." + std::to_string(i) + ".";
    linear(b + "linear1", 3 * d + mlp, d);
    linear(b + "linear2", d, d + mlp);
    qk_norm(b + "q_norm");
    qk_norm(b + "k_norm");
    linear(b + "modulation.linear", 3 * d, d);
  }
  linear("final_layer.linear", c.patch_volume() * c.out_channels, d);
  linear("final_layer.adaLN_modulation.1", 2 * d, d);
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

// engine <- diffusers, one-to-one renames ({p} = weight | bias).
const translate::SuffixTable kDiffusersRenames = {
    {"img_in.proj.{p}", "x_embedder.proj.{p}"},
    {"byt5_in.layernorm.{p}", "context_embedder_2.norm.{p}"},
    {"byt5_in.fc1.{p}", "context_embedder_2.linear_1.{p}"},
    {"byt5_in.fc2.{p}", "context_embedder_2.linear_2.{p}"},
    {"byt5_in.fc3.{p}", "context_embedder_2.linear_3.{p}"},
    {"vision_in.proj.0.{p}", "image_embedder.norm_in.{p}"},
    {"vision_in.proj.1.{p}", "image_embedder.linear_1.{p}"},
    {"vision_in.proj.3.{p}", "image_embedder.linear_2.{p}"},
    {"vision_in.proj.4.{p}", "image_embedder.norm_out.{p}"},
    {"txt_in.input_embedder.{p}", "context_embedder.proj_in.{p}"},
    {"txt_in.t_embedder.mlp.0.{p}", "context_embedder.time_text_embed.timestep_embedder.linear_1.{p}"},
    {"txt_in.t_embedder.mlp.2.{p}", "context_embedder.time_text_embed.timestep_embedder.linear_2.{p}"},
    {"txt_in.c_embedder.linear_1.{p}", "context_embedder.time_text_embed.text_embedder.linear_1.{p}"},
    {"txt_in.c_embedder.linear_2.{p}", "context_embedder.time_text_embed.text_embedder.linear_2.{p}"},
    {"txt_in.individual_token_refiner.blocks.{i}.norm1.{p}", "context_embedder.token_refiner.refiner_blocks.{i}.norm1.{p}"},
    {"txt_in.individual_token_refiner.blocks.{i}.self_attn_proj.{p}",
     "context_embedder.token_refiner.refiner_blocks.{i}.attn.to_out.0.{p}"},
    {"txt_in.individual_token_refiner.blocks.{i}.norm2.{p}", "context_embedder.token_refiner.refiner_blocks.{i}.norm2.{p}"},
    {"txt_in.individual_token_refiner.blocks.{i}.mlp.fc1.{p}",
     "context_embedder.token_refiner.refiner_blocks.{i}.ff.net.0.proj.{p}"},
    {"txt_in.individual_token_refiner.blocks.{i}.mlp.fc2.{p}",
     "context_embedder.token_refiner.refiner_blocks.{i}.ff.net.2.{p}"},
    {"txt_in.individual_token_refiner.blocks.{i}.adaLN_modulation.1.{p}",
     "context_embedder.token_refiner.refiner_blocks.{i}.norm_out.linear.{p}"},
    {"time_in.mlp.0.{p}", "time_embed.timestep_embedder.linear_1.{p}"},
    {"time_in.mlp.2.{p}", "time_embed.timestep_embedder.linear_2.{p}"},
    {"time_r_in.mlp.0.{p}", "time_embed.timestep_embedder_r.linear_1.{p}"},
    {"time_r_in.mlp.2.{p}", "time_embed.timestep_embedder_r.linear_2.{p}"},
    {"cond_type_embedding.weight", "cond_type_embed.weight"},
    {"double_blocks.{i}.img_mod.linear.{p}", "transformer_blocks.{i}.norm1.linear.{p}"},
    {"double_blocks.{i}.img_attn_q_norm.{p}", "transformer_blocks.{i}.attn.norm_q.{p}"},
    {"double_blocks.{i}.img_attn_k_norm.{p}", "transformer_blocks.{i}.attn.norm_k.{p}"},
    {"double_blocks.{i}.img_attn_proj.{p}", "transformer_blocks.{i}.attn.to_out.0.{p}"},
    {"double_blocks.{i}.img_mlp.fc1.{p}", "transformer_blocks.{i}.ff.net.0.proj.{p}"},
    {"double_blocks.{i}.img_mlp.fc2.{p}", "transformer_blocks.{i}.ff.net.2.{p}"},
    {"double_blocks.{i}.txt_mod.linear.{p}", "transformer_blocks.{i}.norm1_context.linear.{p}"},
    {"double_blocks.{i}.txt_attn_q_norm.{p}", "transformer_blocks.{i}.attn.norm_added_q.{p}"},
    {"double_blocks.{i}.txt_attn_k_norm.{p}", "transformer_blocks.{i}.attn.norm_added_k.{p}"},
    {"double_blocks.{i}.txt_attn_proj.{p}", "transformer_blocks.{i}.attn.to_add_out.{p}"},
    {"double_blocks.{i}.txt_mlp.fc1.{p}", "transformer_blocks.{i}.ff_context.net.0.proj.{p}"},
    {"double_blocks.{i}.txt_mlp.fc2.{p}", "transformer_blocks.{i}.ff_context.net.2.{p}"},
    {"final_layer.linear.{p}", "proj_out.{p}"},
};

const std::vector<std::pair<std::string, std::vector<std::string>>> kDiffusersFused = {
    {"txt_in.individual_token_refiner.blocks.{i}.self_attn_qkv.{p}",
     {"context_embedder.token_refiner.refiner_blocks.{i}.attn.to_q.{p}",
      "context_embedder.token_refiner.refiner_blocks.{i}.attn.to_k.{p}",
      "context_embedder.token_refiner.refiner_blocks.{i}.attn.to_v.{p}"}},
    {"double_blocks.{i}.img_attn_qkv.{p}",
     {"transformer_blocks.{i}.attn.to_q.{p}", "transformer_blocks.{i}.attn.to_k.{p}",
      "transformer_blocks.{i}.attn.to_v.{p}"}},
    {"double_blocks.{i}.txt_attn_qkv.{p}",
     {"transformer_blocks.{i}.attn.add_q_proj.{p}", "transformer_blocks.{i}.attn.add_k_proj.{p}",
      "transformer_blocks.{i}.attn.add_v_proj.{p}"}},
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
    translate::add_nested(m.rules, "", "", kDiffusersRenames);
    for (const auto& [engine, keys] : kDiffusersFused) m.rules.push_back(Rule{engine, keys, Transform::Concat, 0});
    m.rules.push_back(Rule{"final_layer.adaLN_modulation.1.{p}", {"norm_out.linear.{p}"}, Transform::SwapHalves, 0});
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
    if (auto* t = info("img_in.proj.weight"); t && t->shape.size() == 5) {
      c.hidden_size = t->shape[0];
      c.concat_condition = false;  // the stored channel count is the embedded one
      c.in_channels = t->shape[1];
      c.patch_size = {t->shape[2], t->shape[3], t->shape[4]};
    }
    if (auto* t = info("txt_in.input_embedder.weight"); t && t->shape.size() == 2) c.text_states_dim = t->shape[1];
    auto count = [&](const std::string& prefix, const std::string& probe) {
      int64_t n = 0;
      while (info(prefix + std::to_string(n) + probe)) ++n;
      return n;
    };
    c.mm_double_blocks_depth = count("double_blocks.", ".img_mod.linear.weight");
    c.mm_single_blocks_depth = count("single_blocks.", ".modulation.linear.weight");
    c.guidance_embed = info("guidance_in.mlp.0.weight") != nullptr;
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
    if (auto* t = info("double_blocks.0.img_mlp.fc1.weight"); t && t->shape.size() == 2 && c.hidden_size > 0)
      c.mlp_width_ratio = static_cast<double>(t->shape[0]) / static_cast<double>(c.hidden_size);
    if (auto* t = info("double_blocks.0.img_attn_q_norm.weight"); t && t->shape.size() == 1 && t->shape[0] > 0 &&
                                                                  c.hidden_size % t->shape[0] == 0)
      c.heads_num = c.hidden_size / t->shape[0];
    if (auto* t = info("final_layer.linear.weight"); t && t->shape.size() == 2 && c.patch_volume() > 0)
      c.out_channels = t->shape[0] / c.patch_volume();
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
