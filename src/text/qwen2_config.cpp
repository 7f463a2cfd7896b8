#include "text/qwen2_config.h"

#include <algorithm>
#include <numeric>

#include "translate/config_fields.h"

namespace vidax::text {

using nlohmann::json;
using translate::has;
using translate::value_or;

namespace {

constexpr const char* kWhat = "Qwen2.5-VL text config";

// rope_parameters (transformers 5) or rope_theta + rope_scaling (as published); "mrope" is the
// published rope_scaling's type, which transformers reads as the default rotation + mrope_section.
void read_rope(const json& j, Qwen25VLTextConfig& c) {
  json rope = json::object();
  if (auto it = j.find("rope_parameters"); it != j.end() && !it->is_null()) {
    rope = *it;
  } else {
    if (auto s = j.find("rope_scaling"); s != j.end() && !s->is_null()) rope = *s;
    if (!rope.contains("rope_type") && rope.contains("type")) rope["rope_type"] = rope["type"];
    if (auto t = j.find("rope_theta"); t != j.end()) rope["rope_theta"] = *t;
  }
  VIDAX_CHECK(rope.is_object(), kWhat << ": rope_parameters must be an object, found " << rope.dump());
  const std::string type = value_or<std::string>(rope, "rope_type", "default");
  VIDAX_CHECK(type == "default" || type == "mrope",
              kWhat << ": rope_type '" << type << "' is not supported (default, or mrope as published)");
  c.llama.rope_type = "default";
  c.llama.rope_theta = value_or<double>(rope, "rope_theta", 1000000.0);
  VIDAX_CHECK(c.llama.rope_theta > 0, kWhat << ": rope_theta " << c.llama.rope_theta << " must be positive");
  c.mrope_section = value_or<std::vector<int64_t>>(rope, "mrope_section", {16, 24, 24});
}

}  // namespace

Qwen25VLTextConfig Qwen25VLTextConfig::qwen25_vl_7b() {
  Qwen25VLTextConfig c;
  LlamaConfig& l = c.llama;
  l.vocab_size = 152064;
  l.hidden_size = 3584;
  l.intermediate_size = 18944;
  l.num_hidden_layers = 28;
  l.num_attention_heads = 28;
  l.num_key_value_heads = 4;
  l.head_dim = 128;
  l.max_position_embeddings = 128000;
  l.rms_norm_eps = 1e-6;
  l.rope_type = "default";
  l.rope_theta = 1000000.0;
  l.attention_bias = true;  // q, k, v
  l.o_proj_bias = false;
  l.mlp_bias = false;
  return c;
}

Qwen25VLTextConfig Qwen25VLTextConfig::from_json(const json& in) {
  VIDAX_CHECK(in.is_object(), kWhat << ": expected a Qwen2.5-VL config object, found " << in.dump());
  const json& j = has(in, "text_config") ? in.at("text_config") : in;
  const std::string model_type = value_or<std::string>(j, "model_type", value_or<std::string>(in, "model_type", ""));
  VIDAX_CHECK(model_type == "qwen2_5_vl" || model_type == "qwen2_5_vl_text",
              kWhat << ": model_type '" << model_type << "' (expected qwen2_5_vl or qwen2_5_vl_text)");
  // A field left out takes Qwen2_5_VLTextConfig's default (transformers reads the file so), not the 7B's.
  Qwen25VLTextConfig d = qwen25_vl_7b();
  d.llama.hidden_size = 8192;
  d.llama.intermediate_size = 29568;
  d.llama.num_hidden_layers = 80;
  d.llama.num_attention_heads = 64;
  d.llama.max_position_embeddings = 32768;
  d.llama.rms_norm_eps = 1e-5;
  Qwen25VLTextConfig c = d;
  LlamaConfig& l = c.llama;
  l.vocab_size = value_or<int64_t>(j, "vocab_size", d.llama.vocab_size);
  l.hidden_size = value_or<int64_t>(j, "hidden_size", d.llama.hidden_size);
  l.intermediate_size = value_or<int64_t>(j, "intermediate_size", d.llama.intermediate_size);
  l.num_hidden_layers = value_or<int64_t>(j, "num_hidden_layers", d.llama.num_hidden_layers);
  l.num_attention_heads = value_or<int64_t>(j, "num_attention_heads", d.llama.num_attention_heads);
  // num_key_value_heads: 8 when absent, = the heads when null (Qwen2_5_VLTextConfig.__post_init__).
  if (auto it = j.find("num_key_value_heads"); it == j.end())
    l.num_key_value_heads = 8;
  else
    l.num_key_value_heads = it->is_null() ? l.num_attention_heads
                                          : translate::strict_get<int64_t>(*it, "num_key_value_heads");
  l.max_position_embeddings = value_or<int64_t>(j, "max_position_embeddings", d.llama.max_position_embeddings);
  l.rms_norm_eps = value_or<double>(j, "rms_norm_eps", d.llama.rms_norm_eps);
  VIDAX_CHECK(l.vocab_size >= 1 && l.hidden_size >= 1 && l.intermediate_size >= 1 && l.num_hidden_layers >= 1,
              kWhat << ": vocab_size, hidden_size, intermediate_size and num_hidden_layers must be positive");
  VIDAX_CHECK(l.num_attention_heads >= 1 && l.hidden_size % l.num_attention_heads == 0,
              kWhat << ": hidden_size " << l.hidden_size << " is not divisible by num_attention_heads "
                    << l.num_attention_heads);
  VIDAX_CHECK(l.num_key_value_heads >= 1 && l.num_attention_heads % l.num_key_value_heads == 0,
              kWhat << ": num_attention_heads " << l.num_attention_heads << " is not a multiple of num_key_value_heads "
                    << l.num_key_value_heads);
  // Qwen2_5_VLAttention: head_dim = hidden_size // num_heads (a head_dim field is not read).
  l.head_dim = l.hidden_size / l.num_attention_heads;
  VIDAX_CHECK(l.head_dim % 2 == 0, kWhat << ": head_dim " << l.head_dim << " (hidden_size / heads) must be even");
  const std::string act = value_or<std::string>(j, "hidden_act", "silu");
  VIDAX_CHECK(act == "silu", kWhat << ": hidden_act '" << act << "' is not supported (silu)");
  VIDAX_CHECK(!value_or<bool>(j, "use_sliding_window", false),
              kWhat << ": use_sliding_window true is not supported (Qwen2.5-VL ships it false)");
  if (auto it = j.find("layer_types"); it != j.end() && it->is_array())
    for (const json& t : *it)
      VIDAX_CHECK(t == "full_attention", kWhat << ": layer type " << t.dump() << " is not supported (full_attention)");
  read_rope(j, c);
  VIDAX_CHECK(c.mrope_section.size() == 3 && std::all_of(c.mrope_section.begin(), c.mrope_section.end(),
                                                          [](int64_t s) { return s >= 1; }),
              kWhat << ": mrope_section must be three positive sizes (temporal, height, width), found "
                    << json(c.mrope_section).dump());
  const int64_t sum = std::accumulate(c.mrope_section.begin(), c.mrope_section.end(), int64_t{0});
  VIDAX_CHECK(sum == l.head_dim / 2, kWhat << ": mrope_section " << json(c.mrope_section).dump() << " sums to " << sum
                                           << ", not head_dim / 2 = " << l.head_dim / 2);
  return c;
}

json Qwen25VLTextConfig::to_json() const {
  const LlamaConfig& l = llama;
  return {{"model_type", "qwen2_5_vl_text"},
          {"vocab_size", l.vocab_size},
          {"hidden_size", l.hidden_size},
          {"intermediate_size", l.intermediate_size},
          {"num_hidden_layers", l.num_hidden_layers},
          {"num_attention_heads", l.num_attention_heads},
          {"num_key_value_heads", l.num_key_value_heads},
          {"max_position_embeddings", l.max_position_embeddings},
          {"rms_norm_eps", l.rms_norm_eps},
          {"hidden_act", "silu"},
          {"use_sliding_window", false},
          {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", l.rope_theta}, {"mrope_section", mrope_section}}}};
}

translate::ParamSpec qwen25_vl_text_params(const Qwen25VLTextConfig& c) { return llama_params(c.llama); }

translate::KeyMap qwen25_vl_text_keymap(const std::string& layout) {
  translate::KeyMap m;
  m.layout = layout;
  if (layout == "transformers") {
    m.rules.push_back(translate::key_rule("{name*}", "{name}"));
  } else if (layout == "qwen2.5-vl") {
    m.rules.push_back(translate::key_rule("{name*}", "model.{name}"));
    m.ignored = {"lm_head.weight", "visual.{x*}"};
  } else if (layout == "qwen2.5-vl-v5") {
    m.rules.push_back(translate::key_rule("{name*}", "model.language_model.{name}"));
    m.ignored = {"lm_head.weight", "model.visual.{x*}"};
  } else if (layout == "qwen2.5-vl-model") {
    m.rules.push_back(translate::key_rule("{name*}", "language_model.{name}"));
    m.ignored = {"visual.{x*}"};
  } else {
    throw Error(msg() << "qwen2.5-vl-text-encoder: unknown layout '" << layout
                      << "' (transformers, qwen2.5-vl, qwen2.5-vl-v5, qwen2.5-vl-model)");
  }
  return m;
}

namespace {

class Qwen25VLTextComponent : public translate::Component {
 public:
  std::string name() const override { return "qwen2.5-vl-text-encoder"; }
  std::string family() const override { return "qwen2.5-vl"; }
  std::vector<std::string> layouts() const override {
    return {"transformers", "qwen2.5-vl", "qwen2.5-vl-v5", "qwen2.5-vl-model"};
  }
  translate::Json default_config() const override { return Qwen25VLTextConfig::qwen25_vl_7b().to_json(); }
  std::optional<translate::Json> read_config(const translate::Json& j) const override {
    // A config.json, its text_config, or a hunyuan1.5.text.qwen golden's text_encoder_config.
    const translate::Json& m = has(j, "text_encoder_config") ? j.at("text_encoder_config") : j;
    const translate::Json& t = has(m, "text_config") ? m.at("text_config") : m;
    const std::string type = value_or<std::string>(t, "model_type", value_or<std::string>(m, "model_type", ""));
    if (type != "qwen2_5_vl" && type != "qwen2_5_vl_text") return std::nullopt;
    return Qwen25VLTextConfig::from_json(m).to_json();
  }
  translate::Json infer_config(const translate::TensorSource& src, const std::string& layout) const override {
    const translate::KeyMap m = qwen25_vl_text_keymap(layout);
    Qwen25VLTextConfig c = Qwen25VLTextConfig::qwen25_vl_7b();
    if (auto* t = translate::find_param(src, m, "embed_tokens.weight"); t && t->shape.size() == 2) {
      c.llama.vocab_size = t->shape[0];
      c.llama.hidden_size = t->shape[1];
    }
    if (auto* t = translate::find_param(src, m, "layers.0.mlp.gate_proj.weight"); t && t->shape.size() == 2)
      c.llama.intermediate_size = t->shape[0];
    if (const int64_t n = translate::count_layers(src, m, "self_attn.q_proj.weight", "layers."); n > 0)
      c.llama.num_hidden_layers = n;
    // The head counts are not in the shapes: the 7B's head_dim 128 when the widths fit it.
    const auto* k = translate::find_param(src, m, "layers.0.self_attn.k_proj.weight");
    if (k && k->shape.size() == 2 && c.llama.hidden_size % 128 == 0 && k->shape[0] % 128 == 0) {
      c.llama.num_attention_heads = c.llama.hidden_size / 128;
      c.llama.num_key_value_heads = k->shape[0] / 128;
      c.llama.head_dim = 128;
    }
    return c.to_json();
  }
  translate::ParamSpec params(const translate::Json& cfg) const override {
    return qwen25_vl_text_params(Qwen25VLTextConfig::from_json(cfg));
  }
  translate::KeyMap keymap(const std::string& layout, const translate::Json&) const override {
    return qwen25_vl_text_keymap(layout);
  }
  std::string variant(const translate::Json& cfg) const override {
    return Qwen25VLTextConfig::from_json(cfg) == Qwen25VLTextConfig::qwen25_vl_7b() ? "qwen2.5-vl-7b" : "custom";
  }
};

}  // namespace

const translate::Component& qwen25_vl_text_component() {
  static const Qwen25VLTextComponent c;
  return c;
}

}  // namespace vidax::text
