#include "text/t5_encoder.h"

#include <cmath>

#include "backend/ops.h"
#include "core/error.h"

namespace vidax::text {

// ---- encoder -------------------------------------------------------------------------------

T5Encoder::T5Encoder(const T5EncoderConfig& cfg, const WeightLookup& weights, std::optional<DType> compute_dtype)
    : cfg_(cfg) {
  cfg_.validate();
  auto get = [&](const std::string& name, const Shape& shape) {
    Tensor t = weights(name);
    VIDAX_CHECK(t.defined(), "t5 encoder: missing parameter " << name);
    VIDAX_CHECK(t.shape() == shape, "t5 encoder: parameter " << name << " has shape " << shape_str(t.shape())
                                                             << ", expected " << shape_str(shape));
    return t;
  };
  const int64_t D = cfg_.dim, A = cfg_.dim_attn, F = cfg_.dim_ffn, H = cfg_.num_heads, NB = cfg_.num_buckets;
  token_embedding_ = get("token_embedding.weight", {cfg_.vocab, D});
  dtype_ = compute_dtype.value_or(token_embedding_.dtype());
  VIDAX_CHECK(dtype_ == DType::F32 || dtype_ == DType::BF16,
              "t5 encoder: compute dtype must be F32 or BF16, got " << dtype_name(dtype_)
                                                                    << " (F16 overflows; the reference clamps only there)");
  auto cast = [&](Tensor t) { return t.dtype() == dtype_ ? t : t.to(dtype_); };
  token_embedding_ = cast(token_embedding_);
  if (cfg_.shared_pos) pos_table_ = cast(get("pos_embedding.embedding.weight", {NB, H}));
  for (int64_t i = 0; i < cfg_.num_layers; ++i) {
    const std::string b = "blocks." + std::to_string(i) + ".";
    Block blk;
    blk.norm1 = cast(get(b + "norm1.weight", {D}));
    blk.q = cast(get(b + "attn.q.weight", {A, D}));
    blk.k = cast(get(b + "attn.k.weight", {A, D}));
    blk.v = cast(get(b + "attn.v.weight", {A, D}));
    blk.o = cast(get(b + "attn.o.weight", {D, A}));
    blk.norm2 = cast(get(b + "norm2.weight", {D}));
    blk.gate = cast(get(b + "ffn.gate.0.weight", {F, D}));
    blk.fc1 = cast(get(b + "ffn.fc1.weight", {F, D}));
    blk.fc2 = cast(get(b + "ffn.fc2.weight", {D, F}));
    if (!cfg_.shared_pos) blk.pos_table = cast(get(b + "pos_embedding.embedding.weight", {NB, H}));
    blocks_.push_back(std::move(blk));
  }
  norm_ = cast(get("norm.weight", {D}));
}

Tensor T5Encoder::position_bias(const Tensor& table, int64_t len) const {
  std::vector<int64_t> buckets =
      t5_relative_position_buckets(len, len, /*bidirectional=*/true, cfg_.num_buckets, cfg_.max_distance);
  Tensor idx = Tensor::from_i64(buckets, {len, len});
  Tensor bias = ops::embedding(idx, table);               // [L, L, H]
  return ops::copy(bias.permute({2, 0, 1}).unsqueeze(0));  // [1, H, Lq, Lk]
}

Tensor T5Encoder::forward(const Tensor& ids, const Tensor& mask) const {
  VIDAX_CHECK(ids.dim() == 2, "t5 encoder: ids must be [B, L], got " << shape_str(ids.shape()));
  VIDAX_CHECK(mask.shape() == ids.shape(), "t5 encoder: mask " << shape_str(mask.shape()) << " does not match ids "
                                                               << shape_str(ids.shape()));
  const int64_t B = ids.size(0), L = ids.size(1), H = cfg_.num_heads, Dh = cfg_.head_dim();
  for (double id : ids.to_f64_vector())  // input check: a token id outside the table is a tokenizer mismatch
    VIDAX_CHECK(id >= 0 && id < cfg_.vocab, "t5 encoder: token id " << static_cast<int64_t>(id)
                                                << " outside the vocabulary [0, " << cfg_.vocab << ")");

  ops::AttentionOptions attn;
  attn.scale = 1.0;  // T5 does not scale scores
  attn.kv_lens = mask_lengths(mask);  // keys at mask == 0 get no weight (the reference's finfo.min fill)

  Tensor x = ops::embedding(ids, token_embedding_);  // [B, L, D], unscaled
  Tensor shared_bias;
  if (cfg_.shared_pos) shared_bias = position_bias(pos_table_, L);
  for (const Block& blk : blocks_) {
    attn.bias = cfg_.shared_pos ? shared_bias : position_bias(blk.pos_table, L);
    Tensor n = ops::rms_norm(x, blk.norm1, cfg_.eps);
    Tensor q = ops::linear(n, blk.q).view({B, L, H, Dh});
    Tensor k = ops::linear(n, blk.k).view({B, L, H, Dh});
    Tensor v = ops::linear(n, blk.v).view({B, L, H, Dh});
    Tensor a = ops::attention(q, k, v, attn).view({B, L, H * Dh});
    x = ops::add(x, ops::linear(a, blk.o));

    n = ops::rms_norm(x, blk.norm2, cfg_.eps);
    Tensor gated = ops::mul(ops::linear(n, blk.fc1), ops::gelu(ops::linear(n, blk.gate), ops::GeluMode::Tanh));
    x = ops::add(x, ops::linear(gated, blk.fc2));
  }
  return ops::rms_norm(x, norm_, cfg_.eps);
}

}  // namespace vidax::text
