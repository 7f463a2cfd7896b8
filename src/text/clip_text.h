// CLIP's text transformer (transformers' CLIPTextModel: HunyuanVideo's CLIP-L/14 text encoder):
//
//   x = token_embedding[ids] + position_embedding[0..L-1]
//   per layer:  x += out_proj(attn(q_proj(n), k_proj(n), v_proj(n)))   n = LN1(x)
//               x += fc2(act(fc1(LN2(x))))                             act: quick_gelu or gelu
//   last_hidden_state = final_layer_norm(x)
//   pooler_output[b] = last_hidden_state[b, eos position]
//
// Attention: scale head_dim^-0.5, a query sees the keys at or before it that the mask keeps (the
// causal + padding mask transformers builds). The eos position follows CLIPTextModel: with
// eos_token_id == 2 (the configs written before transformers PR #24773, CLIP-L/14's) the position
// of the largest id (argmax, the first on ties); otherwise the first position holding
// eos_token_id (position 0 when none does: argmax of all zeros).
//
// Parameters under CLIPTextModel's names as transformers 5 writes them (embeddings.*,
// encoder.layers.{i}.*, final_layer_norm.*); key maps: "bare" (those names) and "transformers"
// (text_model.*, as published checkpoints and CLIPModel store them; a CLIPModel's vision tower,
// projections and logit scale are ignored by name).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "translate/component.h"

namespace vidax::text {

struct ClipTextConfig {
  int64_t vocab_size = 49408, hidden_size = 768, intermediate_size = 3072, num_hidden_layers = 12,
          num_attention_heads = 12, max_position_embeddings = 77, eos_token_id = 2;
  std::string hidden_act = "quick_gelu";
  double layer_norm_eps = 1e-5;

  static ClipTextConfig clip_l14() { return {}; }  // openai/clip-vit-large-patch14's text config
  // A transformers CLIPTextConfig dict, or a CLIPConfig holding one under "text_config".
  static ClipTextConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
  bool operator==(const ClipTextConfig&) const = default;
};

translate::ParamSpec clip_text_params(const ClipTextConfig& c);
translate::KeyMap clip_text_keymap(const std::string& layout);
const translate::Component& clip_text_component();  // "clip-text-encoder"

struct ClipTextOutput {
  Tensor last_hidden_state;  // [B, L, hidden]
  Tensor pooler_output;      // [B, hidden]
};

class ClipTextEncoder {
 public:
  using WeightLookup = std::function<Tensor(const std::string& name)>;
  // Parameters by their bare names (clip_text_params); compute F32 or BF16.
  ClipTextEncoder(const ClipTextConfig& cfg, const WeightLookup& weights, DType compute = DType::F32);
  // ids [B, L] (L <= max_position_embeddings); mask [B, L] right-padded 1s then 0s, or none.
  ClipTextOutput forward(const Tensor& ids, const std::optional<Tensor>& mask) const;
  const ClipTextConfig& config() const { return cfg_; }
  // The pooling rule's position per row (see above).
  std::vector<int64_t> eos_positions(const Tensor& ids) const;

 private:
  struct Layer {
    Tensor ln1_w, ln1_b, ln2_w, ln2_b, q, q_b, k, k_b, v, v_b, o, o_b, fc1, fc1_b, fc2, fc2_b;
  };
  Tensor activation(const Tensor& x) const;

  ClipTextConfig cfg_;
  DType dtype_;
  Tensor token_, position_, final_w_, final_b_;
  std::vector<Layer> layers_;
};

}  // namespace vidax::text
