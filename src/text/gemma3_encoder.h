// A Gemma-3 decoder run as a text encoder: transformers' Gemma3TextModel.forward on token ids with
// the causal (+ sliding window) and padding masks it builds, returning every hidden state
// (output_hidden_states=True), as LTX-2's LTXGemmaTextEncoder.encode takes them.
//
//   x = embed_tokens[ids] * sqrt(hidden_size)
//   per layer:  x += N_post_attn(o_proj(attn(rope(N_q(q_proj(n))), rope(N_k(k_proj(n))), v_proj(n))))
//                                                                                  n = N_in(x)
//               x += N_post_ff(down_proj(gelu_tanh(gate_proj(n)) * up_proj(n)))      n = N_pre_ff(x)
//   hidden_states = (embeddings, layer 1, ..., layer N-1, N_final(layer N))
//
// N(x) = (x * rsqrt(mean(x^2) + eps)) * (1 + weight) in fp32 (Gemma3RMSNorm; N_q, N_k over head_dim).
// Attention: grouped-query, scale query_pre_attn_scalar^-0.5; query i sees key j when j <= i, the
// mask keeps j, and on a sliding_attention layer i - j < sliding_window. RoPE (rotate_half) per
// layer type: full layers rope_theta (+ linear scaling), sliding layers the local theta; positions
// are 0..L-1 whatever the padding (the reference's default position_ids), so a left-padded prompt's
// tokens sit at positions pad..L-1 as there. A query row the mask drops (a pad) sees no key: its
// values are not the reference's and a caller must ignore them (LTX-2's extractor zeroes them).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "text/gemma3_config.h"

namespace vidax::text {

class Gemma3TextEncoder {
 public:
  using WeightLookup = std::function<Tensor(const std::string& name)>;

  // Fetches every parameter by its Gemma3TextModel name (embed_tokens.weight, layers.{i}.*,
  // norm.weight) and checks its shape; block-quantized weights are widened at load. compute: F32
  // or BF16 (as transformers runs a bf16 model: matrices, the embedding table, embed_scale and the
  // activations in bf16; each norm's statistics and its (1 + w) scale in fp32, rounded once).
  Gemma3TextEncoder(const Gemma3Config& cfg, const WeightLookup& weights, DType compute = DType::F32);

  // ids [B, L] (I64/I32); mask [B, L] of 0/1 (any padding side, >= 1 token per row) or none (all
  // tokens). Returns hidden_states[0..num_hidden_layers], each [B, L, hidden] in the compute dtype.
  std::vector<Tensor> hidden_states(const Tensor& ids, const std::optional<Tensor>& mask) const;

  const Gemma3Config& config() const { return cfg_; }
  DType compute() const { return dtype_; }

 private:
  struct Layer {
    Tensor in_norm, post_attn_norm, pre_ff_norm, post_ff_norm, q_norm, k_norm, q, k, v, o, gate, up, down;
  };
  struct Rotary {
    Tensor cos, sin;  // [L, head_dim / 2]
  };
  Tensor layer_forward(const Layer& l, const Tensor& x, const Rotary& rope, const Tensor& bias) const;
  Tensor repeat_kv(const Tensor& x) const;  // [B, L, Hkv, D] -> [B, L, H, D]

  Gemma3Config cfg_;
  DType dtype_;
  Tensor embed_, norm_;
  std::vector<Layer> layers_;
};

// The additive attention bias [B, 1, L, L] (0 = visible, -1e30 = masked) of a causal layer with
// the key mask `keep` [B * L] and, when window > 0, the sliding window i - j < window.
Tensor gemma3_attention_bias(const std::vector<bool>& keep, int64_t B, int64_t L, int64_t window);

}  // namespace vidax::text
