// A Gemma-3 decoder used as a text encoder (transformers' Gemma3TextModel: LTX-2's Gemma-3-12B
// text tower): its config as transformers writes it (Gemma3TextConfig, the transformers 5
// `rope_parameters` per layer type or the older `rope_theta` + `rope_local_base_freq` +
// `rope_scaling`), alone or as a Gemma3Config's `text_config`; its parameters under
// Gemma3TextModel's names and its key maps:
//   "transformers":  Gemma3TextModel's own names (embed_tokens.weight, layers.{i}.*, norm.weight);
//   "causal-lm":     Gemma3ForCausalLM's (model.*, lm_head.weight ignored by name);
//   "multimodal":    Gemma3ForConditionalGeneration as google/gemma-3-12b-it stores it
//                    (language_model.model.*; vision_tower.*, multi_modal_projector.* and
//                    language_model.lm_head.weight ignored by name), the spelling LTX-2's
//                    _build_gemma3_llm_key_ops reads;
//   "multimodal-v5": the same model saved by transformers 5 (model.language_model.*;
//                    model.vision_tower.*, model.multi_modal_projector.*, lm_head.weight ignored).
// Sources: transformers models/gemma3 (modeling_gemma3.py, configuration_gemma3.py),
// modeling_rope_utils.py (default and linear rope init), masking_utils.py (sliding_window_overlay).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "translate/component.h"

namespace vidax::text {

// One layer type's RoPE: "default" (theta only) or "linear" (inv_freq / factor).
struct Gemma3Rope {
  std::string type = "default";
  double theta = 10000.0, factor = 1.0;
  bool operator==(const Gemma3Rope&) const = default;
  // Inverse frequencies [head_dim / 2] in fp32 as transformers computes them.
  std::vector<float> inv_freq(int64_t head_dim) const;
};

struct Gemma3Config {
  // Gemma-3-12B's text config (google/gemma-3-12b-it, the encoder LTX-2 ships with).
  int64_t vocab_size = 262208, hidden_size = 3840, intermediate_size = 15360, num_hidden_layers = 48,
          num_attention_heads = 16, num_key_value_heads = 8, head_dim = 256, query_pre_attn_scalar = 256,
          sliding_window = 1024;
  double rms_norm_eps = 1e-6;
  std::vector<bool> sliding;  // per layer: sliding_attention (true) or full_attention
  Gemma3Rope full_rope{"linear", 1000000.0, 8.0}, sliding_rope{"default", 10000.0, 1.0};

  // A transformers Gemma3TextConfig dict (model_type "gemma3_text"), or a Gemma3Config holding one
  // under "text_config". Refuses what this encoder does not compute (another hidden_activation,
  // attention soft-capping, bidirectional attention, another rope_type, attention_bias) naming the
  // field. layer_types absent: every sliding_window_pattern-th (default 6) layer is full.
  static Gemma3Config from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;  // transformers 5's spelling (rope_parameters, layer_types)
  bool operator==(const Gemma3Config&) const = default;
  int64_t kv_groups() const { return num_attention_heads / num_key_value_heads; }
};

translate::ParamSpec gemma3_params(const Gemma3Config& c);
translate::KeyMap gemma3_keymap(const std::string& layout);
const translate::Component& gemma3_component();  // "gemma3-text-encoder" (not registered for detection)

}  // namespace vidax::text
