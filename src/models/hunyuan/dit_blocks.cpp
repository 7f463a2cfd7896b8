#include "models/hunyuan/dit_blocks.h"

#include <array>

#include "backend/ops.h"
#include "nn/cast.h"

namespace vidax::hunyuan {

namespace {

constexpr double kEps = 1e-6;  // every LayerNorm and q/k norm of the model

// Heads [from, from + H*hd) of the projection x [B, S, K*H*hd] ("B L (K H D) -> K B L H D"), as [B, S, H, hd].
Tensor heads_of(const Tensor& x, int64_t part, int64_t heads, int64_t head_dim) {
  const int64_t w = heads * head_dim;
  return ops::copy(x.slice(2, part * w, (part + 1) * w)).view({x.size(0), x.size(1), heads, head_dim});
}

// [B, S, H, hd] tokens [from, to) as [B, to - from, H*hd].
Tensor merged_rows(const Tensor& x, int64_t from, int64_t to) {
  return ops::copy(x.slice(1, from, to)).view({x.size(0), to - from, x.size(2) * x.size(3)});
}

// Chunk i of n of a modulation m [B, n*D], as [B, 1, D] (broadcast over the tokens: .unsqueeze(1)).
Tensor chunk(const Tensor& m, int64_t i, int64_t n) {
  const int64_t d = m.size(1) / n;
  return m.slice(1, i * d, (i + 1) * d).unsqueeze(1);
}

Tensor rope_rows(const Tensor& x, const RopeTables& rope) {
  return ops::rope(x, rope.cos, rope.sin, ops::RopeMode::InterleavedPairs);  // rotate_half on (2k, 2k+1) pairs
}

ops::AttentionOptions masked(const std::vector<int64_t>& kv_lens) {
  ops::AttentionOptions o;
  o.kv_lens = kv_lens;
  return o;
}

}  // namespace

RopeTables rope_tables(const Tensor& cos, const Tensor& sin, int64_t tokens, int64_t head_dim) {
  for (const Tensor* t : {&cos, &sin})
    VIDAX_CHECK(t->dim() == 2 && t->size(0) == tokens && t->size(1) == head_dim,
                "HunyuanVideo DiT: freqs_cos / freqs_sin must be [" << tokens << ", " << head_dim
                                                                    << "] (image tokens, head dim), got " << t->str());
  RopeTables r;
  const Tensor* src[2] = {&cos, &sin};
  Tensor* dst[2] = {&r.cos, &r.sin};
  for (int i = 0; i < 2; ++i) {
    const Tensor pairs = nn::to_dtype(*src[i], DType::F32).contiguous().view({tokens, head_dim / 2, 2});
    const Tensor even = ops::copy(pairs.select(2, 0)), odd = ops::copy(pairs.select(2, 1));
    if (even.device() != Device::Meta)
      VIDAX_CHECK(even.to_f32_vector() == odd.to_f32_vector(),
                  "HunyuanVideo DiT: " << (i == 0 ? "freqs_cos" : "freqs_sin")
                                       << " is not one value per rotated pair (columns 2k and 2k+1 differ); "
                                          "expected get_nd_rotary_pos_embed(..., use_real=True)'s tables");
    *dst[i] = even;
  }
  return r;
}

Tensor activation(const Tensor& x, const std::string& act) {
  if (act == "gelu_tanh") return ops::gelu(x, ops::GeluMode::Tanh);
  if (act == "gelu") return ops::gelu(x, ops::GeluMode::Erf);
  if (act == "relu") return ops::relu(x);
  if (act == "silu") return ops::silu(x);
  throw Error(msg() << "HunyuanVideo DiT: activation '" << act << "' (gelu_tanh, gelu, relu or silu)");
}

QKNorm QKNorm::load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg) {
  QKNorm n;
  n.enabled = cfg.qk_norm;
  if (!n.enabled) return n;
  n.layer = cfg.qk_norm_type == "layer";
  n.weight = params.take(prefix + ".weight", {cfg.head_dim()});
  if (n.layer) n.bias = params.take(prefix + ".bias", {cfg.head_dim()});
  return n;
}

Tensor QKNorm::operator()(const Tensor& x) const {
  if (!enabled) return x;
  // RMSNorm: _norm(x.float()).type_as(x) * weight; LayerNorm: nn.LayerNorm(head_dim); then .to(v).
  return layer ? ops::layer_norm(x, weight, bias, kEps) : ops::rms_norm(x, weight, kEps);
}

Mlp Mlp::load(nn::ParamSource& params, const std::string& prefix, int64_t dim, int64_t hidden, const std::string& act,
              DType compute) {
  return Mlp{nn::Linear::load(params, prefix + ".fc1", dim, hidden, compute),
             nn::Linear::load(params, prefix + ".fc2", hidden, dim, compute), act};
}

Tensor Mlp::hidden(const Tensor& x) const {
  return act == "gelu_tanh" ? fc1.gelu(x, ops::GeluMode::Tanh) : activation(fc1(x), act);
}

RefinerBlock RefinerBlock::load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg,
                                DType compute) {
  const int64_t d = cfg.hidden_size;
  RefinerBlock b;
  b.heads = cfg.heads_num;
  b.norm1_w = params.take(prefix + ".norm1.weight", {d});
  b.norm1_b = params.take(prefix + ".norm1.bias", {d});
  b.qkv = nn::Linear::load(params, prefix + ".self_attn_qkv", d, 3 * d, compute);
  b.proj = nn::Linear::load(params, prefix + ".self_attn_proj", d, d, compute);
  b.norm2_w = params.take(prefix + ".norm2.weight", {d});
  b.norm2_b = params.take(prefix + ".norm2.bias", {d});
  b.mlp = Mlp::load(params, prefix + ".mlp", d, 4 * d, "silu", compute);  // the refiner's ratio 4, SiLU
  b.modulation = nn::Linear::load(params, prefix + ".adaLN_modulation.1", d, 2 * d, DType::F32);
  return b;
}

Tensor RefinerBlock::forward(const Tensor& x, const Tensor& c_silu, const Tensor& bias) const {
  const Tensor m = modulation(c_silu);  // [B, 2D]: gate_msa, gate_mlp
  const int64_t hd = x.size(2) / heads;
  const Tensor n1 = ops::layer_norm(x, norm1_w, norm1_b, kEps, qkv.compute);
  const Tensor qkv_out = qkv(n1);
  ops::AttentionOptions opt;
  if (bias.defined()) opt.bias = bias;
  const Tensor a = ops::attention(heads_of(qkv_out, 0, heads, hd), heads_of(qkv_out, 1, heads, hd),
                                  heads_of(qkv_out, 2, heads, hd), opt);
  Tensor h = proj.gated_residual(merged_rows(a, 0, a.size(1)), x, chunk(m, 0, 2));
  return mlp.gated_residual(ops::layer_norm(h, norm2_w, norm2_b, kEps, mlp.fc1.compute), h, chunk(m, 1, 2));
}

DoubleStreamBlock DoubleStreamBlock::load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg,
                                          DType compute) {
  const int64_t d = cfg.hidden_size;
  auto stream = [&](const std::string& s) {
    const std::string p = prefix + "." + s;
    Stream st;
    st.mod = nn::Linear::load(params, p + "_mod.linear", d, 6 * d, DType::F32);
    st.qkv = nn::Linear::load(params, p + "_attn_qkv", d, 3 * d, compute, cfg.qkv_bias);
    st.q_norm = QKNorm::load(params, p + "_attn_q_norm", cfg);
    st.k_norm = QKNorm::load(params, p + "_attn_k_norm", cfg);
    st.proj = nn::Linear::load(params, p + "_attn_proj", d, d, compute, cfg.qkv_bias);
    st.mlp = Mlp::load(params, p + "_mlp", d, cfg.mlp_hidden(), cfg.mlp_act_type, compute);
    return st;
  };
  DoubleStreamBlock b;
  b.img = stream("img");
  b.txt = stream("txt");
  return b;
}

std::pair<Tensor, Tensor> DoubleStreamBlock::forward(const Tensor& img_x, const Tensor& txt_x, const Tensor& vec_silu,
                                                     const RopeTables& rope, const std::vector<int64_t>& kv_lens,
                                                     const DiTConfig& cfg) const {
  const int64_t H = cfg.heads_num, hd = cfg.head_dim(), N = img_x.size(1), L = txt_x.size(1);
  const Tensor im = img.mod(vec_silu), tm = txt.mod(vec_silu);  // [B, 6D] each
  auto qkv_of = [&](const Stream& s, const Tensor& x, const Tensor& m, bool rotate) {
    const Tensor a = s.qkv(ops::layer_norm_modulate(x, chunk(m, 0, 6), chunk(m, 1, 6), kEps, s.qkv.compute));
    Tensor q = s.q_norm(heads_of(a, 0, H, hd)), k = s.k_norm(heads_of(a, 1, H, hd));
    if (rotate) {
      q = rope_rows(q, rope);
      k = rope_rows(k, rope);
    }
    return std::array<Tensor, 3>{q, k, heads_of(a, 2, H, hd)};
  };
  const auto [iq, ik, iv] = qkv_of(img, img_x, im, true);
  const auto [tq, tk, tv] = qkv_of(txt, txt_x, tm, false);
  // Joint attention over [image, text] (image first), kv_lens the image + valid text tokens.
  const Tensor a = ops::attention(ops::concat({iq, tq}, 1), ops::concat({ik, tk}, 1), ops::concat({iv, tv}, 1),
                                  masked(kv_lens));
  auto rest = [&](const Stream& s, const Tensor& x, const Tensor& m, const Tensor& attn) {
    const Tensor h = s.proj.gated_residual(attn, x, chunk(m, 2, 6));
    return s.mlp.gated_residual(ops::layer_norm_modulate(h, chunk(m, 3, 6), chunk(m, 4, 6), kEps, s.mlp.fc1.compute),
                                h, chunk(m, 5, 6));
  };
  return {rest(img, img_x, im, merged_rows(a, 0, N)), rest(txt, txt_x, tm, merged_rows(a, N, N + L))};
}

SingleStreamBlock SingleStreamBlock::load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg,
                                          DType compute) {
  const int64_t d = cfg.hidden_size, mlp = cfg.mlp_hidden();
  SingleStreamBlock b;
  b.linear1 = nn::Linear::load(params, prefix + ".linear1", d, 3 * d + mlp, compute);
  b.linear2 = nn::Linear::load(params, prefix + ".linear2", d + mlp, d, compute);
  b.q_norm = QKNorm::load(params, prefix + ".q_norm", cfg);
  b.k_norm = QKNorm::load(params, prefix + ".k_norm", cfg);
  b.modulation = nn::Linear::load(params, prefix + ".modulation.linear", d, 3 * d, DType::F32);
  b.act = cfg.mlp_act_type;
  return b;
}

Tensor SingleStreamBlock::forward(const Tensor& x, const Tensor& vec_silu, int64_t n_img, const RopeTables& rope,
                                  const std::vector<int64_t>& kv_lens, const DiTConfig& cfg) const {
  const int64_t H = cfg.heads_num, hd = cfg.head_dim(), d = cfg.hidden_size, S = x.size(1);
  const Tensor m = modulation(vec_silu);  // [B, 3D]: shift, scale, gate
  const Tensor y = linear1(ops::layer_norm_modulate(x, chunk(m, 0, 3), chunk(m, 1, 3), kEps, linear1.compute));
  const Tensor q = q_norm(heads_of(y, 0, H, hd)), k = k_norm(heads_of(y, 1, H, hd));
  // RoPE on the image tokens (the first n_img), the text tokens as they are.
  const Tensor qr = ops::concat({rope_rows(q.slice(1, 0, n_img), rope), q.slice(1, n_img, S)}, 1);
  const Tensor kr = ops::concat({rope_rows(k.slice(1, 0, n_img), rope), k.slice(1, n_img, S)}, 1);
  const Tensor a = ops::attention(qr, kr, heads_of(y, 2, H, hd), masked(kv_lens));
  const Tensor mlp = activation(y.slice(2, 3 * d, y.size(2)), act);
  return linear2.gated_residual(ops::concat({merged_rows(a, 0, S), mlp}, 2), x, chunk(m, 2, 3));
}

}  // namespace vidax::hunyuan
