#include "models/wan/dit_block.h"

#include <tuple>

#include "backend/ops.h"
#include "nn/attention.h"
#include "nn/cast.h"

namespace vidax::wan {

AttentionWeights AttentionWeights::load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg,
                                        DType compute, bool image_kv, const nn::TensorParallel& tp) {
  const int64_t d = cfg.dim, dl = tp.local(d, "dim");  // dl: this rank's features (its heads)
  AttentionWeights w;
  w.tp = tp;
  w.heads = tp.local(cfg.num_heads, "num_heads");
  w.q = nn::Linear::load(params, prefix + ".q", d, dl, compute);
  w.k = nn::Linear::load(params, prefix + ".k", d, dl, compute);
  w.v = nn::Linear::load(params, prefix + ".v", d, dl, compute);
  w.o = nn::Linear::load(params, prefix + ".o", dl, d, compute);
  if (tp.active()) w.o.reduce = tp.group;  // row-parallel
  if (cfg.qk_norm) {
    w.norm_q = params.take(prefix + ".norm_q.weight", {dl});
    w.norm_k = params.take(prefix + ".norm_k.weight", {dl});
  }
  if (image_kv) {
    w.k_img = nn::Linear::load(params, prefix + ".k_img", d, dl, compute);
    w.v_img = nn::Linear::load(params, prefix + ".v_img", d, dl, compute);
    if (cfg.qk_norm) w.norm_k_img = params.take(prefix + ".norm_k_img.weight", {dl});
  }
  return w;
}

DiTBlock DiTBlock::load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg, DType compute,
                        const nn::TensorParallel& tp) {
  DiTBlock b;
  // fp32 whatever the checkpoint stores (bf16 in the published 14B files): the reference holds it as
  // an fp32 parameter and adds it to e0 in fp32, and ops::add takes its first operand's dtype.
  b.modulation = nn::to_dtype(params.take(prefix + ".modulation", {1, 6, cfg.dim}), DType::F32);
  b.self_attn = AttentionWeights::load(params, prefix + ".self_attn", cfg, compute, false, tp);
  b.cross_attn = AttentionWeights::load(params, prefix + ".cross_attn", cfg, compute, cfg.has_image_input(), tp);
  if (cfg.cross_attn_norm) {
    b.norm3_weight = params.take(prefix + ".norm3.weight", {cfg.dim});
    b.norm3_bias = params.take(prefix + ".norm3.bias", {cfg.dim});
  }
  const int64_t fl = tp.local(cfg.ffn_dim, "ffn_dim");  // column-parallel in, row-parallel out
  b.ffn_in = nn::Linear::load(params, prefix + ".ffn.0", cfg.dim, fl, compute);
  b.ffn_out = nn::Linear::load(params, prefix + ".ffn.2", fl, cfg.dim, compute);
  if (tp.active()) b.ffn_out.reduce = tp.group;
  return b;
}

namespace {

// WanRMSNorm over the whole projection (all heads at once, across the TP group); identity when qk_norm is off.
Tensor qk_norm(const Tensor& x, const std::optional<Tensor>& gain, double eps, const nn::TensorParallel& tp) {
  return gain ? nn::sharded_rms_norm(x, gain, eps, tp) : x;
}

// The self-attention's heads merged, before its output projection (the caller fuses
// that projection with the gated residual).
Tensor self_attention_heads(const AttentionWeights& w, const Tensor& x, const RopeTables& rope, const DiTConfig& cfg,
                            const nn::SequenceParallel& sp) {
  const Tensor a = nn::to_dtype(x, w.q.compute);  // one cast shared by q, k, v (autocast casts per GEMM)
  Tensor q = nn::split_heads(qk_norm(w.q(a), w.norm_q, cfg.eps, w.tp), w.heads);
  Tensor k = nn::split_heads(qk_norm(w.k(a), w.norm_k, cfg.eps, w.tp), w.heads);
  Tensor v = nn::split_heads(w.v(a), w.heads);
  q = ops::rope(q, rope.cos, rope.sin, ops::RopeMode::InterleavedPairs);
  k = ops::rope(k, rope.cos, rope.sin, ops::RopeMode::InterleavedPairs);
  return nn::merge_heads(nn::ulysses_attention(q, k, v, sp));
}

Tensor cross_attention(const AttentionWeights& w, const Tensor& n, const CrossKV& text, const DiTConfig& cfg) {
  Tensor q = nn::split_heads(qk_norm(w.q(n), w.norm_q, cfg.eps, w.tp), w.heads);
  // No mask: the zero-padded prompt rows take part, as in the reference (context_lens=None).
  Tensor o = ops::attention(q, text.k, text.v);
  // I2V: the image tokens' attention (same q) is summed before the single output projection.
  if (text.k_img.defined()) o = ops::add(o, ops::attention(q, text.k_img, text.v_img));
  return w.o(nn::merge_heads(o));
}

}  // namespace

Tensor patchify(const Tensor& x, const std::array<int64_t, 3>& patch) {
  VIDAX_CHECK(x.dim() == 5, "Wan DiT: patchify of " << x.str() << ", expected [B, C, F, H, W]");
  const auto [pt, ph, pw] = patch;
  const int64_t B = x.size(0), C = x.size(1), Fp = x.size(2) / pt, Hp = x.size(3) / ph, Wp = x.size(4) / pw;
  VIDAX_CHECK(Fp * pt == x.size(2) && Hp * ph == x.size(3) && Wp * pw == x.size(4),
              "Wan DiT: " << x.str() << " is not a multiple of the patch " << pt << "x" << ph << "x" << pw);
  const Tensor xc = x.is_contiguous() ? x : ops::copy(x);
  return ops::copy(xc.view({B, C, Fp, pt, Hp, ph, Wp, pw}).permute({0, 2, 4, 6, 1, 3, 5, 7}))
      .view({B, Fp * Hp * Wp, C * pt * ph * pw});
}

Tensor norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps, DType out_dtype) {
  if (x.dtype() == DType::F32) return ops::layer_norm_modulate(x, shift, scale, eps, out_dtype);
  const Tensor n = ops::layer_norm(x, std::nullopt, std::nullopt, eps);  // fp32 statistics, rounded to x's dtype
  // modulate widens n exactly and computes in fp32; its store rounds to n's dtype, so when that is
  // out_dtype no cast is needed on either side.
  if (n.dtype() == out_dtype) return ops::modulate(n, shift, scale);
  return nn::to_dtype(ops::modulate(nn::to_dtype(n, DType::F32), shift, scale), out_dtype);
}

CrossKV DiTBlock::text_kv(const Tensor& embedded, const DiTConfig& cfg) const {
  const Tensor context = nn::to_dtype(embedded, cross_attn.k.compute);  // shared by k and v
  const AttentionWeights& w = cross_attn;
  return CrossKV{nn::split_heads(qk_norm(w.k(context), w.norm_k, cfg.eps, w.tp), w.heads),
                 nn::split_heads(w.v(context), w.heads), Tensor(), Tensor()};
}

std::pair<Tensor, Tensor> DiTBlock::image_kv(const Tensor& image, const DiTConfig& cfg) const {
  VIDAX_CHECK(cross_attn.k_img.has_value(), "Wan DiT: image features given to a model without image cross-attention");
  const AttentionWeights& w = cross_attn;
  const Tensor img = nn::to_dtype(image, w.k_img->compute);
  return {nn::split_heads(qk_norm((*w.k_img)(img), w.norm_k_img, cfg.eps, w.tp), w.heads),
          nn::split_heads((*w.v_img)(img), w.heads)};
}

CrossKV DiTBlock::cross_kv(const Tensor& embedded, const Tensor& image, const DiTConfig& cfg) const {
  VIDAX_CHECK(image.defined() == cross_attn.k_img.has_value(),
              "Wan DiT: " << (image.defined() ? "image features given to a model without image cross-attention"
                                              : "the model needs image features (clip_fea) for its cross-attention"));
  CrossKV kv = text_kv(embedded, cfg);
  if (image.defined()) std::tie(kv.k_img, kv.v_img) = image_kv(image, cfg);
  return kv;
}

Tensor DiTBlock::forward(const Tensor& x, const Tensor& e0, const RopeTables& rope, const CrossKV& text,
                         const DiTConfig& cfg, const nn::SequenceParallel& sp) const {
  // (modulation + e0).chunk(6, dim=1) in fp32: shift/scale/gate for self-attn, then for the FFN.
  // Per token (Wan 2.2, e0 [B, 6, L, dim]): modulation.unsqueeze(0) + e0, chunks [B, L, dim].
  const bool per_token = e0.dim() == 4;
  const Tensor m = ops::add(per_token ? modulation.unsqueeze(2) : modulation, e0);  // [B, 6, (L,) dim]
  auto chunk = [&m, per_token](int64_t i) {
    const Tensor c = m.slice(1, i, i + 1);  // [B, 1, dim] or [B, 1, L, dim] views
    return per_token ? c.squeeze(1) : c;
  };

  // Rounded to the q/k/v GEMMs' compute dtype on store (their autocast cast, fused).
  const Tensor a = norm_modulate(x, chunk(0), chunk(1), cfg.eps, self_attn.q.compute);
  // x + o(attention) * gate under autocast(fp32): the residual stream is fp32 from here on. The
  // o projection's output is rounded to its compute dtype and widened exactly before the gated
  // add (the same values as the separate ops), in the GEMM's output stage where the backend fuses it.
  Tensor h = self_attn.o.gated_residual(self_attention_heads(self_attn, a, rope, cfg, sp),
                                        nn::to_dtype(x, DType::F32), chunk(2));

  // norm3 in fp32, rounded on store to the q GEMM's compute dtype (its autocast cast, fused).
  const Tensor n =
      cfg.cross_attn_norm ? ops::layer_norm(h, norm3_weight, norm3_bias, cfg.eps, cross_attn.q.compute) : h;
  h = ops::add(h, cross_attention(cross_attn, n, text, cfg));  // fp32 h + bf16 output widened: fp32

  const Tensor f = norm_modulate(h, chunk(3), chunk(4), cfg.eps, ffn_in.compute);
  // ffn = Linear, GELU(tanh), Linear; then h + ffn * gate. The GELU and the gated residual run in
  // the GEMMs' output stage where the backend fuses them (same values as the separate ops).
  return ffn_out.gated_residual(ffn_in.gelu(f, ops::GeluMode::Tanh), h, chunk(5));
}

}  // namespace vidax::wan
