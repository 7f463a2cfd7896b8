#include "text/gemma3_encoder.h"

#include <cmath>

#include "backend/ops.h"
#include "core/error.h"
#include "text/encoder_weights.h"

namespace vidax::text {

namespace {

constexpr const char* kWho = "gemma3 text encoder";
constexpr float kMasked = -1e30f;  // finite: a row with no visible key stays finite (it is ignored)

// cos / sin [L, head_dim / 2] of angle = float(position) * inv_freq in fp32 (Gemma3RotaryEmbedding,
// attention_scaling 1 for the default and linear types).
std::pair<Tensor, Tensor> rotary_tables(const std::vector<float>& inv, int64_t L) {
  const int64_t half = static_cast<int64_t>(inv.size());
  std::vector<float> c(static_cast<size_t>(L * half)), s(c.size());
  for (int64_t p = 0; p < L; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(p) * inv[i];
      c[p * half + i] = std::cos(angle);
      s[p * half + i] = std::sin(angle);
    }
  return {Tensor::from_f32(c, {L, half}), Tensor::from_f32(s, {L, half})};
}

}  // namespace

Tensor gemma3_attention_bias(const std::vector<bool>& keep, int64_t B, int64_t L, int64_t window) {
  VIDAX_CHECK(static_cast<int64_t>(keep.size()) == B * L, kWho << ": key mask of " << keep.size() << " entries for "
                                                               << B << " x " << L);
  std::vector<float> bias(static_cast<size_t>(B * L * L), kMasked);
  for (int64_t b = 0; b < B; ++b)
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j <= i; ++j)
        if (keep[b * L + j] && (window <= 0 || i - j < window)) bias[(b * L + i) * L + j] = 0.0f;
  return Tensor::from_f32(bias, {B, 1, L, L});
}

Gemma3TextEncoder::Gemma3TextEncoder(const Gemma3Config& cfg, const WeightLookup& weights, DType compute)
    : cfg_(cfg), dtype_(compute) {
  VIDAX_CHECK(dtype_ == DType::F32 || dtype_ == DType::BF16,
              kWho << ": compute dtype must be F32 or BF16, got " << dtype_name(dtype_));
  VIDAX_CHECK(static_cast<int64_t>(cfg_.sliding.size()) == cfg_.num_hidden_layers,
              kWho << ": the config lists " << cfg_.sliding.size() << " layer types for " << cfg_.num_hidden_layers
                   << " layers");
  auto mat = [&](const std::string& name, const Shape& shape) {
    return checked_param(weights, name, shape, kWho).to(dtype_);
  };
  // Gemma3RMSNorm scales by (1 + weight.float()), formed once in fp32 as the reference does per call.
  auto norm = [&](const std::string& name, int64_t n) {
    return ops::add_scalar(checked_param(weights, name, {n}, kWho).to(DType::F32), 1.0);
  };
  const int64_t d = cfg_.hidden_size, dh = cfg_.head_dim, q = cfg_.num_attention_heads * dh,
                kv = cfg_.num_key_value_heads * dh, f = cfg_.intermediate_size;
  embed_ = mat("embed_tokens.weight", {cfg_.vocab_size, d});
  for (int64_t i = 0; i < cfg_.num_hidden_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".", a = p + "self_attn.", m = p + "mlp.";
    Layer l;
    l.in_norm = norm(p + "input_layernorm.weight", d);
    l.post_attn_norm = norm(p + "post_attention_layernorm.weight", d);
    l.pre_ff_norm = norm(p + "pre_feedforward_layernorm.weight", d);
    l.post_ff_norm = norm(p + "post_feedforward_layernorm.weight", d);
    l.q_norm = norm(a + "q_norm.weight", dh);
    l.k_norm = norm(a + "k_norm.weight", dh);
    l.q = mat(a + "q_proj.weight", {q, d});
    l.k = mat(a + "k_proj.weight", {kv, d});
    l.v = mat(a + "v_proj.weight", {kv, d});
    l.o = mat(a + "o_proj.weight", {d, q});
    l.gate = mat(m + "gate_proj.weight", {f, d});
    l.up = mat(m + "up_proj.weight", {f, d});
    l.down = mat(m + "down_proj.weight", {d, f});
    layers_.push_back(std::move(l));
  }
  norm_ = norm("norm.weight", d);
}

Tensor Gemma3TextEncoder::repeat_kv(const Tensor& x) const {
  const int64_t groups = cfg_.kv_groups();
  if (groups == 1) return x;
  const int64_t B = x.size(0), L = x.size(1), Hkv = x.size(2), D = x.size(3);
  const Tensor one = x.unsqueeze(3);  // [B, L, Hkv, 1, D]: query head h reads kv head h / groups
  return ops::concat(std::vector<Tensor>(static_cast<size_t>(groups), one), 3).reshape({B, L, Hkv * groups, D});
}

Tensor Gemma3TextEncoder::layer_forward(const Layer& l, const Tensor& x, const Rotary& rope, const Tensor& bias) const {
  const int64_t B = x.size(0), L = x.size(1), H = cfg_.num_attention_heads, Hkv = cfg_.num_key_value_heads,
                Dh = cfg_.head_dim;
  const double eps = cfg_.rms_norm_eps;
  auto rms = [&](const Tensor& t, const Tensor& w) { return ops::rms_norm(t, w, eps); };
  Tensor n = rms(x, l.in_norm);
  auto heads = [&](const Tensor& w, const Tensor& norm_w, int64_t h) {
    const Tensor t = rms(ops::linear(n, w).view({B, L, h, Dh}), norm_w);
    return ops::rope(t, rope.cos, rope.sin, ops::RopeMode::SplitHalf);
  };
  const Tensor q = heads(l.q, l.q_norm, H), k = heads(l.k, l.k_norm, Hkv);
  const Tensor v = ops::linear(n, l.v).view({B, L, Hkv, Dh});
  ops::AttentionOptions opt;
  opt.scale = 1.0 / std::sqrt(static_cast<double>(cfg_.query_pre_attn_scalar));
  opt.bias = bias;
  const Tensor a = ops::attention(q, repeat_kv(k), repeat_kv(v), opt);
  const Tensor h = ops::add(x, rms(ops::linear(a.view({B, L, H * Dh}), l.o), l.post_attn_norm));
  n = rms(h, l.pre_ff_norm);
  const Tensor gated = ops::mul(ops::linear_gelu(n, l.gate, std::nullopt, ops::GeluMode::Tanh), ops::linear(n, l.up));
  return ops::add(h, rms(ops::linear(gated, l.down), l.post_ff_norm));
}

std::vector<Tensor> Gemma3TextEncoder::hidden_states(const Tensor& ids, const std::optional<Tensor>& mask) const {
  VIDAX_CHECK(ids.dim() == 2, kWho << ": input_ids must be [B, L], got " << shape_str(ids.shape()));
  VIDAX_CHECK(ids.dtype() == DType::I64 || ids.dtype() == DType::I32,
              kWho << ": input_ids must be I64 or I32, got " << dtype_name(ids.dtype()));
  const int64_t B = ids.size(0), L = ids.size(1);
  VIDAX_CHECK(B >= 1 && L >= 1, kWho << ": no tokens (input_ids " << shape_str(ids.shape()) << ")");
  for (double id : ids.to_f64_vector())
    VIDAX_CHECK(id >= 0 && id < cfg_.vocab_size, kWho << ": token id " << static_cast<int64_t>(id)
                                                      << " outside the vocabulary [0, " << cfg_.vocab_size << ")");
  std::vector<bool> keep(static_cast<size_t>(B * L), true);
  if (mask) {
    VIDAX_CHECK(mask->shape() == ids.shape(), kWho << ": attention_mask " << shape_str(mask->shape())
                                                   << " does not match input_ids " << shape_str(ids.shape()));
    const std::vector<double> m = mask->to_f64_vector();
    for (int64_t b = 0; b < B; ++b) {
      int64_t n = 0;
      for (int64_t j = 0; j < L; ++j) {
        const double v = m[b * L + j];
        VIDAX_CHECK(v == 0 || v == 1, kWho << ": attention_mask row " << b << " holds " << v << " at position " << j
                                           << " (expected 0 or 1)");
        keep[b * L + j] = v == 1;
        n += v == 1;
      }
      VIDAX_CHECK(n > 0, kWho << ": attention_mask row " << b << " has no tokens");
    }
  }
  const Tensor full_bias = gemma3_attention_bias(keep, B, L, 0);
  const Tensor sliding_bias = gemma3_attention_bias(keep, B, L, cfg_.sliding_window);
  const auto [fc, fs] = rotary_tables(cfg_.full_rope.inv_freq(cfg_.head_dim), L);
  const auto [sc, ss] = rotary_tables(cfg_.sliding_rope.inv_freq(cfg_.head_dim), L);
  const Rotary full_rope{fc, fs}, sliding_rope{sc, ss};

  // Gemma3TextScaledWordEmbedding: the rows times sqrt(hidden_size) rounded to the table's dtype
  // (bf16: sqrt(3840) = 61.97 -> 62).
  const double embed_scale =
      Tensor::from_f32({static_cast<float>(std::sqrt(static_cast<double>(cfg_.hidden_size)))}, {1}, dtype_)
          .to_f32_vector()[0];
  std::vector<Tensor> out{ops::scale(ops::embedding(ids, embed_), embed_scale)};
  for (int64_t i = 0; i < cfg_.num_hidden_layers; ++i) {
    const bool sliding = cfg_.sliding[i];
    out.push_back(layer_forward(layers_[i], out.back(), sliding ? sliding_rope : full_rope,
                                sliding ? sliding_bias : full_bias));
  }
  out.back() = ops::rms_norm(out.back(), norm_, cfg_.rms_norm_eps);
  return out;
}

}  // namespace vidax::text
