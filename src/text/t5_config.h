// T5 / UMT5 encoder configuration and the host-side helpers that need no
// kernels: parameter names, relative-position buckets, prompt-length masks.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace vidax::text {

struct T5EncoderConfig {
  int64_t vocab = 0;
  int64_t dim = 0;
  int64_t dim_attn = 0;  // num_heads * head_dim
  int64_t dim_ffn = 0;
  int64_t num_heads = 0;
  int64_t num_layers = 0;
  int64_t num_buckets = 32;
  int64_t max_distance = 128;
  bool shared_pos = false;  // false = UMT5 (per-block tables), true = T5 v1.1
  double eps = 1e-6;

  int64_t head_dim() const { return dim_attn / num_heads; }
  void validate() const;  // throws on inconsistent values

  static T5EncoderConfig umt5_xxl();
  // The official T5Encoder init args (vocab, dim, dim_attn, dim_ffn, num_heads,
  // num_layers, num_buckets, shared_pos) or a transformers T5Config/UMT5Config
  // (model_type "t5"/"umt5", gated-gelu only).
  static T5EncoderConfig from_json(const nlohmann::json& j);
  // The official T5Encoder args (the translator's canonical spelling; the
  // fixed max_distance 128 and eps 1e-6 are not part of it).
  nlohmann::json to_json() const;
};

// The engine parameter names for a config, in model order.
std::vector<std::string> t5_encoder_parameter_names(const T5EncoderConfig& cfg);

// The reference's _relative_position_bucket over rel = key - query for an
// lq x lk grid (row-major [lq][lk]); log term computed in fp32 as torch does.
std::vector<int64_t> t5_relative_position_buckets(int64_t lq, int64_t lk, bool bidirectional, int64_t num_buckets,
                                                  int64_t max_distance);

// Number of tokens per row of a right-padded mask [B, L] (1s then 0s); throws
// on a mask that is not of that form or has an empty row.
std::vector<int64_t> mask_lengths(const Tensor& mask);

// The pipeline's trim: Wan's T5EncoderModel.__call__ returns
// [u[:v] for u, v in zip(context, seq_lens)], seq_lens = mask.gt(0).sum(1).
// Returns views [len_b, dim] into context [B, L, dim].
std::vector<Tensor> trim_to_prompt_lengths(const Tensor& context, const Tensor& mask);

}  // namespace vidax::text
