// A Llama decoder run as a text encoder: transformers' LlamaModel.forward on token ids with the
// causal + padding mask it builds, returning the hidden state a caller picks (HunyuanVideo takes
// hidden_states[-(hidden_state_skip_layer + 1)]).
//
//   x = embed_tokens[ids]
//   per layer:  x += o_proj(attn(rope(q_proj(n)), rope(k_proj(n)), v_proj(n)))   n = RMS1(x)
//               x += down_proj(silu(gate_proj(n)) * up_proj(n))                    n = RMS2(x)
//   last_hidden_state = RMS(x)  (norm)
//
// RMS(x) = weight * (x * rsqrt(mean(x^2) + eps)) with the statistics in fp32 (LlamaRMSNorm).
// RoPE rotates the two halves of each head (rotate_half) by angles position * inv_freq in fp32,
// positions 0..L-1. Attention: grouped-query (each kv head serves num_attention_heads /
// num_key_value_heads query heads, repeat_kv), scale head_dim^-0.5, a query sees keys at or before
// it that the mask keeps. A padded query row (right padding) still attends to the prompt's tokens,
// as the reference's mask lets it: its output is what the reference computes there too.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "text/llama_config.h"

namespace vidax::text {

class LlamaTextEncoder {
 public:
  using WeightLookup = std::function<Tensor(const std::string& name)>;

  // Fetches every parameter by its LlamaModel name (llama_params) and checks its shape. compute: F32
  // or BF16 (activations in that dtype, norm statistics and softmax in fp32; matrices and the
  // embedding table of a BF16 checkpoint are kept as stored under F32 compute, read exactly).
  // Block-quantized weights are widened at load. Every layer is loaded (the checkpoint is consumed
  // strictly), though hidden_state runs only those it needs.
  LlamaTextEncoder(const LlamaConfig& cfg, const WeightLookup& weights, DType compute = DType::F32);

  // ids [B, L] (I64/I32); mask [B, L] (1 = token, right-padded, >= 1 token per row) or none (every
  // position a token: attention_mask=None). Returns transformers' hidden_states[index] [B, L,
  // hidden]: 0 = the embeddings, i = the output of layer i (1-based), num_hidden_layers = the final
  // norm's output (transformers ties hidden_states[-1] to last_hidden_state). Only the layers up to
  // `index` run.
  Tensor hidden_state(const Tensor& ids, const std::optional<Tensor>& mask, int64_t index) const;
  // The final RMSNorm (`norm`), for a caller that applies it to an earlier layer's output.
  Tensor final_norm(const Tensor& x) const;

  const LlamaConfig& config() const { return cfg_; }
  DType compute() const { return dtype_; }

 private:
  struct Layer {
    Tensor in_norm, post_norm, q, k, v, o, gate, up, down;
    std::optional<Tensor> q_b, k_b, v_b, o_b, gate_b, up_b, down_b;
  };
  Tensor layer_forward(const Layer& l, const Tensor& x, const Tensor& cos, const Tensor& sin,
                       const std::vector<int64_t>& kv_lens) const;
  Tensor repeat_kv(const Tensor& x) const;  // [B, L, Hkv, D] -> [B, L, H, D]

  LlamaConfig cfg_;
  DType dtype_;
  Tensor embed_, norm_;
  std::vector<Layer> layers_;
};

}  // namespace vidax::text
