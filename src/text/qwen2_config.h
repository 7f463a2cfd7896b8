// Qwen2.5-VL's language model as a text encoder (transformers' Qwen2_5_VLTextModel:
// HunyuanVideo 1.5's text encoder, text_encoder/llm = Qwen2.5-VL-7B-Instruct). On text the model
// is a Llama decoder with q/k/v biases (no o_proj bias) and head_dim = hidden_size / heads: its
// M-RoPE (mrope_section) gives each of the three sections (temporal, height, width) the text
// positions 0..L-1 when no image or video is in the prompt, so every frequency rotates by the
// token's position, as Llama's RoPE does (Qwen2_5_VLRotaryEmbedding.recomposition_frequencies
// takes section i from grid i, and the three grids are equal). So it runs on text::LlamaTextEncoder
// with the LlamaConfig this file derives; the vision tower is not read.
//
// Config: a Qwen2.5-VL config.json as published (model_type qwen2_5_vl, the text fields at the
// top, rope_theta + rope_scaling {"type": "mrope", "mrope_section"}), the transformers 5 spelling
// (text_config {model_type qwen2_5_vl_text, rope_parameters {rope_type "default", mrope_section,
// rope_theta}}), or a text config alone. Refused, naming the field: sliding-window layers
// (use_sliding_window true), another hidden_act or rope type.
//
// Key maps (the engine names are Qwen2_5_VLTextModel's: embed_tokens.weight, layers.{i}.*,
// norm.weight):
//   "transformers": those names bare (the text model's own state_dict; HunyuanVideo 1.5's
//                   TextEncoder.model);
//   "qwen2.5-vl":   Qwen2_5_VLForConditionalGeneration as published on the Hub (model.*, the
//                   vision tower visual.* and lm_head.weight ignored by name);
//                   transformers 5's save_pretrained writes these names too;
//   "qwen2.5-vl-v5": transformers 5's in-memory Qwen2_5_VLForConditionalGeneration.state_dict()
//                   (model.language_model.*; model.visual.* and lm_head.weight ignored);
//   "qwen2.5-vl-model": Qwen2_5_VLModel.state_dict() (what TextEncoder's AutoModel loads before
//                   taking .language_model: language_model.*, visual.* ignored).
#pragma once
#include <cstdint>
#include <vector>

#include "text/llama_config.h"
#include "translate/component.h"

namespace vidax::text {

struct Qwen25VLTextConfig {
  LlamaConfig llama;                               // the decoder's math
  std::vector<int64_t> mrope_section = {16, 24, 24};  // sums to head_dim / 2

  // Qwen2.5-VL-7B-Instruct's text model (hidden 3584, 28 layers, 28 heads / 4 kv heads, vocab
  // 152064, rope_theta 1e6, rms_norm_eps 1e-6).
  static Qwen25VLTextConfig qwen25_vl_7b();
  static Qwen25VLTextConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;  // transformers 5's Qwen2_5_VLTextConfig spelling
  bool operator==(const Qwen25VLTextConfig&) const = default;
};

translate::ParamSpec qwen25_vl_text_params(const Qwen25VLTextConfig& c);
translate::KeyMap qwen25_vl_text_keymap(const std::string& layout);
const translate::Component& qwen25_vl_text_component();  // "qwen2.5-vl-text-encoder"

}  // namespace vidax::text
