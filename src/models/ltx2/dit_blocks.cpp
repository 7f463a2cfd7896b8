#include "models/ltx2/dit_blocks.h"

#include "core/error.h"
#include "models/hunyuan/embeddings.h"
#include "nn/cast.h"

namespace vidax::ltx2 {

namespace {

// get_ada_values: table[row] + ts[..., ts_row * D : (ts_row + 1) * D] -> [B, 1 or T, D].
Tensor ada(const Tensor& table, int64_t row, const Modulation& ts, int64_t ts_row) {
  return ops::add(table.select(0, row), ts.chunk(ts_row, table.size(1)));
}

// PytorchAdaZeroFunction: rms_norm(x) * (1 + scale) + shift (no affine).
Tensor ada_zero(const Tensor& x, double eps, const Tensor& scale, const Tensor& shift) {
  return ops::modulate(ops::rms_norm(x, std::nullopt, eps), shift, scale);
}

}  // namespace

Tensor StreamRope::apply(const Tensor& x) const {
  VIDAX_CHECK(!per_sample.empty(), "LTX-2 DiT: RoPE tables missing");
  if (per_sample.size() == 1) return apply_rope(x, per_sample[0]);
  VIDAX_CHECK(x.size(0) == static_cast<int64_t>(per_sample.size()),
              "LTX-2 DiT: " << per_sample.size() << " RoPE tables for a batch of " << x.size(0));
  std::vector<Tensor> rows;
  for (size_t b = 0; b < per_sample.size(); ++b) {
    const int64_t i = static_cast<int64_t>(b);
    rows.push_back(apply_rope(x.slice(0, i, i + 1), per_sample[b]));
  }
  return ops::concat(rows, 0);
}

Tensor Modulation::chunk(int64_t r, int64_t d) const {
  VIDAX_CHECK(defined() && (r + 1) * d <= table.size(1), "LTX-2 DiT: modulation chunk " << r << " of width " << d
                                                                                          << " outside " << table.str());
  // One distinct timestep (a text-to-video step): the row itself, [1, 1, d], broadcast by its users.
  if (table.size(0) == 1) return table.slice(1, r * d, (r + 1) * d).unsqueeze(0);
  return ops::embedding(ids, ops::copy(table.slice(1, r * d, (r + 1) * d)));
}

Tensor Modulation::full() const { return ops::embedding(ids.contiguous().view({ids.numel()}), table); }

Tensor linear_f32(const nn::Linear& l, const Tensor& x) { return nn::to_dtype(l(x), DType::F32); }

AdaLNSingle AdaLNSingle::load(nn::ParamSource& params, const std::string& prefix, int64_t dim, int64_t coefficient) {
  // The conditioning path stays fp32 (DESIGN.md principle 3: modulation in fp32).
  const std::string e = prefix + ".emb.timestep_embedder.";
  return AdaLNSingle{nn::Linear::load(params, e + "linear_1", 256, dim, DType::F32),
                     nn::Linear::load(params, e + "linear_2", dim, dim, DType::F32),
                     nn::Linear::load(params, prefix + ".linear", dim, coefficient * dim, DType::F32)};
}

std::pair<Tensor, Tensor> AdaLNSingle::operator()(const std::vector<float>& t) const {
  // Timesteps(256, flip_sin_to_cos=True, downscale_freq_shift=0): [cos, sin], the same sinusoid as
  // HunyuanVideo's timestep_embedding (fp32 frequencies, t * f in fp32).
  const std::vector<double> td(t.begin(), t.end());
  const Tensor proj = hunyuan::timestep_embedding(td, 256, 10000.0);
  const Tensor embedded = linear_2(ops::silu(linear_1(proj)));
  return {linear(ops::silu(embedded)), embedded};
}

Attention Attention::load(nn::ParamSource& params, const std::string& prefix, int64_t query_dim, int64_t context_dim,
                          int64_t heads, int64_t head_dim, bool gated, double eps, DType compute) {
  const int64_t inner = heads * head_dim;
  Attention a;
  a.heads = heads;
  a.head_dim = head_dim;
  a.eps = eps;
  a.q_norm = params.take(prefix + ".q_norm.weight", {inner});
  a.k_norm = params.take(prefix + ".k_norm.weight", {inner});
  a.to_q = nn::Linear::load(params, prefix + ".to_q", query_dim, inner, compute);
  a.to_k = nn::Linear::load(params, prefix + ".to_k", context_dim, inner, compute);
  a.to_v = nn::Linear::load(params, prefix + ".to_v", context_dim, inner, compute);
  if (gated) a.to_gate_logits = nn::Linear::load(params, prefix + ".to_gate_logits", query_dim, heads, DType::F32);
  a.to_out = nn::Linear::load(params, prefix + ".to_out.0", inner, query_dim, compute);
  return a;
}

Tensor Attention::operator()(const Tensor& x, const Tensor* context, const ops::AttentionOptions& mask,
                             const StreamRope* pe, const StreamRope* k_pe, const Perturb& perturb) const {
  const Tensor& ctx = context ? *context : x;
  const int64_t B = x.size(0), T = x.size(1), S = ctx.size(1), inner = heads * head_dim;
  const Tensor v = linear_f32(to_v, ctx);
  Tensor out;
  if (perturb.all) {
    // Every sample perturbed: the value projection passes through (the query/key path is skipped).
    VIDAX_CHECK(S == T, "LTX-2 DiT: a perturbed attention needs as many keys as queries (" << S << " vs " << T << ")");
    out = v.view({B, T, heads, head_dim});
  } else {
    Tensor q = ops::rms_norm(linear_f32(to_q, x), q_norm, eps);
    Tensor k = ops::rms_norm(linear_f32(to_k, ctx), k_norm, eps);
    if (pe) {
      q = pe->apply(q);
      k = (k_pe ? k_pe : pe)->apply(k);
    }
    out = ops::attention(q.view({B, T, heads, head_dim}), k.view({B, S, heads, head_dim}),
                         v.view({B, S, heads, head_dim}), mask);  // [B, T, H, hd]
    if (perturb.keep) {
      // out * keep + v * (1 - keep), per sample.
      const Tensor& m = *perturb.keep;
      const Tensor mv = m.unsqueeze(3);  // [B, 1, 1, 1]
      out = ops::add(ops::mul(out, mv), ops::mul(v.view({B, T, heads, head_dim}), ops::add_scalar(ops::scale(mv, -1.0), 1.0)));
    }
  }
  if (to_gate_logits) {
    // PytorchGatedAttention: out_h * 2 sigmoid(to_gate_logits(x))_h.
    const Tensor gates = ops::scale(ops::sigmoid(linear_f32(*to_gate_logits, x)), 2.0);  // [B, T, H]
    out = ops::mul(out, gates.unsqueeze(3));
  }
  return linear_f32(to_out, out.view({B, T, inner}));
}

FeedForward FeedForward::load(nn::ParamSource& params, const std::string& prefix, int64_t dim, bool bias,
                              DType compute) {
  return FeedForward{nn::Linear::load(params, prefix + ".net.0.proj", dim, 4 * dim, compute, bias),
                     nn::Linear::load(params, prefix + ".net.2", 4 * dim, dim, compute, bias)};
}

Tensor FeedForward::operator()(const Tensor& x) const { return linear_f32(out, proj.gelu(x, ops::GeluMode::Tanh)); }

AVBlock AVBlock::load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg, DType compute) {
  AVBlock b;
  b.cross_attention_adaln = cfg.cross_attention_adaln;
  b.eps = cfg.norm_eps;
  const std::string p = prefix + ".";
  const int64_t k = cfg.adaln_coefficient();
  const bool gated = cfg.apply_gated_attention;
  auto stream = [&](const std::string& s, int64_t dim, int64_t heads, int64_t hd, int64_t ctx, bool ff_bias) {
    const std::string a = s.empty() ? "" : s + "_";
    Stream st{Attention::load(params, p + a + "attn1", dim, dim, heads, hd, gated, b.eps, compute),
              Attention::load(params, p + a + "attn2", dim, ctx, heads, hd, gated, b.eps, compute),
              FeedForward::load(params, p + a + "ff", dim, ff_bias, compute),
              params.take(p + a + "scale_shift_table", {k, dim}), Tensor()};
    if (b.cross_attention_adaln) st.prompt_scale_shift_table = params.take(p + a + "prompt_scale_shift_table", {2, dim});
    return st;
  };
  const int64_t dv = cfg.inner_dim(), da = cfg.audio_inner_dim();
  if (cfg.video())
    b.video = stream("", dv, cfg.num_attention_heads, cfg.attention_head_dim, cfg.cross_attention_dim, cfg.ff_bias);
  if (cfg.audio())
    b.audio = stream("audio", da, cfg.audio_num_attention_heads, cfg.audio_attention_head_dim,
                     cfg.audio_cross_attention_dim, cfg.audio_ff_bias);
  if (cfg.video() && cfg.audio()) {
    // Both directions use the audio heads and head dim (inner = the audio inner dim).
    const int64_t ha = cfg.audio_num_attention_heads, hda = cfg.audio_attention_head_dim;
    b.audio_to_video_attn = Attention::load(params, p + "audio_to_video_attn", dv, da, ha, hda, gated, b.eps, compute);
    b.video_to_audio_attn = Attention::load(params, p + "video_to_audio_attn", da, dv, ha, hda, gated, b.eps, compute);
    b.a2v_ca_audio = params.take(p + "scale_shift_table_a2v_ca_audio", {5, da});
    b.a2v_ca_video = params.take(p + "scale_shift_table_a2v_ca_video", {5, dv});
  }
  return b;
}

// Self-attention and the text cross-attention of one stream -> x after both.
Tensor AVBlock::self_and_text(const Stream& s, StreamArgs& a, const Perturb& perturb) const {
  const Tensor& sst = s.scale_shift_table;
  const Tensor shift_msa = ada(sst, 0, a.timesteps, 0), scale_msa = ada(sst, 1, a.timesteps, 1);
  const Tensor gate_msa = ada(sst, 2, a.timesteps, 2);
  const Tensor attn = s.attn1(ada_zero(a.x, eps, scale_msa, shift_msa), nullptr, a.self_mask, &a.pe, nullptr, perturb);
  const Tensor x = ops::gated_residual(a.x, gate_msa, attn);  // PytorchPostSAFunction: x + y * gate
  const Tensor normed = ops::rms_norm(x, std::nullopt, eps);
  if (!cross_attention_adaln) return ops::add(x, s.attn2(normed, &a.context, a.context_mask, nullptr, nullptr));
  // apply_cross_attention_adaln: the query from rows 6..8, the context from the prompt table (+ the
  // prompt AdaLN of sigma when the model has one).
  const Tensor shift_q = ada(sst, 6, a.timesteps, 6), scale_q = ada(sst, 7, a.timesteps, 7);
  const Tensor gate_q = ada(sst, 8, a.timesteps, 8);
  const Tensor& pst = s.prompt_scale_shift_table;
  Tensor shift_kv = pst.select(0, 0), scale_kv = pst.select(0, 1);
  if (a.prompt_timestep.defined()) {
    shift_kv = ada(pst, 0, a.prompt_timestep, 0);
    scale_kv = ada(pst, 1, a.prompt_timestep, 1);
  }
  const Tensor ctx = ops::modulate(a.context, shift_kv, scale_kv);
  const Tensor out = s.attn2(ops::modulate(normed, shift_q, scale_q), &ctx, a.context_mask, nullptr, nullptr);
  return ops::gated_residual(x, gate_q, out);
}

Tensor AVBlock::feed_forward(const Stream& s, const StreamArgs& a, const Tensor& x) const {
  const Tensor& sst = s.scale_shift_table;
  const Tensor shift = ada(sst, 3, a.timesteps, 3), scale = ada(sst, 4, a.timesteps, 4);
  const Tensor gate = ada(sst, 5, a.timesteps, 5);
  return ops::gated_residual(x, gate, s.ff(ada_zero(x, eps, scale, shift)));
}

void AVBlock::forward(StreamArgs* v, StreamArgs* a, const BlockPerturbations& perturb) const {
  VIDAX_CHECK(v || a, "LTX-2 DiT block: at least one of video or audio must be given");
  VIDAX_CHECK(!v || video, "LTX-2 DiT block: the model has no video stream");
  VIDAX_CHECK(!a || audio, "LTX-2 DiT block: the model has no audio stream");
  const bool run_v = v && v->enabled, run_a = a && a->enabled;
  if (run_v) v->x = self_and_text(*video, *v, perturb.video_self);
  if (run_a) a->x = self_and_text(*audio, *a, perturb.audio_self);

  if (v && a && (run_v || run_a) && audio_to_video_attn) {
    VIDAX_CHECK(v->has_cross && a->has_cross, "LTX-2 DiT block: the cross-modal inputs were not prepared");
    // Both directions read the streams as they were before either update.
    const Tensor vn = ops::rms_norm(v->x, std::nullopt, eps), an = ops::rms_norm(a->x, std::nullopt, eps);
    // The cross-attention perturbation: the output times the keep mask; every sample perturbed
    // skips the direction (cross_attn_skip_all).
    auto cross = [](const Tensor& out, const Tensor& gate, const Perturb& p) {
      return p.keep ? ops::mul(ops::mul(out, gate), *p.keep) : ops::mul(out, gate);
    };
    const Tensor& tv = a2v_ca_video;
    const Tensor& ta = a2v_ca_audio;
    const Modulation& vss = v->cross_scale_shift_timestep;
    const Modulation& ass = a->cross_scale_shift_timestep;
    Tensor vx = v->x, ax = a->x;
    if (run_v && !perturb.a2v.all) {
      // A2V: q video (rows 0, 1: scale, shift), k/v audio (rows 0, 1), gate row 4 of the video table.
      const Tensor vq = ops::modulate(vn, ada(tv, 1, vss, 1), ada(tv, 0, vss, 0));
      const Tensor akv = ops::modulate(an, ada(ta, 1, ass, 1), ada(ta, 0, ass, 0));
      const Tensor a2v = (*audio_to_video_attn)(vq, &akv, {}, &v->cross_pe, &a->cross_pe);
      vx = ops::add(vx, cross(a2v, ada(tv, 4, v->cross_gate_timestep, 0), perturb.a2v));
    }
    if (run_a && !perturb.v2a.all) {
      // V2A: q audio (rows 2, 3), k/v video (rows 2, 3), gate row 4 of the audio table.
      const Tensor aq = ops::modulate(an, ada(ta, 3, ass, 3), ada(ta, 2, ass, 2));
      const Tensor vkv = ops::modulate(vn, ada(tv, 3, vss, 3), ada(tv, 2, vss, 2));
      const Tensor v2a = (*video_to_audio_attn)(aq, &vkv, {}, &a->cross_pe, &v->cross_pe);
      ax = ops::add(ax, cross(v2a, ada(ta, 4, a->cross_gate_timestep, 0), perturb.v2a));
    }
    v->x = vx;
    a->x = ax;
  }

  if (run_v) v->x = feed_forward(*video, *v, v->x);
  if (run_a) a->x = feed_forward(*audio, *a, a->x);
}

}  // namespace vidax::ltx2
