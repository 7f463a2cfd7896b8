#include "text/t5_encoder.h"

#include <cmath>
#include <limits>

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
    // A block-quantized weight (GGUF, parity --quantize) is read as its values: this encoder
    // widens it at load (its matrices are not nn::Linear yet; docs/quantization.md).
    if (t.is_weight_only_quantized()) t = t.to(DType::F32);
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

// Additive key mask [B, 1, 1, L]: 0 for tokens, the dtype's lowest finite value
// for padding (the reference's masked_fill(mask == 0, finfo(dtype).min)).
Tensor T5Encoder::key_mask_bias(const std::vector<int64_t>& lens, int64_t len) const {
  const float lowest = dtype_ == DType::BF16 ? -3.3895313892515355e38f : std::numeric_limits<float>::lowest();
  std::vector<float> m(static_cast<size_t>(lens.size() * len), 0.f);
  for (size_t b = 0; b < lens.size(); ++b)
    for (int64_t j = lens[b]; j < len; ++j) m[b * len + j] = lowest;
  return Tensor::from_f32(m, {static_cast<int64_t>(lens.size()), 1, 1, len}, dtype_);
}

// The reference's attention step by step (T5Attention.forward): scores = q k^T
// rounded to the compute dtype, + bias (rounded), softmax in fp32 rounded back,
// @ v. Used for bf16, where those roundings are the reference's numerics.
Tensor T5Encoder::eager_attention(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& bias) const {
  Tensor qh = q.permute({0, 2, 1, 3});                    // [B, H, L, Dh]
  Tensor kt = k.permute({0, 2, 3, 1});                    // [B, H, Dh, L]
  Tensor scores = ops::add(ops::matmul(qh, kt), bias);    // no 1/sqrt(d): T5
  Tensor probs = ops::softmax(scores, -1);                // fp32 inside, output in the compute dtype
  Tensor o = ops::matmul(probs, v.permute({0, 2, 1, 3}));  // [B, H, L, Dh]
  return ops::copy(o.permute({0, 2, 1, 3}));               // [B, L, H, Dh]
}

// The reference's GELU (wan/modules/t5.py GELU, transformers' gelu_new) op by
// op: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 * x^3))), each step
// rounded to the compute dtype as torch does in bf16. torch.pow(x, 3.0) on a
// bf16 CPU tensor equals (x*x rounded)*x rounded (measured: an exactly rounded
// cube moves the 3-layer golden by 6e-3 rel L2), so the cube is two muls.
Tensor gelu_tanh_stepwise(const Tensor& x) {
  Tensor cube = ops::mul(ops::mul(x, x), x);
  Tensor inner = ops::scale(ops::add(x, ops::scale(cube, 0.044715)), std::sqrt(2.0 / M_PI));
  return ops::mul(ops::scale(x, 0.5), ops::add_scalar(ops::tanh(inner), 1.0));
}

Tensor T5Encoder::forward(const Tensor& ids, const Tensor& mask) const {
  VIDAX_CHECK(ids.dim() == 2, "t5 encoder: ids must be [B, L], got " << shape_str(ids.shape()));
  VIDAX_CHECK(mask.shape() == ids.shape(), "t5 encoder: mask " << shape_str(mask.shape()) << " does not match ids "
                                                               << shape_str(ids.shape()));
  const int64_t B = ids.size(0), L = ids.size(1), H = cfg_.num_heads, Dh = cfg_.head_dim();
  for (double id : ids.to_f64_vector())  // input check: a token id outside the table is a tokenizer mismatch
    VIDAX_CHECK(id >= 0 && id < cfg_.vocab, "t5 encoder: token id " << static_cast<int64_t>(id)
                                                << " outside the vocabulary [0, " << cfg_.vocab << ")");
  const std::vector<int64_t> lens = mask_lengths(mask);
  // fp32: the fused attention and GELU ops. bf16: the reference's rounding
  // points step by step (scores, bias add, softmax output, each GELU op); the
  // fused ops round once and land ~1e-2 (rel L2) away from the bf16 reference.
  const bool eager = dtype_ == DType::BF16;
  ops::AttentionOptions attn;
  attn.scale = 1.0;  // T5 does not scale scores
  attn.kv_lens = lens;
  Tensor mask_bias = eager ? key_mask_bias(lens, L) : Tensor();

  // The reference's T5LayerNorm: x * rsqrt(mean(x^2) + eps) in fp32, rounded to
  // the compute dtype, then * weight (rounded again).
  auto rms = [&](const Tensor& x, const Tensor& w) { return ops::mul(ops::rms_norm(x, std::nullopt, cfg_.eps), w); };

  Tensor x = ops::embedding(ids, token_embedding_);  // [B, L, D], unscaled
  Tensor shared_bias;
  if (cfg_.shared_pos) shared_bias = position_bias(pos_table_, L);
  for (const Block& blk : blocks_) {
    Tensor pos = cfg_.shared_pos ? shared_bias : position_bias(blk.pos_table, L);
    Tensor n = rms(x, blk.norm1);
    Tensor q = ops::linear(n, blk.q).view({B, L, H, Dh});
    Tensor k = ops::linear(n, blk.k).view({B, L, H, Dh});
    Tensor v = ops::linear(n, blk.v).view({B, L, H, Dh});
    Tensor a;
    if (eager) {
      a = eager_attention(q, k, v, ops::add(pos, mask_bias));
    } else {
      attn.bias = pos;
      a = ops::attention(q, k, v, attn);
    }
    x = ops::add(x, ops::linear(a.view({B, L, H * Dh}), blk.o));

    n = rms(x, blk.norm2);
    Tensor g = ops::linear(n, blk.gate);
    g = eager ? gelu_tanh_stepwise(g) : ops::gelu(g, ops::GeluMode::Tanh);
    Tensor gated = ops::mul(ops::linear(n, blk.fc1), g);  // fc1(x) * gate(x), the reference's order
    x = ops::add(x, ops::linear(gated, blk.fc2));
  }
  return rms(x, norm_);
}

}  // namespace vidax::text
