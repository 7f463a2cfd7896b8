#include "models/hunyuan/checkpoint_keys.h"

#include "translate/config_fields.h"

namespace vidax::hunyuan {

using translate::Json;
using translate::KeyMap;
using translate::ParamSpec;
using translate::Rule;
using translate::Transform;

namespace {

void linear(ParamSpec& s, const std::string& n, int64_t out, int64_t in, bool bias = true) {
  s.add(n + ".weight", {out, in});
  if (bias) s.add(n + ".bias", {out});
}

void layer_norm(ParamSpec& s, const std::string& n, int64_t width) {
  s.add(n + ".weight", {width});
  s.add(n + ".bias", {width});
}

void qk_norm(ParamSpec& s, const std::string& n, const DiTFields& c) {  // RMSNorm: weight; LayerNorm: weight and bias
  if (!c.qk_norm) return;
  s.add(n + ".weight", {c.head_dim()});
  if (c.qk_norm_type == "layer") s.add(n + ".bias", {c.head_dim()});
}

}  // namespace

void add_timestep_embedder_params(ParamSpec& s, const std::string& name, int64_t d) {
  linear(s, name + ".mlp.0", d, 256);  // TimestepEmbedder.mlp: Linear, SiLU, Linear
  linear(s, name + ".mlp.2", d, d);
}

void add_text_in_params(ParamSpec& s, const DiTFields& c) {
  const int64_t d = c.hidden_size;
  if (c.text_projection == "linear") {  // TextProjection
    linear(s, "txt_in.linear_1", d, c.text_states_dim);
    linear(s, "txt_in.linear_2", d, d);
    return;
  }
  // SingleTokenRefiner
  linear(s, "txt_in.input_embedder", d, c.text_states_dim);
  add_timestep_embedder_params(s, "txt_in.t_embedder", d);
  linear(s, "txt_in.c_embedder.linear_1", d, c.text_states_dim);
  linear(s, "txt_in.c_embedder.linear_2", d, d);
  for (int64_t i = 0; i < c.refiner_depth; ++i) {
    const std::string b = "txt_in.individual_token_refiner.blocks." + std::to_string(i) + ".";
    layer_norm(s, b + "norm1", d);
    linear(s, b + "self_attn_qkv", 3 * d, d);
    linear(s, b + "self_attn_proj", d, d);
    layer_norm(s, b + "norm2", d);
    linear(s, b + "mlp.fc1", 4 * d, d);  // mlp_width_ratio 4.0, the refiner's own
    linear(s, b + "mlp.fc2", d, 4 * d);
    linear(s, b + "adaLN_modulation.1", 2 * d, d);
  }
}

void add_block_params(ParamSpec& s, const DiTFields& c) {
  const int64_t d = c.hidden_size, mlp = c.mlp_hidden();
  for (int64_t i = 0; i < c.mm_double_blocks_depth; ++i) {
    const std::string b = "double_blocks." + std::to_string(i) + ".";
    for (const char* stream : {"img", "txt"}) {
      const std::string p = b + stream;
      linear(s, p + "_mod.linear", 6 * d, d);
      linear(s, p + "_attn_qkv", 3 * d, d, c.qkv_bias);
      qk_norm(s, p + "_attn_q_norm", c);
      qk_norm(s, p + "_attn_k_norm", c);
      linear(s, p + "_attn_proj", d, d, c.qkv_bias);
      linear(s, p + "_mlp.fc1", mlp, d);
      linear(s, p + "_mlp.fc2", d, mlp);
    }
  }
  for (int64_t i = 0; i < c.mm_single_blocks_depth; ++i) {
    const std::string b = "single_blocks." + std::to_string(i) + ".";
    linear(s, b + "linear1", 3 * d + mlp, d);
    linear(s, b + "linear2", d, d + mlp);
    qk_norm(s, b + "q_norm", c);
    qk_norm(s, b + "k_norm", c);
    linear(s, b + "modulation.linear", 3 * d, d);
  }
}

void add_final_layer_params(ParamSpec& s, const DiTFields& c) {
  linear(s, "final_layer.linear", c.patch_volume() * c.out_channels, c.hidden_size);
  linear(s, "final_layer.adaLN_modulation.1", 2 * c.hidden_size, c.hidden_size);
}

ParamSpec dit_params(const DiTConfig& c) {
  ParamSpec s;
  const int64_t d = c.hidden_size;
  const auto [pt, ph, pw] = c.patch_size;
  s.add("img_in.proj.weight", {d, c.in_channels, pt, ph, pw});
  s.add("img_in.proj.bias", {d});
  add_text_in_params(s, c);
  add_timestep_embedder_params(s, "time_in", d);
  linear(s, "vector_in.in_layer", d, c.text_states_dim_2);
  linear(s, "vector_in.out_layer", d, d);
  if (c.guidance_embed) add_timestep_embedder_params(s, "guidance_in", d);
  add_block_params(s, c);
  add_final_layer_params(s, c);
  return s;
}

namespace {

// engine <- diffusers, one-to-one renames ({p} = weight | bias), of the modules both diffusers
// classes spell alike.
const translate::SuffixTable kDiffusersSharedRenames = {
    {"img_in.proj.{p}", "x_embedder.proj.{p}"},
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

// engine <- the concatenation (dim 0) of diffusers' separate projections, likewise shared.
const std::vector<std::pair<std::string, std::vector<std::string>>> kDiffusersSharedFused = {
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

// 1.0's own (HunyuanVideoTransformer3DModel): the conditioning embedders and the single blocks.
const translate::SuffixTable kDiffusersRenames = {
    {"time_in.mlp.0.{p}", "time_text_embed.timestep_embedder.linear_1.{p}"},
    {"time_in.mlp.2.{p}", "time_text_embed.timestep_embedder.linear_2.{p}"},
    {"vector_in.in_layer.{p}", "time_text_embed.text_embedder.linear_1.{p}"},
    {"vector_in.out_layer.{p}", "time_text_embed.text_embedder.linear_2.{p}"},
    {"guidance_in.mlp.0.{p}", "time_text_embed.guidance_embedder.linear_1.{p}"},
    {"guidance_in.mlp.2.{p}", "time_text_embed.guidance_embedder.linear_2.{p}"},
    {"single_blocks.{i}.linear2.{p}", "single_transformer_blocks.{i}.proj_out.{p}"},
    {"single_blocks.{i}.q_norm.{p}", "single_transformer_blocks.{i}.attn.norm_q.{p}"},
    {"single_blocks.{i}.k_norm.{p}", "single_transformer_blocks.{i}.attn.norm_k.{p}"},
    {"single_blocks.{i}.modulation.linear.{p}", "single_transformer_blocks.{i}.norm.linear.{p}"},
};

const Rule kDiffusersLinear1{"single_blocks.{i}.linear1.{p}",
                             {"single_transformer_blocks.{i}.attn.to_q.{p}", "single_transformer_blocks.{i}.attn.to_k.{p}",
                              "single_transformer_blocks.{i}.attn.to_v.{p}", "single_transformer_blocks.{i}.proj_mlp.{p}"},
                             Transform::Concat,
                             0};

}  // namespace

void add_diffusers_shared_rules(std::vector<Rule>& rules) {
  translate::add_nested(rules, "", "", kDiffusersSharedRenames);
  for (const auto& [engine, keys] : kDiffusersSharedFused) rules.push_back(Rule{engine, keys, Transform::Concat, 0});
  // FinalLayer.adaLN_modulation chunks (shift, scale); diffusers' norm_out (AdaLayerNormContinuous)
  // chunks (scale, shift): the converter swaps the halves.
  rules.push_back(Rule{"final_layer.adaLN_modulation.1.{p}", {"norm_out.linear.{p}"}, Transform::SwapHalves, 0});
}

KeyMap dit_keymap(const std::string& layout) {
  if (layout == "original") return translate::original_identity();
  // The official mp_rank_00_model_states.pt: the state dict under "module" (inference.py's
  // load_state_dict with --load-key module), which the .pt reader flattens to "module.<name>".
  if (layout == "module") return translate::with_key_prefix(translate::original_identity(), "module.", "module");
  if (layout == "diffusers") {
    KeyMap m{"diffusers", {}, {}};
    add_diffusers_shared_rules(m.rules);
    translate::add_nested(m.rules, "", "", kDiffusersRenames);
    m.rules.push_back(kDiffusersLinear1);
    return m;
  }
  throw Error(msg() << "hunyuanvideo-dit: unknown layout '" << layout << "' (original, module, diffusers)");
}

void infer_shared_fields(const translate::TensorSource& src, const KeyMap& m, DiTFields& c) {
  auto info = [&](const std::string& n) { return translate::find_param(src, m, n); };
  if (auto* t = info("img_in.proj.weight"); t && t->shape.size() == 5) {
    c.hidden_size = t->shape[0];
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
  if (auto* t = info("double_blocks.0.img_mlp.fc1.weight"); t && t->shape.size() == 2 && c.hidden_size > 0)
    c.mlp_width_ratio = static_cast<double>(t->shape[0]) / static_cast<double>(c.hidden_size);
  // The checkpoint does not store the head count: the q norm's width is the head dim.
  if (auto* t = info("double_blocks.0.img_attn_q_norm.weight"); t && t->shape.size() == 1 && t->shape[0] > 0 &&
                                                                c.hidden_size % t->shape[0] == 0)
    c.heads_num = c.hidden_size / t->shape[0];
  if (auto* t = info("final_layer.linear.weight"); t && t->shape.size() == 2 && c.patch_volume() > 0)
    c.out_channels = t->shape[0] / c.patch_volume();
}

namespace {

class DitComponent : public translate::Component {
 public:
  std::string name() const override { return "hunyuanvideo-dit"; }
  std::string family() const override { return "hunyuanvideo"; }
  std::vector<std::string> layouts() const override { return {"original", "module", "diffusers"}; }
  Json default_config() const override { return DiTConfig::t2v_720p().to_json(); }
  std::optional<Json> read_config(const Json& j) const override {
    const bool ours = (translate::has(j, "_class_name") && j["_class_name"] == "HunyuanVideoTransformer3DModel") ||
                      translate::has(j, "mm_double_blocks_depth") || translate::has(j, "heads_num");
    if (!ours) return std::nullopt;
    return DiTConfig::from_json(j).to_json();
  }
  Json infer_config(const translate::TensorSource& src, const std::string& layout) const override {
    const KeyMap m = dit_keymap(layout);
    DiTConfig c = DiTConfig::t2v_720p();
    infer_shared_fields(src, m, c);
    if (auto* t = translate::find_param(src, m, "vector_in.in_layer.weight"); t && t->shape.size() == 2)
      c.text_states_dim_2 = t->shape[1];
    return c.to_json();
  }
  ParamSpec params(const Json& cfg) const override { return dit_params(DiTConfig::from_json(cfg)); }
  KeyMap keymap(const std::string& layout, const Json&) const override { return dit_keymap(layout); }
  std::string variant(const Json& cfg) const override {
    DiTConfig c = DiTConfig::from_json(cfg);
    c.layout = DiTLayout::Original;
    return c == DiTConfig::t2v_720p() ? "t2v-720p" : "custom";
  }
};

}  // namespace

const translate::Component& dit_component() {
  static const DitComponent c;
  return c;
}

}  // namespace vidax::hunyuan
