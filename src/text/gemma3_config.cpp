#include "text/gemma3_config.h"

#include <algorithm>
#include <cmath>

#include "core/error.h"
#include "translate/config_fields.h"

namespace vidax::text {

using nlohmann::json;
using translate::value_or;

namespace {

Gemma3Rope read_one_rope(const json& p, const Gemma3Rope& fallback, const std::string& layer_type) {
  VIDAX_CHECK(p.is_object(), "Gemma3 config: rope_parameters." << layer_type << " must be an object, found " << p.dump());
  Gemma3Rope r = fallback;
  r.type = value_or<std::string>(p, "rope_type", value_or<std::string>(p, "type", "default"));
  r.theta = value_or<double>(p, "rope_theta", fallback.theta);
  VIDAX_CHECK(r.type == "default" || r.type == "linear",
              "Gemma3 config: rope_type '" << r.type << "' (" << layer_type << ") is not supported (default, linear)");
  r.factor = r.type == "linear" ? translate::required<double>(p, "factor") : 1.0;
  VIDAX_CHECK(r.theta > 0 && r.factor > 0, "Gemma3 config: " << layer_type << " rope_theta " << r.theta << " and factor "
                                                              << r.factor << " must be positive");
  VIDAX_CHECK(value_or<double>(p, "partial_rotary_factor", 1.0) == 1.0,
              "Gemma3 config: partial_rotary_factor != 1 is not supported");
  return r;
}

// transformers 5: rope_parameters {"full_attention": {...}, "sliding_attention": {...}}; before it:
// rope_theta (+ rope_scaling) for the full layers and rope_local_base_freq for the sliding ones.
void read_rope(const json& j, Gemma3Config& c) {
  const Gemma3Rope full_default{"default", 1000000.0, 1.0}, local_default{"default", 10000.0, 1.0};
  if (auto it = j.find("rope_parameters"); it != j.end() && !it->is_null()) {
    VIDAX_CHECK(it->is_object(), "Gemma3 config: rope_parameters must be an object, found " << it->dump());
    c.full_rope = read_one_rope(it->value("full_attention", json::object()), full_default, "full_attention");
    c.sliding_rope = read_one_rope(it->value("sliding_attention", json::object()), local_default, "sliding_attention");
    return;
  }
  json full = json::object();
  if (auto s = j.find("rope_scaling"); s != j.end() && !s->is_null()) full = *s;
  if (auto t = j.find("rope_theta"); t != j.end()) full["rope_theta"] = *t;
  c.full_rope = read_one_rope(full, full_default, "full_attention");
  json local = json::object();
  if (auto t = j.find("rope_local_base_freq"); t != j.end()) local["rope_theta"] = *t;
  c.sliding_rope = read_one_rope(local, local_default, "sliding_attention");
}

void read_layer_types(const json& j, Gemma3Config& c) {
  c.sliding.clear();
  if (auto it = j.find("layer_types"); it != j.end() && !it->is_null()) {
    VIDAX_CHECK(it->is_array() && static_cast<int64_t>(it->size()) == c.num_hidden_layers,
                "Gemma3 config: layer_types must list one type per layer (" << c.num_hidden_layers << "), found "
                                                                            << it->dump());
    for (const json& t : *it) {
      const std::string s = t.is_string() ? t.get<std::string>() : t.dump();
      VIDAX_CHECK(s == "sliding_attention" || s == "full_attention",
                  "Gemma3 config: layer type '" << s << "' is not supported (sliding_attention, full_attention)");
      c.sliding.push_back(s == "sliding_attention");
    }
    return;
  }
  const int64_t pattern = value_or<int64_t>(j, "sliding_window_pattern", 6);
  VIDAX_CHECK(pattern >= 1, "Gemma3 config: sliding_window_pattern " << pattern << " must be positive");
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) c.sliding.push_back((i + 1) % pattern != 0);
}

}  // namespace

Gemma3Config Gemma3Config::from_json(const json& in) {
  VIDAX_CHECK(in.is_object(), "Gemma3 config: expected a transformers Gemma3TextConfig object, found " << in.dump());
  const json& j = in.contains("text_config") ? in.at("text_config") : in;
  const std::string model_type = value_or<std::string>(j, "model_type", "gemma3_text");
  VIDAX_CHECK(model_type == "gemma3_text", "Gemma3 config: model_type '" << model_type << "' (expected gemma3_text)");
  Gemma3Config c;
  c.vocab_size = value_or<int64_t>(j, "vocab_size", c.vocab_size);
  c.hidden_size = value_or<int64_t>(j, "hidden_size", c.hidden_size);
  c.intermediate_size = value_or<int64_t>(j, "intermediate_size", c.intermediate_size);
  c.num_hidden_layers = value_or<int64_t>(j, "num_hidden_layers", c.num_hidden_layers);
  c.num_attention_heads = value_or<int64_t>(j, "num_attention_heads", c.num_attention_heads);
  c.num_key_value_heads = value_or<int64_t>(j, "num_key_value_heads", c.num_key_value_heads);
  c.head_dim = value_or<int64_t>(j, "head_dim", c.head_dim);
  c.query_pre_attn_scalar = value_or<int64_t>(j, "query_pre_attn_scalar", c.query_pre_attn_scalar);
  c.sliding_window = value_or<int64_t>(j, "sliding_window", c.sliding_window);
  c.rms_norm_eps = value_or<double>(j, "rms_norm_eps", c.rms_norm_eps);
  VIDAX_CHECK(c.vocab_size >= 1 && c.hidden_size >= 1 && c.intermediate_size >= 1 && c.num_hidden_layers >= 1 &&
                  c.query_pre_attn_scalar >= 1 && c.sliding_window >= 1,
              "Gemma3 config: vocab_size, hidden_size, intermediate_size, num_hidden_layers, query_pre_attn_scalar and "
              "sliding_window must be positive: " << j.dump());
  VIDAX_CHECK(c.num_attention_heads >= 1 && c.num_key_value_heads >= 1 &&
                  c.num_attention_heads % c.num_key_value_heads == 0,
              "Gemma3 config: num_attention_heads " << c.num_attention_heads
                                                    << " is not a multiple of num_key_value_heads " << c.num_key_value_heads);
  VIDAX_CHECK(c.head_dim >= 2 && c.head_dim % 2 == 0, "Gemma3 config: head_dim " << c.head_dim << " must be even");
  const std::string act = value_or<std::string>(j, "hidden_activation", "gelu_pytorch_tanh");
  VIDAX_CHECK(act == "gelu_pytorch_tanh",
              "Gemma3 config: hidden_activation '" << act << "' is not supported (gelu_pytorch_tanh)");
  VIDAX_CHECK(!j.contains("attn_logit_softcapping") || j.at("attn_logit_softcapping").is_null(),
              "Gemma3 config: attn_logit_softcapping " << j.at("attn_logit_softcapping").dump()
                                                       << " is not supported (null)");
  VIDAX_CHECK(!value_or<bool>(j, "use_bidirectional_attention", false),
              "Gemma3 config: use_bidirectional_attention true is not supported (causal)");
  VIDAX_CHECK(!value_or<bool>(j, "attention_bias", false), "Gemma3 config: attention_bias true is not supported");
  read_layer_types(j, c);
  read_rope(j, c);
  return c;
}

json Gemma3Config::to_json() const {
  auto rope = [](const Gemma3Rope& r) {
    json j = {{"rope_type", r.type}, {"rope_theta", r.theta}};
    if (r.type == "linear") j["factor"] = r.factor;
    return j;
  };
  json types = json::array();
  for (bool s : sliding) types.push_back(s ? "sliding_attention" : "full_attention");
  return {{"model_type", "gemma3_text"},
          {"vocab_size", vocab_size},
          {"hidden_size", hidden_size},
          {"intermediate_size", intermediate_size},
          {"num_hidden_layers", num_hidden_layers},
          {"num_attention_heads", num_attention_heads},
          {"num_key_value_heads", num_key_value_heads},
          {"head_dim", head_dim},
          {"query_pre_attn_scalar", query_pre_attn_scalar},
          {"sliding_window", sliding_window},
          {"rms_norm_eps", rms_norm_eps},
          {"hidden_activation", "gelu_pytorch_tanh"},
          {"layer_types", types},
          {"rope_parameters", {{"full_attention", rope(full_rope)}, {"sliding_attention", rope(sliding_rope)}}}};
}

translate::ParamSpec gemma3_params(const Gemma3Config& c) {
  translate::ParamSpec s;
  const int64_t d = c.hidden_size, dh = c.head_dim, q = c.num_attention_heads * dh, kv = c.num_key_value_heads * dh,
                f = c.intermediate_size;
  s.add("embed_tokens.weight", {c.vocab_size, d});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    for (const char* n : {"input_layernorm", "post_attention_layernorm", "pre_feedforward_layernorm",
                          "post_feedforward_layernorm"})
      s.add(p + n + ".weight", {d});
    s.add(p + "self_attn.q_proj.weight", {q, d});
    s.add(p + "self_attn.k_proj.weight", {kv, d});
    s.add(p + "self_attn.v_proj.weight", {kv, d});
    s.add(p + "self_attn.o_proj.weight", {d, q});
    s.add(p + "self_attn.q_norm.weight", {dh});
    s.add(p + "self_attn.k_norm.weight", {dh});
    s.add(p + "mlp.gate_proj.weight", {f, d});
    s.add(p + "mlp.up_proj.weight", {f, d});
    s.add(p + "mlp.down_proj.weight", {d, f});
  }
  s.add("norm.weight", {d});
  return s;
}

translate::KeyMap gemma3_keymap(const std::string& layout) {
  translate::KeyMap m;
  m.layout = layout;
  if (layout == "transformers") {
    m.rules.push_back(translate::key_rule("{name*}", "{name}"));
  } else if (layout == "causal-lm") {
    m.rules.push_back(translate::key_rule("{name*}", "model.{name}"));
    m.ignored = {"lm_head.weight"};
  } else if (layout == "multimodal") {
    m.rules.push_back(translate::key_rule("{name*}", "language_model.model.{name}"));
    m.ignored = {"language_model.lm_head.weight", "vision_tower.{rest*}", "multi_modal_projector.{rest*}"};
  } else if (layout == "multimodal-v5") {
    m.rules.push_back(translate::key_rule("{name*}", "model.language_model.{name}"));
    m.ignored = {"lm_head.weight", "model.vision_tower.{rest*}", "model.multi_modal_projector.{rest*}"};
  } else {
    throw Error(msg() << "gemma3-text-encoder: unknown layout '" << layout
                      << "' (transformers, causal-lm, multimodal, multimodal-v5)");
  }
  return m;
}

namespace {

class Gemma3Component : public translate::Component {
 public:
  std::string name() const override { return "gemma3-text-encoder"; }
  std::string family() const override { return "gemma3"; }
  std::vector<std::string> layouts() const override {
    return {"transformers", "causal-lm", "multimodal", "multimodal-v5"};
  }
  translate::Json default_config() const override { return gemma_12b().to_json(); }
  std::optional<translate::Json> read_config(const translate::Json& j) const override {
    const translate::Json& t = j.is_object() && j.contains("text_config") ? j.at("text_config") : j;
    if (!t.is_object() || value_or<std::string>(t, "model_type", "") != "gemma3_text") return std::nullopt;
    return Gemma3Config::from_json(t).to_json();
  }
  translate::Json infer_config(const translate::TensorSource& src, const std::string& layout) const override {
    const translate::KeyMap m = gemma3_keymap(layout);
    Gemma3Config c = gemma_12b();
    if (auto* t = translate::find_param(src, m, "embed_tokens.weight"); t && t->shape.size() == 2) {
      c.vocab_size = t->shape[0];
      c.hidden_size = t->shape[1];
    }
    if (auto* t = translate::find_param(src, m, "layers.0.mlp.gate_proj.weight"); t && t->shape.size() == 2)
      c.intermediate_size = t->shape[0];
    int64_t n = 0;
    while (translate::find_param(src, m, "layers." + std::to_string(n) + ".self_attn.q_proj.weight")) ++n;
    if (n > 0 && n != c.num_hidden_layers) {
      c.num_hidden_layers = n;  // the layer types follow Gemma-3's pattern (every 6th full)
      c.sliding.clear();
      for (int64_t i = 0; i < n; ++i) c.sliding.push_back((i + 1) % 6 != 0);
    }
    // q_norm's width is head_dim: the head counts follow from the projections.
    const auto* qn = translate::find_param(src, m, "layers.0.self_attn.q_norm.weight");
    const auto* q = translate::find_param(src, m, "layers.0.self_attn.q_proj.weight");
    const auto* k = translate::find_param(src, m, "layers.0.self_attn.k_proj.weight");
    if (qn && q && k && qn->shape.size() == 1 && qn->shape[0] > 0) {
      c.head_dim = qn->shape[0];
      c.num_attention_heads = q->shape[0] / c.head_dim;
      c.num_key_value_heads = std::max<int64_t>(1, k->shape[0] / c.head_dim);
    }
    return c.to_json();
  }
  translate::ParamSpec params(const translate::Json& cfg) const override {
    return gemma3_params(Gemma3Config::from_json(cfg));
  }
  translate::KeyMap keymap(const std::string& layout, const translate::Json&) const override {
    return gemma3_keymap(layout);
  }
  std::string variant(const translate::Json& cfg) const override {
    return Gemma3Config::from_json(cfg) == gemma_12b() ? "gemma-3-12b" : "custom";
  }

 private:
  // Gemma-3-12B (the struct's defaults), its 48 layer types from the pattern.
  static Gemma3Config gemma_12b() { return Gemma3Config::from_json({{"model_type", "gemma3_text"}, {"rope_scaling", {{"rope_type", "linear"}, {"factor", 8.0}}}}); }
};

}  // namespace

const translate::Component& gemma3_component() {
  static const Gemma3Component c;
  return c;
}

// transformers' compute_default_rope_parameters op by op in fp32 (torch.arange(0, dim, 2).float() /
// dim, base ** that, 1.0 / that), then _compute_linear_scaling_rope_parameters' inv_freq / factor.
std::vector<float> Gemma3Rope::inv_freq(int64_t head_dim) const {
  const int64_t half = head_dim / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv[i] = 1.0f / std::pow(static_cast<float>(theta), e);
    if (type == "linear") inv[i] /= static_cast<float>(factor);
  }
  return inv;
}

}  // namespace vidax::text
