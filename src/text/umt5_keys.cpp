#include "text/umt5_keys.h"

#include "translate/config_fields.h"

namespace vidax::translate::t5 {

// ===========================================================================
// UMT5 encoder (T5Encoder)
// ===========================================================================

T5Config T5Config::umt5_xxl() { return T5Config{}; }

T5Config T5Config::from_json(const Json& j) {
  T5Config c;
  if (has(j, "d_model")) {  // transformers T5Config / UMT5Config
    // model_type absent (a config dict written without it): UMT5, the encoder the families ship.
    const std::string model_type = value_or<std::string>(j, "model_type", "umt5");
    VIDAX_CHECK(model_type == "t5" || model_type == "umt5",
                "T5 config: transformers model_type must be \"t5\" or \"umt5\", got \"" << model_type << "\"");
    // The classes' own default: UMT5Config's feed_forward_proj is gated-gelu, T5Config's relu.
    const std::string ffn =
        value_or<std::string>(j, "feed_forward_proj", model_type == "umt5" ? "gated-gelu" : "relu");
    VIDAX_CHECK(ffn == "gated-gelu", "T5 config: only feed_forward_proj \"gated-gelu\" (T5 v1.1 / UMT5) is "
                                     "supported, got \"" << ffn << "\"");
    c.vocab = required<int64_t>(j, "vocab_size");
    c.dim = required<int64_t>(j, "d_model");
    c.num_heads = required<int64_t>(j, "num_heads");
    c.dim_attn = c.num_heads * required<int64_t>(j, "d_kv");
    c.dim_ffn = required<int64_t>(j, "d_ff");
    c.num_layers = required<int64_t>(j, "num_layers");
    c.num_buckets = value_or<int64_t>(j, "relative_attention_num_buckets", 32);
    c.shared_pos = model_type == "t5";  // T5 shares block 0's table; UMT5 has one per layer
    return c;
  }
  VIDAX_CHECK(has(j, "dim") && has(j, "dim_attn") && has(j, "num_layers"),
              "not a T5 encoder config (T5Encoder args or a transformers T5/UMT5 config): " << j.dump());
  c.vocab = required<int64_t>(j, "vocab");
  c.dim = required<int64_t>(j, "dim");
  c.dim_attn = required<int64_t>(j, "dim_attn");
  c.dim_ffn = required<int64_t>(j, "dim_ffn");
  c.num_heads = required<int64_t>(j, "num_heads");
  c.num_layers = required<int64_t>(j, "num_layers");
  c.num_buckets = required<int64_t>(j, "num_buckets");
  c.shared_pos = value_or<bool>(j, "shared_pos", true);  // T5Encoder's own default
  return c;
}

Json T5Config::to_json() const {
  return Json{{"vocab", vocab},         {"dim", dim},
              {"dim_attn", dim_attn},   {"dim_ffn", dim_ffn},
              {"num_heads", num_heads}, {"num_layers", num_layers},
              {"num_buckets", num_buckets}, {"shared_pos", shared_pos}};
}

ParamSpec t5_params(const T5Config& c) {
  ParamSpec s;
  s.add("token_embedding.weight", {c.vocab, c.dim});
  if (c.shared_pos) s.add("pos_embedding.embedding.weight", {c.num_buckets, c.num_heads});
  for (int64_t i = 0; i < c.num_layers; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    s.add(b + "norm1.weight", {c.dim});
    for (const char* p : {"q", "k", "v"}) s.add(b + "attn." + p + ".weight", {c.dim_attn, c.dim});
    s.add(b + "attn.o.weight", {c.dim, c.dim_attn});
    s.add(b + "norm2.weight", {c.dim});
    s.add(b + "ffn.gate.0.weight", {c.dim_ffn, c.dim});
    s.add(b + "ffn.fc1.weight", {c.dim_ffn, c.dim});
    s.add(b + "ffn.fc2.weight", {c.dim, c.dim_ffn});
    if (!c.shared_pos) s.add(b + "pos_embedding.embedding.weight", {c.num_buckets, c.num_heads});
  }
  s.add("norm.weight", {c.dim});
  return s;
}

namespace {

// llama.cpp's T5 encoder tensor names (gguf-py constants.py MODEL_TENSOR_NAMES for
// MODEL_ARCH.T5ENCODER; the UMT5 encoder GGUFs ComfyUI-GGUF loads, loader.py T5_SD_MAP): one
// relative-position table per block (attn_rel_b) in UMT5, block 0's only in T5.
KeyMap gguf_keymap() {
  KeyMap m{"gguf", {}};
  m.rules.push_back(key_rule("token_embedding.weight", "token_embd.weight"));
  m.rules.push_back(key_rule("pos_embedding.embedding.weight", "enc.blk.0.attn_rel_b.weight"));
  add_nested(m.rules, "blocks.{i}.", "enc.blk.{i}.",
             {{"norm1.weight", "attn_norm.weight"},
              {"attn.q.weight", "attn_q.weight"},
              {"attn.k.weight", "attn_k.weight"},
              {"attn.v.weight", "attn_v.weight"},
              {"attn.o.weight", "attn_o.weight"},
              {"pos_embedding.embedding.weight", "attn_rel_b.weight"},
              {"norm2.weight", "ffn_norm.weight"},
              {"ffn.gate.0.weight", "ffn_gate.weight"},
              {"ffn.fc1.weight", "ffn_up.weight"},
              {"ffn.fc2.weight", "ffn_down.weight"}});
  m.rules.push_back(key_rule("norm.weight", "enc.output_norm.weight"));
  return m;
}

}  // namespace

KeyMap t5_keymap(const std::string& layout) {
  if (layout == "original") return original_identity();
  if (layout == "gguf") return gguf_keymap();
  VIDAX_CHECK(layout == "diffusers" || layout == "t5-stack",
              "umt5-encoder: unknown layout '" << layout << "' (original, diffusers, gguf, t5-stack)");
  // transformers (UMT5|T5)EncoderModel, as diffusers' text_encoder/ stores it; "t5-stack": its
  // encoder alone (T5ForConditionalGeneration.get_encoder()'s T5Stack state dict, as
  // HunyuanVideo 1.5's Glyph byt5_model.pt holds it): the same names without "encoder.".
  // gate.0 (the GELU branch) is wi_0, fc1 is wi_1 (T5DenseGatedActDense).
  const bool stack = layout == "t5-stack";
  const std::string E = stack ? "" : "encoder.";
  const std::string L = E + "block.{i}.layer.";
  KeyMap m{layout, {}};
  if (stack) {
    m.rules.push_back(key_rule("token_embedding.weight", "embed_tokens.weight"));
  } else {
    // The embedding is tied: save_pretrained keeps `shared`, a state_dict has both.
    m.rules.push_back(alias_rule("token_embedding.weight", {"shared.weight", "encoder.embed_tokens.weight"}));
  }
  m.rules.push_back(key_rule("pos_embedding.embedding.weight",
                           E + "block.0.layer.0.SelfAttention.relative_attention_bias.weight"));
  add_nested(m.rules, "blocks.{i}.", L,
             {{"norm1.weight", "0.layer_norm.weight"},
              {"attn.q.weight", "0.SelfAttention.q.weight"},
              {"attn.k.weight", "0.SelfAttention.k.weight"},
              {"attn.v.weight", "0.SelfAttention.v.weight"},
              {"attn.o.weight", "0.SelfAttention.o.weight"},
              {"pos_embedding.embedding.weight", "0.SelfAttention.relative_attention_bias.weight"},
              {"norm2.weight", "1.layer_norm.weight"},
              {"ffn.gate.0.weight", "1.DenseReluDense.wi_0.weight"},
              {"ffn.fc1.weight", "1.DenseReluDense.wi_1.weight"},
              {"ffn.fc2.weight", "1.DenseReluDense.wo.weight"}});
  m.rules.push_back(key_rule("norm.weight", E + "final_layer_norm.weight"));
  return m;
}

namespace {

class Umt5Component : public Component {
 public:
  std::string name() const override { return "umt5-encoder"; }
  std::string family() const override { return "t5"; }
  std::vector<std::string> layouts() const override { return {"original", "diffusers", "gguf", "t5-stack"}; }
  Json default_config() const override { return T5Config::umt5_xxl().to_json(); }
  std::optional<Json> read_config(const Json& j) const override {
    if (!(has(j, "d_model") || has(j, "dim_attn"))) return std::nullopt;
    return T5Config::from_json(j).to_json();
  }
  Json infer_config(const TensorSource& src, const std::string& layout) const override {
    KeyMap m = t5_keymap(layout);
    T5Config c;
    if (auto* t = find_param(src, m, "token_embedding.weight"); t && t->shape.size() == 2) {
      c.vocab = t->shape[0];
      c.dim = t->shape[1];
    }
    if (auto* t = find_param(src, m, "blocks.0.attn.q.weight"); t && t->shape.size() == 2) c.dim_attn = t->shape[0];
    if (auto* t = find_param(src, m, "blocks.0.ffn.fc1.weight"); t && t->shape.size() == 2) c.dim_ffn = t->shape[0];
    c.num_layers = count_layers(src, m, "attn.q.weight");
    // UMT5 keeps a relative-position table in every layer; T5 only one, shared
    // (T5Encoder: a top-level pos_embedding; transformers: block 0's table).
    const TensorInfo* first = find_param(src, m, "blocks.0.pos_embedding.embedding.weight");
    const TensorInfo* shared = layout == "original" ? find_param(src, m, "pos_embedding.embedding.weight") : nullptr;
    if (layout == "original") c.shared_pos = shared != nullptr;
    else c.shared_pos = c.num_layers > 1 && !find_param(src, m, "blocks.1.pos_embedding.embedding.weight");
    const TensorInfo* table = shared ? shared : first;
    if (table && table->shape.size() == 2) {
      c.num_buckets = table->shape[0];
      c.num_heads = table->shape[1];
    }
    return c.to_json();
  }
  ParamSpec params(const Json& cfg) const override { return t5_params(T5Config::from_json(cfg)); }
  KeyMap keymap(const std::string& layout, const Json&) const override { return t5_keymap(layout); }
  std::string variant(const Json& cfg) const override {
    return T5Config::from_json(cfg) == T5Config::umt5_xxl() ? "umt5-xxl" : "custom";
  }
};

}  // namespace

const Component& umt5_component() {
  static const Umt5Component c;
  return c;
}
}  // namespace vidax::translate::t5
