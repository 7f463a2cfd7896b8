#include "text/llama_config.h"

#include <algorithm>
#include <cmath>

#include "translate/config_fields.h"

namespace vidax::text {

using nlohmann::json;
using translate::has;
using translate::value_or;

namespace {

// transformers 5 writes rope_parameters {rope_type, rope_theta, ...}; older configs rope_theta
// plus rope_scaling (null, or {"type"|"rope_type", factor, ...}).
void read_rope(const json& j, LlamaConfig& c) {
  json rope = json::object();
  if (auto it = j.find("rope_parameters"); it != j.end() && !it->is_null()) {
    rope = *it;
  } else {
    if (auto s = j.find("rope_scaling"); s != j.end() && !s->is_null()) rope = *s;
    if (!rope.contains("rope_type") && rope.contains("type")) rope["rope_type"] = rope["type"];
    if (auto t = j.find("rope_theta"); t != j.end()) rope["rope_theta"] = *t;
  }
  VIDAX_CHECK(rope.is_object(), "Llama config: rope_parameters must be an object, found " << rope.dump());
  c.rope_theta = value_or<double>(rope, "rope_theta", c.rope_theta);
  c.rope_type = value_or<std::string>(rope, "rope_type", "default");
  VIDAX_CHECK(c.rope_type == "default" || c.rope_type == "llama3",
              "Llama config: rope_type '" << c.rope_type << "' is not supported (default, llama3)");
  VIDAX_CHECK(value_or<double>(rope, "partial_rotary_factor", 1.0) == 1.0,
              "Llama config: partial_rotary_factor != 1 is not supported");
  if (c.rope_type == "llama3") {
    c.rope_factor = translate::required<double>(rope, "factor");
    c.low_freq_factor = translate::required<double>(rope, "low_freq_factor");
    c.high_freq_factor = translate::required<double>(rope, "high_freq_factor");
    c.original_max_position_embeddings = translate::required<int64_t>(rope, "original_max_position_embeddings");
    VIDAX_CHECK(c.high_freq_factor != c.low_freq_factor,
                "Llama config: llama3 rope with high_freq_factor == low_freq_factor");
  }
  VIDAX_CHECK(c.rope_theta > 0, "Llama config: rope_theta " << c.rope_theta << " must be positive");
}

}  // namespace

LlamaConfig LlamaConfig::from_json(const json& in) {
  VIDAX_CHECK(in.is_object(), "Llama config: expected a transformers LlamaConfig object, found " << in.dump());
  const json& j = in.contains("text_config") ? in.at("text_config") : in;  // a LLaVA config's text half
  const std::string model_type = value_or<std::string>(j, "model_type", "llama");
  VIDAX_CHECK(model_type == "llama", "Llama config: model_type '" << model_type << "' (expected llama)");
  LlamaConfig c;
  c.vocab_size = value_or<int64_t>(j, "vocab_size", c.vocab_size);
  c.hidden_size = value_or<int64_t>(j, "hidden_size", c.hidden_size);
  c.intermediate_size = value_or<int64_t>(j, "intermediate_size", c.intermediate_size);
  c.num_hidden_layers = value_or<int64_t>(j, "num_hidden_layers", c.num_hidden_layers);
  c.num_attention_heads = value_or<int64_t>(j, "num_attention_heads", c.num_attention_heads);
  // LlamaConfig's own defaults: num_key_value_heads = num_attention_heads, head_dim = hidden / heads.
  c.num_key_value_heads = value_or<int64_t>(j, "num_key_value_heads", c.num_attention_heads);
  VIDAX_CHECK(c.num_attention_heads >= 1 && c.num_key_value_heads >= 1 &&
                  c.num_attention_heads % c.num_key_value_heads == 0,
              "Llama config: num_attention_heads " << c.num_attention_heads << " is not a multiple of num_key_value_heads "
                                                   << c.num_key_value_heads);
  c.head_dim = value_or<int64_t>(j, "head_dim", c.hidden_size / c.num_attention_heads);
  VIDAX_CHECK(c.head_dim >= 2 && c.head_dim % 2 == 0, "Llama config: head_dim " << c.head_dim << " must be even");
  c.max_position_embeddings = value_or<int64_t>(j, "max_position_embeddings", c.max_position_embeddings);
  c.rms_norm_eps = value_or<double>(j, "rms_norm_eps", c.rms_norm_eps);
  c.attention_bias = value_or<bool>(j, "attention_bias", c.attention_bias);
  c.mlp_bias = value_or<bool>(j, "mlp_bias", c.mlp_bias);
  c.o_proj_bias = c.attention_bias;  // LlamaAttention: one flag for all four projections
  const std::string act = value_or<std::string>(j, "hidden_act", "silu");
  VIDAX_CHECK(act == "silu", "Llama config: hidden_act '" << act << "' is not supported (silu)");
  const int64_t tp = value_or<int64_t>(j, "pretraining_tp", 1);
  VIDAX_CHECK(tp == 1, "Llama config: pretraining_tp " << tp << " is not supported (1)");
  VIDAX_CHECK(c.vocab_size >= 1 && c.hidden_size >= 1 && c.intermediate_size >= 1 && c.num_hidden_layers >= 1,
              "Llama config: vocab_size, hidden_size, intermediate_size and num_hidden_layers must be positive: "
                  << j.dump());
  read_rope(j, c);
  return c;
}

json LlamaConfig::to_json() const {
  json rope = {{"rope_type", rope_type}, {"rope_theta", rope_theta}};
  if (rope_type == "llama3") {
    rope["factor"] = rope_factor;
    rope["low_freq_factor"] = low_freq_factor;
    rope["high_freq_factor"] = high_freq_factor;
    rope["original_max_position_embeddings"] = original_max_position_embeddings;
  }
  return {{"model_type", "llama"},
          {"vocab_size", vocab_size},
          {"hidden_size", hidden_size},
          {"intermediate_size", intermediate_size},
          {"num_hidden_layers", num_hidden_layers},
          {"num_attention_heads", num_attention_heads},
          {"num_key_value_heads", num_key_value_heads},
          {"head_dim", head_dim},
          {"max_position_embeddings", max_position_embeddings},
          {"rms_norm_eps", rms_norm_eps},
          {"attention_bias", attention_bias},
          {"mlp_bias", mlp_bias},
          {"hidden_act", "silu"},
          {"rope_parameters", rope}};
}

// transformers' compute_default_rope_parameters / _compute_llama3_parameters, op by op in fp32
// (torch.arange(0, dim, 2).float() / dim, base ** that, 1.0 / that; the llama3 bands on
// wavelen = 2 pi / inv_freq), so that the angles are the reference's to the last bits.
std::vector<float> LlamaConfig::inv_freq() const {
  const int64_t half = head_dim / 2;
  std::vector<float> inv(static_cast<size_t>(half));
  for (int64_t i = 0; i < half; ++i) {
    const float e = static_cast<float>(2 * i) / static_cast<float>(head_dim);
    inv[i] = 1.0f / std::pow(static_cast<float>(rope_theta), e);
  }
  if (rope_type != "llama3") return inv;
  const double low_wavelen = static_cast<double>(original_max_position_embeddings) / low_freq_factor;
  const double high_wavelen = static_cast<double>(original_max_position_embeddings) / high_freq_factor;
  const auto f = [](double v) { return static_cast<float>(v); };
  for (float& v : inv) {
    const float wavelen = (1.0f / v) * f(2 * M_PI);
    const float scaled = wavelen > low_wavelen ? v / f(rope_factor) : v;
    const float smooth = (f(static_cast<double>(original_max_position_embeddings)) * (1.0f / wavelen) - f(low_freq_factor)) /
                         f(high_freq_factor - low_freq_factor);
    const float smoothed = (1.0f - smooth) * scaled / f(rope_factor) + smooth * scaled;
    const bool medium = !(wavelen < high_wavelen) && !(wavelen > low_wavelen);
    v = medium ? smoothed : scaled;
  }
  return inv;
}

translate::ParamSpec llama_params(const LlamaConfig& c) {
  translate::ParamSpec s;
  const int64_t d = c.hidden_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim,
                f = c.intermediate_size;
  s.add("embed_tokens.weight", {c.vocab_size, d});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    s.add(p + "input_layernorm.weight", {d});
    s.add(p + "self_attn.q_proj.weight", {q, d});
    s.add(p + "self_attn.k_proj.weight", {kv, d});
    s.add(p + "self_attn.v_proj.weight", {kv, d});
    s.add(p + "self_attn.o_proj.weight", {d, q});
    if (c.attention_bias) {
      s.add(p + "self_attn.q_proj.bias", {q});
      s.add(p + "self_attn.k_proj.bias", {kv});
      s.add(p + "self_attn.v_proj.bias", {kv});
    }
    if (c.o_proj_bias) s.add(p + "self_attn.o_proj.bias", {d});
    s.add(p + "post_attention_layernorm.weight", {d});
    s.add(p + "mlp.gate_proj.weight", {f, d});
    s.add(p + "mlp.up_proj.weight", {f, d});
    s.add(p + "mlp.down_proj.weight", {d, f});
    if (c.mlp_bias) {
      s.add(p + "mlp.gate_proj.bias", {f});
      s.add(p + "mlp.up_proj.bias", {f});
      s.add(p + "mlp.down_proj.bias", {d});
    }
  }
  s.add("norm.weight", {d});
  return s;
}

translate::KeyMap llama_keymap(const std::string& layout) {
  VIDAX_CHECK(layout == "transformers" || layout == "causal-lm",
              "llama-text-encoder: unknown layout '" << layout << "' (transformers, causal-lm)");
  translate::KeyMap m;
  m.layout = layout;
  if (layout == "transformers") {
    m.rules.push_back(translate::key_rule("{name*}", "{name}"));
  } else {
    m.rules.push_back(translate::key_rule("{name*}", "model.{name}"));
    m.ignored = {"lm_head.weight"};  // the LM head: an encoder never reads it
  }
  return m;
}

namespace {

int64_t count_llama_layers(const translate::TensorSource& src, const translate::KeyMap& m) {
  int64_t n = 0;
  while (translate::find_param(src, m, "layers." + std::to_string(n) + ".self_attn.q_proj.weight")) ++n;
  return n;
}

class LlamaComponent : public translate::Component {
 public:
  std::string name() const override { return "llama-text-encoder"; }
  std::string family() const override { return "llama"; }
  std::vector<std::string> layouts() const override { return {"transformers", "causal-lm"}; }
  translate::Json default_config() const override { return LlamaConfig::llava_llama3_8b().to_json(); }
  std::optional<translate::Json> read_config(const translate::Json& j) const override {
    // A config.json, a LLaVA config's text_config, or a hunyuan.text.llama golden's text_encoder_config.
    const translate::Json& m = has(j, "text_encoder_config") ? j.at("text_encoder_config") : j;
    const translate::Json& t = has(m, "text_config") ? m.at("text_config") : m;
    if (!t.is_object() || value_or<std::string>(t, "model_type", "") != "llama") return std::nullopt;
    return LlamaConfig::from_json(t).to_json();
  }
  translate::Json infer_config(const translate::TensorSource& src, const std::string& layout) const override {
    const translate::KeyMap m = llama_keymap(layout);
    LlamaConfig c;
    if (auto* t = translate::find_param(src, m, "embed_tokens.weight"); t && t->shape.size() == 2) {
      c.vocab_size = t->shape[0];
      c.hidden_size = t->shape[1];
    }
    if (auto* t = translate::find_param(src, m, "layers.0.mlp.gate_proj.weight"); t && t->shape.size() == 2)
      c.intermediate_size = t->shape[0];
    if (const int64_t n = count_llama_layers(src, m); n > 0) c.num_hidden_layers = n;
    c.attention_bias = translate::find_param(src, m, "layers.0.self_attn.q_proj.bias") != nullptr;
    c.o_proj_bias = c.attention_bias;
    c.mlp_bias = translate::find_param(src, m, "layers.0.mlp.gate_proj.bias") != nullptr;
    // The head counts are not in the shapes: Llama-3's head_dim 128 when the widths fit it.
    const auto* q = translate::find_param(src, m, "layers.0.self_attn.q_proj.weight");
    const auto* k = translate::find_param(src, m, "layers.0.self_attn.k_proj.weight");
    if (q && k && q->shape.size() == 2 && k->shape.size() == 2) {
      if (q->shape[0] % c.head_dim != 0 || k->shape[0] % c.head_dim != 0) c.head_dim = q->shape[0];  // one head
      c.num_attention_heads = q->shape[0] / c.head_dim;
      c.num_key_value_heads = std::max<int64_t>(1, k->shape[0] / c.head_dim);
    }
    return c.to_json();
  }
  translate::ParamSpec params(const translate::Json& cfg) const override {
    return llama_params(LlamaConfig::from_json(cfg));
  }
  translate::KeyMap keymap(const std::string& layout, const translate::Json&) const override {
    return llama_keymap(layout);
  }
  std::string variant(const translate::Json& cfg) const override {
    return LlamaConfig::from_json(cfg) == LlamaConfig::llava_llama3_8b() ? "llava-llama-3-8b" : "custom";
  }
};

}  // namespace

const translate::Component& llama_component() {
  static const LlamaComponent c;
  return c;
}

}  // namespace vidax::text
