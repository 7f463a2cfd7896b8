// A Llama decoder used as a text encoder (transformers' LlamaModel: HunyuanVideo 1.0's
// LLaVA-Llama-3-8B text tower): its config as transformers writes it (config.json, either the
// transformers 5 spelling `rope_parameters` or the older `rope_theta` + `rope_scaling`), its
// parameters under LlamaModel's state-dict names, and its key maps:
//   "transformers": LlamaModel's own names (embed_tokens.weight, layers.{i}.*, norm.weight), as
//                   diffusers' text_encoder/ stores them;
//   "causal-lm":    LlamaForCausalLM's (model.* + lm_head.weight, the head ignored by name), as
//                   HunyuanVideo's ckpts/text_encoder (LlavaForConditionalGeneration.language_model
//                   .save_pretrained) and the published llava-llama-3-8b text encoders store them.
// Sources: transformers models/llama (modeling_llama.py, configuration_llama.py,
// modeling_rope_utils.py).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "translate/component.h"

namespace vidax::text {

struct LlamaConfig {
  int64_t vocab_size = 128320, hidden_size = 4096, intermediate_size = 14336, num_hidden_layers = 32,
          num_attention_heads = 32, num_key_value_heads = 8, head_dim = 128, max_position_embeddings = 8192;
  double rms_norm_eps = 1e-5;
  // RoPE: rope_type "default" (theta only) or "llama3" (Llama 3.1's frequency bands).
  std::string rope_type = "default";
  double rope_theta = 500000.0;
  double rope_factor = 8.0, low_freq_factor = 1.0, high_freq_factor = 4.0;
  int64_t original_max_position_embeddings = 8192;
  bool attention_bias = false, mlp_bias = false;
  // o_proj's bias: Llama's attention_bias covers q, k, v and o; Qwen2 has q/k/v biases only.
  bool o_proj_bias = false;

  // llava-llama-3-8b's text config (xtuner/llava-llama-3-8b-v1_1-transformers: Llama-3-8B with the
  // image token added, vocab 128320; rope_scaling null).
  static LlamaConfig llava_llama3_8b() { return {}; }
  // A transformers LlamaConfig dict (model_type "llama"), or a LLaVA config holding one under
  // "text_config". Refuses what this encoder does not compute (another hidden_act, another
  // rope_type, pretraining_tp > 1) naming the field.
  static LlamaConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;  // transformers' spelling (rope_parameters)
  bool operator==(const LlamaConfig&) const = default;
  int64_t kv_groups() const { return num_attention_heads / num_key_value_heads; }
  // RoPE's inverse frequencies [head_dim / 2] in fp32 as transformers computes them (its default
  // or llama3 rope init function).
  std::vector<float> inv_freq() const;
};

translate::ParamSpec llama_params(const LlamaConfig& c);
translate::KeyMap llama_keymap(const std::string& layout);
const translate::Component& llama_component();  // "llama-text-encoder"

}  // namespace vidax::text
