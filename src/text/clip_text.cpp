#include "text/clip_text.h"

#include "backend/ops.h"
#include "core/error.h"
#include "text/encoder_weights.h"
#include "translate/config_fields.h"

namespace vidax::text {

using nlohmann::json;
using translate::has;
using translate::value_or;

ClipTextConfig ClipTextConfig::from_json(const json& in) {
  VIDAX_CHECK(in.is_object(), "CLIP text config: expected a transformers CLIPTextConfig object, found " << in.dump());
  const json& j = in.contains("text_config") ? in.at("text_config") : in;  // a CLIPConfig's text half
  const std::string model_type = value_or<std::string>(j, "model_type", "clip_text_model");
  VIDAX_CHECK(model_type == "clip_text_model",
              "CLIP text config: model_type '" << model_type << "' (expected clip_text_model)");
  ClipTextConfig c;
  c.vocab_size = value_or<int64_t>(j, "vocab_size", c.vocab_size);
  c.hidden_size = value_or<int64_t>(j, "hidden_size", c.hidden_size);
  c.intermediate_size = value_or<int64_t>(j, "intermediate_size", c.intermediate_size);
  c.num_hidden_layers = value_or<int64_t>(j, "num_hidden_layers", c.num_hidden_layers);
  c.num_attention_heads = value_or<int64_t>(j, "num_attention_heads", c.num_attention_heads);
  c.max_position_embeddings = value_or<int64_t>(j, "max_position_embeddings", c.max_position_embeddings);
  c.eos_token_id = value_or<int64_t>(j, "eos_token_id", c.eos_token_id);
  c.hidden_act = value_or<std::string>(j, "hidden_act", c.hidden_act);
  c.layer_norm_eps = value_or<double>(j, "layer_norm_eps", c.layer_norm_eps);
  VIDAX_CHECK(c.hidden_act == "quick_gelu" || c.hidden_act == "gelu",
              "CLIP text config: hidden_act '" << c.hidden_act << "' is not supported (quick_gelu, gelu)");
  VIDAX_CHECK(c.num_attention_heads >= 1 && c.hidden_size % c.num_attention_heads == 0,
              "CLIP text config: hidden_size " << c.hidden_size << " is not divisible by num_attention_heads "
                                               << c.num_attention_heads);
  VIDAX_CHECK(c.vocab_size >= 1 && c.intermediate_size >= 1 && c.num_hidden_layers >= 1 &&
                  c.max_position_embeddings >= 1,
              "CLIP text config: vocab_size, intermediate_size, num_hidden_layers and max_position_embeddings must be "
              "positive: " << j.dump());
  return c;
}

json ClipTextConfig::to_json() const {
  return {{"model_type", "clip_text_model"},
          {"vocab_size", vocab_size},
          {"hidden_size", hidden_size},
          {"intermediate_size", intermediate_size},
          {"num_hidden_layers", num_hidden_layers},
          {"num_attention_heads", num_attention_heads},
          {"max_position_embeddings", max_position_embeddings},
          {"eos_token_id", eos_token_id},
          {"hidden_act", hidden_act},
          {"layer_norm_eps", layer_norm_eps}};
}

translate::ParamSpec clip_text_params(const ClipTextConfig& c) {
  translate::ParamSpec s;
  const int64_t d = c.hidden_size, f = c.intermediate_size;
  s.add("embeddings.token_embedding.weight", {c.vocab_size, d});
  s.add("embeddings.position_embedding.weight", {c.max_position_embeddings, d});
  for (int64_t i = 0; i < c.num_hidden_layers; ++i) {
    const std::string p = "encoder.layers." + std::to_string(i) + ".";
    for (const char* n : {"layer_norm1", "layer_norm2"}) {
      s.add(p + n + ".weight", {d});
      s.add(p + n + ".bias", {d});
    }
    for (const char* n : {"q_proj", "k_proj", "v_proj", "out_proj"}) {
      s.add(p + "self_attn." + n + ".weight", {d, d});
      s.add(p + "self_attn." + n + ".bias", {d});
    }
    s.add(p + "mlp.fc1.weight", {f, d});
    s.add(p + "mlp.fc1.bias", {f});
    s.add(p + "mlp.fc2.weight", {d, f});
    s.add(p + "mlp.fc2.bias", {d});
  }
  s.add("final_layer_norm.weight", {d});
  s.add("final_layer_norm.bias", {d});
  return s;
}

translate::KeyMap clip_text_keymap(const std::string& layout) {
  VIDAX_CHECK(layout == "bare" || layout == "transformers",
              "clip-text-encoder: unknown layout '" << layout << "' (bare, transformers)");
  translate::KeyMap m;
  m.layout = layout;
  if (layout == "bare") {
    m.rules.push_back(translate::key_rule("{name*}", "{name}"));
  } else {
    m.rules.push_back(translate::key_rule("{name*}", "text_model.{name}"));
    // What a whole CLIPModel holds besides its text model; the text encoder never reads it.
    m.ignored = {"vision_model.{x*}", "visual_projection.weight", "text_projection.weight", "logit_scale"};
  }
  return m;
}

namespace {

class ClipTextComponent : public translate::Component {
 public:
  std::string name() const override { return "clip-text-encoder"; }
  std::string family() const override { return "clip"; }
  std::vector<std::string> layouts() const override { return {"bare", "transformers"}; }
  translate::Json default_config() const override { return ClipTextConfig::clip_l14().to_json(); }
  std::optional<translate::Json> read_config(const translate::Json& j) const override {
    // A config.json, a CLIPConfig's text_config, or a hunyuan.text.clip golden's text_encoder_config.
    const translate::Json& m = has(j, "text_encoder_config") ? j.at("text_encoder_config") : j;
    const translate::Json& t = has(m, "text_config") ? m.at("text_config") : m;
    if (!t.is_object() || value_or<std::string>(t, "model_type", "") != "clip_text_model") return std::nullopt;
    return ClipTextConfig::from_json(t).to_json();
  }
  translate::Json infer_config(const translate::TensorSource& src, const std::string& layout) const override {
    const translate::KeyMap m = clip_text_keymap(layout);
    ClipTextConfig c;
    if (auto* t = translate::find_param(src, m, "embeddings.token_embedding.weight"); t && t->shape.size() == 2) {
      c.vocab_size = t->shape[0];
      c.hidden_size = t->shape[1];
    }
    if (auto* t = translate::find_param(src, m, "embeddings.position_embedding.weight"); t && t->shape.size() == 2)
      c.max_position_embeddings = t->shape[0];
    if (auto* t = translate::find_param(src, m, "encoder.layers.0.mlp.fc1.weight"); t && t->shape.size() == 2)
      c.intermediate_size = t->shape[0];
    int64_t n = 0;
    while (translate::find_param(src, m, "encoder.layers." + std::to_string(n) + ".mlp.fc1.weight")) ++n;
    if (n > 0) c.num_hidden_layers = n;
    // The head count is not in the shapes: CLIP's 64 channels per head when the width fits.
    c.num_attention_heads = c.hidden_size % 64 == 0 ? c.hidden_size / 64 : 1;
    return c.to_json();
  }
  translate::ParamSpec params(const translate::Json& cfg) const override {
    return clip_text_params(ClipTextConfig::from_json(cfg));
  }
  translate::KeyMap keymap(const std::string& layout, const translate::Json&) const override {
    return clip_text_keymap(layout);
  }
  std::string variant(const translate::Json& cfg) const override {
    return ClipTextConfig::from_json(cfg) == ClipTextConfig::clip_l14() ? "clip-vit-large-patch14" : "custom";
  }
};

}  // namespace

const translate::Component& clip_text_component() {
  static const ClipTextComponent c;
  return c;
}

ClipTextEncoder::ClipTextEncoder(const ClipTextConfig& cfg, const WeightLookup& weights, DType compute)
    : cfg_(cfg), dtype_(compute) {
  VIDAX_CHECK(dtype_ == DType::F32 || dtype_ == DType::BF16,
              "CLIP text encoder: compute dtype must be F32 or BF16, got " << dtype_name(dtype_));
  auto get = [&](const std::string& name, const Shape& shape) {
    return checked_param(weights, name, shape, "CLIP text encoder");
  };
  // Vectors and embeddings in the compute dtype; matrices as stored under F32, bf16 under BF16.
  auto vec = [&](const std::string& name, const Shape& shape) { return get(name, shape).to(dtype_); };
  auto mat = [&](const std::string& name, const Shape& shape) {
    Tensor t = get(name, shape);
    return dtype_ == DType::BF16 ? t.to(DType::BF16) : t;
  };
  const int64_t d = cfg_.hidden_size, f = cfg_.intermediate_size;
  token_ = vec("embeddings.token_embedding.weight", {cfg_.vocab_size, d});
  position_ = vec("embeddings.position_embedding.weight", {cfg_.max_position_embeddings, d});
  for (int64_t i = 0; i < cfg_.num_hidden_layers; ++i) {
    const std::string p = "encoder.layers." + std::to_string(i) + ".", a = p + "self_attn.";
    Layer l;
    l.ln1_w = vec(p + "layer_norm1.weight", {d});
    l.ln1_b = vec(p + "layer_norm1.bias", {d});
    l.ln2_w = vec(p + "layer_norm2.weight", {d});
    l.ln2_b = vec(p + "layer_norm2.bias", {d});
    l.q = mat(a + "q_proj.weight", {d, d});
    l.q_b = vec(a + "q_proj.bias", {d});
    l.k = mat(a + "k_proj.weight", {d, d});
    l.k_b = vec(a + "k_proj.bias", {d});
    l.v = mat(a + "v_proj.weight", {d, d});
    l.v_b = vec(a + "v_proj.bias", {d});
    l.o = mat(a + "out_proj.weight", {d, d});
    l.o_b = vec(a + "out_proj.bias", {d});
    l.fc1 = mat(p + "mlp.fc1.weight", {f, d});
    l.fc1_b = vec(p + "mlp.fc1.bias", {f});
    l.fc2 = mat(p + "mlp.fc2.weight", {d, f});
    l.fc2_b = vec(p + "mlp.fc2.bias", {d});
    layers_.push_back(std::move(l));
  }
  final_w_ = vec("final_layer_norm.weight", {d});
  final_b_ = vec("final_layer_norm.bias", {d});
}

Tensor ClipTextEncoder::activation(const Tensor& x) const {
  if (cfg_.hidden_act == "gelu") return ops::gelu(x, ops::GeluMode::Erf);
  return ops::mul(x, ops::sigmoid(ops::scale(x, 1.702)));  // quick_gelu: x * sigmoid(1.702 x)
}

std::vector<int64_t> ClipTextEncoder::eos_positions(const Tensor& ids) const {
  const int64_t B = ids.size(0), L = ids.size(1);
  const std::vector<double> v = ids.to_f64_vector();
  std::vector<int64_t> pos(static_cast<size_t>(B), 0);
  for (int64_t b = 0; b < B; ++b) {
    const double* row = v.data() + b * L;
    if (cfg_.eos_token_id == 2) {  // the legacy rule: the largest id (the end token is the last in the vocabulary)
      for (int64_t j = 1; j < L; ++j)
        if (row[j] > row[pos[b]]) pos[b] = j;
    } else {  // the first eos_token_id; none: 0
      for (int64_t j = 0; j < L; ++j)
        if (row[j] == static_cast<double>(cfg_.eos_token_id)) {
          pos[b] = j;
          break;
        }
    }
  }
  return pos;
}

ClipTextOutput ClipTextEncoder::forward(const Tensor& ids, const std::optional<Tensor>& mask) const {
  VIDAX_CHECK(ids.dim() == 2, "CLIP text encoder: input_ids must be [B, L], got " << shape_str(ids.shape()));
  VIDAX_CHECK(ids.dtype() == DType::I64 || ids.dtype() == DType::I32,
              "CLIP text encoder: input_ids must be I64 or I32, got " << dtype_name(ids.dtype()));
  const int64_t B = ids.size(0), L = ids.size(1), d = cfg_.hidden_size, H = cfg_.num_attention_heads;
  VIDAX_CHECK(L >= 1 && L <= cfg_.max_position_embeddings,
              "CLIP text encoder: " << L << " tokens; the model takes 1 to max_position_embeddings = "
                                    << cfg_.max_position_embeddings << " (the tokenizer truncates to that)");
  for (double id : ids.to_f64_vector())
    VIDAX_CHECK(id >= 0 && id < cfg_.vocab_size, "CLIP text encoder: token id " << static_cast<int64_t>(id)
                                                     << " outside the vocabulary [0, " << cfg_.vocab_size << ")");
  ops::AttentionOptions opt;
  opt.causal = true;
  if (mask) {
    VIDAX_CHECK(mask->shape() == ids.shape(), "CLIP text encoder: attention_mask " << shape_str(mask->shape())
                                                  << " does not match input_ids " << shape_str(ids.shape()));
    opt.kv_lens = right_padded_lengths(*mask, "CLIP text encoder");
  }
  Tensor x = ops::add(ops::embedding(ids, token_), position_.slice(0, 0, L));  // [B, L, d]
  const int64_t hd = d / H;
  for (const Layer& l : layers_) {
    const Tensor n = ops::layer_norm(x, l.ln1_w, l.ln1_b, cfg_.layer_norm_eps);
    const Tensor q = ops::linear(n, l.q, l.q_b).view({B, L, H, hd});
    const Tensor k = ops::linear(n, l.k, l.k_b).view({B, L, H, hd});
    const Tensor v = ops::linear(n, l.v, l.v_b).view({B, L, H, hd});
    const Tensor a = ops::attention(q, k, v, opt);
    x = ops::add(x, ops::linear(a.view({B, L, d}), l.o, l.o_b));
    const Tensor h = activation(ops::linear(ops::layer_norm(x, l.ln2_w, l.ln2_b, cfg_.layer_norm_eps), l.fc1, l.fc1_b));
    x = ops::add(x, ops::linear(h, l.fc2, l.fc2_b));
  }
  ClipTextOutput out;
  out.last_hidden_state = ops::layer_norm(x, final_w_, final_b_, cfg_.layer_norm_eps);
  std::vector<Tensor> rows;
  const std::vector<int64_t> eos = eos_positions(ids);
  for (int64_t b = 0; b < B; ++b) rows.push_back(out.last_hidden_state.select(0, b).slice(0, eos[b], eos[b] + 1));
  out.pooler_output = ops::concat(rows, 0);  // [B, d]
  return out;
}

}  // namespace vidax::text
