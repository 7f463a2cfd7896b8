#include "text/llama_encoder.h"

#include <cmath>

#include "backend/ops.h"
#include "core/error.h"
#include "text/encoder_weights.h"

namespace vidax::text {

LlamaTextEncoder::LlamaTextEncoder(const LlamaConfig& cfg, const WeightLookup& weights, DType compute)
    : cfg_(cfg), dtype_(compute) {
  VIDAX_CHECK(dtype_ == DType::F32 || dtype_ == DType::BF16,
              "llama text encoder: compute dtype must be F32 or BF16, got " << dtype_name(dtype_));
  auto get = [&](const std::string& name, const Shape& shape) {
    return checked_param(weights, name, shape, "llama text encoder");
  };
  // Vectors and the embedding in the compute dtype; matrices as stored under F32 compute (a bf16
  // weight is read exactly), cast once to bf16 under BF16 compute.
  auto vec = [&](const std::string& name, const Shape& shape) { return get(name, shape).to(dtype_); };
  auto mat = [&](const std::string& name, const Shape& shape) {
    Tensor t = get(name, shape);
    return dtype_ == DType::BF16 ? t.to(DType::BF16) : t;
  };
  auto bias = [&](bool has, const std::string& name, int64_t n) -> std::optional<Tensor> {
    if (!has) return std::nullopt;
    return vec(name, {n});
  };
  const int64_t d = cfg_.hidden_size, q = cfg_.num_attention_heads * cfg_.head_dim,
                kv = cfg_.num_key_value_heads * cfg_.head_dim, f = cfg_.intermediate_size;
  embed_ = get("embed_tokens.weight", {cfg_.vocab_size, d});  // as stored: the gathered rows are cast
  for (int64_t i = 0; i < cfg_.num_hidden_layers; ++i) {
    const std::string p = "layers." + std::to_string(i) + ".";
    const std::string a = p + "self_attn.", m = p + "mlp.";
    const bool ab = cfg_.attention_bias, mb = cfg_.mlp_bias;
    Layer l;
    l.in_norm = vec(p + "input_layernorm.weight", {d});
    l.post_norm = vec(p + "post_attention_layernorm.weight", {d});
    l.q = mat(a + "q_proj.weight", {q, d});
    l.k = mat(a + "k_proj.weight", {kv, d});
    l.v = mat(a + "v_proj.weight", {kv, d});
    l.o = mat(a + "o_proj.weight", {d, q});
    l.q_b = bias(ab, a + "q_proj.bias", q);
    l.k_b = bias(ab, a + "k_proj.bias", kv);
    l.v_b = bias(ab, a + "v_proj.bias", kv);
    l.o_b = bias(cfg_.o_proj_bias, a + "o_proj.bias", d);
    l.gate = mat(m + "gate_proj.weight", {f, d});
    l.up = mat(m + "up_proj.weight", {f, d});
    l.down = mat(m + "down_proj.weight", {d, f});
    l.gate_b = bias(mb, m + "gate_proj.bias", f);
    l.up_b = bias(mb, m + "up_proj.bias", f);
    l.down_b = bias(mb, m + "down_proj.bias", d);
    layers_.push_back(std::move(l));
  }
  norm_ = vec("norm.weight", {d});
}

Tensor LlamaTextEncoder::final_norm(const Tensor& x) const {
  // LlamaRMSNorm: normalised in fp32, rounded to the input's dtype, times the weight.
  return ops::mul(ops::rms_norm(x, std::nullopt, cfg_.rms_norm_eps), norm_);
}

Tensor LlamaTextEncoder::repeat_kv(const Tensor& x) const {
  const int64_t groups = cfg_.kv_groups();
  if (groups == 1) return x;
  const int64_t B = x.size(0), L = x.size(1), Hkv = x.size(2), D = x.size(3);
  // Query head h reads kv head h / groups: each kv head repeated `groups` times in place.
  const Tensor one = x.unsqueeze(3);  // [B, L, Hkv, 1, D]
  return ops::concat(std::vector<Tensor>(static_cast<size_t>(groups), one), 3).reshape({B, L, Hkv * groups, D});
}

Tensor LlamaTextEncoder::layer_forward(const Layer& l, const Tensor& x, const Tensor& cos, const Tensor& sin,
                                       const std::vector<int64_t>& kv_lens) const {
  const int64_t B = x.size(0), L = x.size(1), H = cfg_.num_attention_heads, Hkv = cfg_.num_key_value_heads,
                Dh = cfg_.head_dim;
  auto rms = [&](const Tensor& t, const Tensor& w) { return ops::mul(ops::rms_norm(t, std::nullopt, cfg_.rms_norm_eps), w); };
  Tensor n = rms(x, l.in_norm);
  const Tensor q = ops::rope(ops::linear(n, l.q, l.q_b).view({B, L, H, Dh}), cos, sin, ops::RopeMode::SplitHalf);
  const Tensor k = ops::rope(ops::linear(n, l.k, l.k_b).view({B, L, Hkv, Dh}), cos, sin, ops::RopeMode::SplitHalf);
  const Tensor v = ops::linear(n, l.v, l.v_b).view({B, L, Hkv, Dh});
  ops::AttentionOptions opt;
  opt.causal = true;
  opt.kv_lens = kv_lens;
  const Tensor a = ops::attention(q, repeat_kv(k), repeat_kv(v), opt);
  Tensor h = ops::add(x, ops::linear(a.view({B, L, H * Dh}), l.o, l.o_b));
  n = rms(h, l.post_norm);
  const Tensor gated = ops::mul(ops::silu(ops::linear(n, l.gate, l.gate_b)), ops::linear(n, l.up, l.up_b));
  return ops::add(h, ops::linear(gated, l.down, l.down_b));
}

Tensor LlamaTextEncoder::hidden_state(const Tensor& ids, const std::optional<Tensor>& mask, int64_t index) const {
  VIDAX_CHECK(ids.dim() == 2, "llama text encoder: input_ids must be [B, L], got " << shape_str(ids.shape()));
  VIDAX_CHECK(ids.dtype() == DType::I64 || ids.dtype() == DType::I32,
              "llama text encoder: input_ids must be I64 or I32, got " << dtype_name(ids.dtype()));
  VIDAX_CHECK(index >= 0 && index <= cfg_.num_hidden_layers,
              "llama text encoder: hidden state " << index << " outside [0, " << cfg_.num_hidden_layers
                                                  << "] (the embeddings, then one per layer)");
  const int64_t L = ids.size(1);
  VIDAX_CHECK(L >= 1, "llama text encoder: no tokens");
  for (double id : ids.to_f64_vector())
    VIDAX_CHECK(id >= 0 && id < cfg_.vocab_size, "llama text encoder: token id " << static_cast<int64_t>(id)
                                                     << " outside the vocabulary [0, " << cfg_.vocab_size << ")");
  std::vector<int64_t> kv_lens;
  if (mask) {
    VIDAX_CHECK(mask->shape() == ids.shape(), "llama text encoder: attention_mask " << shape_str(mask->shape())
                                                  << " does not match input_ids " << shape_str(ids.shape()));
    kv_lens = right_padded_lengths(*mask, "llama text encoder");
  }
  // cos/sin [L, head_dim / 2]: angle = float(position) * inv_freq in fp32 (LlamaRotaryEmbedding).
  const std::vector<float> inv = cfg_.inv_freq();
  const int64_t half = static_cast<int64_t>(inv.size());
  std::vector<float> c(static_cast<size_t>(L * half)), s(c.size());
  for (int64_t p = 0; p < L; ++p)
    for (int64_t i = 0; i < half; ++i) {
      const float angle = static_cast<float>(p) * inv[i];
      c[p * half + i] = std::cos(angle);
      s[p * half + i] = std::sin(angle);
    }
  const Tensor cos = Tensor::from_f32(c, {L, half}), sin = Tensor::from_f32(s, {L, half});

  Tensor x = ops::embedding(ids, embed_).to(dtype_);  // [B, L, hidden]; the same values as casting the table
  for (int64_t i = 0; i < index; ++i) x = layer_forward(layers_[i], x, cos, sin, kv_lens);
  if (index == cfg_.num_hidden_layers) x = final_norm(x);
  return x;
}

}  // namespace vidax::text
