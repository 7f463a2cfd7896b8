// The T5 encoder stack as Wan's wan/modules/t5.py T5Encoder computes it:
// UMT5-XXL (shared_pos=false: every block owns a relative-position table) and
// plain T5 v1.1 (shared_pos=true: one table, computed once, used by all blocks).
//
//   x = token_embedding[ids]                          (unscaled)
//   per block:  x += o(attn(RMS1(x)))                  scores = q k^T + bias, no 1/sqrt(d)
//               x += fc2(fc1(RMS2(x)) * gelu_tanh(gate(RMS2(x))))
//   out = RMS(x)
//
// bias = rel_pos_table[bucket(j - i)] per head, with keys where mask == 0
// excluded. Dropout is ignored (inference). The fp16-only clamp of the
// reference is not implemented: the encoder refuses F16 compute.
//
// Parameters use the official checkpoint names (models_t5_umt5-xxl-enc-bf16.pth):
// token_embedding.weight, blocks.{i}.norm1.weight, blocks.{i}.attn.{q,k,v,o}.weight,
// blocks.{i}.norm2.weight, blocks.{i}.ffn.{gate.0,fc1,fc2}.weight, norm.weight and
// blocks.{i}.pos_embedding.embedding.weight (UMT5) or pos_embedding.embedding.weight (T5).
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "text/t5_config.h"

namespace vidax::text {

class T5Encoder {
 public:
  using WeightLookup = std::function<Tensor(const std::string& name)>;

  // Fetches every parameter by its engine name and checks its shape. The
  // compute dtype is the dtype of the activations (= token_embedding's unless
  // compute_dtype is given: F32 or BF16; weights are cast once here).
  T5Encoder(const T5EncoderConfig& cfg, const WeightLookup& weights, std::optional<DType> compute_dtype = {});

  // ids [B, L] (I64/I32), mask [B, L] (I64/I32, 1 = token, right-padded) ->
  // [B, L, dim], the full encoder output (pad rows included).
  Tensor forward(const Tensor& ids, const Tensor& mask) const;

  const T5EncoderConfig& config() const { return cfg_; }

 private:
  struct Block {
    Tensor norm1, q, k, v, o, norm2, gate, fc1, fc2, pos_table;  // pos_table empty when shared
  };
  Tensor position_bias(const Tensor& table, int64_t len) const;  // [1, H, L, L]
  Tensor key_mask_bias(const std::vector<int64_t>& lens, int64_t len) const;
  Tensor eager_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias) const;

  T5EncoderConfig cfg_;
  DType dtype_;
  Tensor token_embedding_, pos_table_, norm_;
  std::vector<Block> blocks_;
};

}  // namespace vidax::text
