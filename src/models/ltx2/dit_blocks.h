// The blocks of the LTX-2 DiT (official ltx_core/model/transformer: attention.py, feed_forward.py,
// adaln.py, timestep_embedding.py, transformer.py; Lightricks/LTX-2 400fd31), top to bottom.
//
// AdaLayerNormSingle: e = linear_2(SiLU(linear_1(sinusoid_256(t))))  (the embedded timestep),
//   modulation = linear(SiLU(e))  [N, k * D]  (emb.timestep_embedder.linear_{1,2}, linear).
// Attention: q = RMSNorm_affine(to_q(x)), k = RMSNorm_affine(to_k(ctx)) over the inner dim (q_norm,
//   k_norm), RoPE on q (pe) and k (k_pe, else pe), SDPA per head (scale 1/sqrt(head_dim)), optional
//   per-head gate out_h *= 2 sigmoid(to_gate_logits(x))_h, to_out.0.
// FeedForward: net.2(gelu_tanh(net.0.proj(x))).
// BasicAVTransformerBlock (per stream s = video / audio; get_ada_values: table[i] + modulation row i):
//   x += gate_msa * attn1(RMSNorm(x)(1 + scale_msa) + shift_msa, pe)
//   n = RMSNorm(x);  x += attn2(n, context, mask)                                 (LTX-2.0)
//                    x += gate_q * attn2(n(1 + scale_q) + shift_q, ctx(1 + scale_kv) + shift_kv)   (cross_attention_adaln)
//   audio <-> video (both streams' values from before this step):
//     vx += gate_a2v * audio_to_video_attn(RMSNorm(vx)(1 + sv0) + sv1, RMSNorm(ax)(1 + sa0) + sa1,
//                                          pe = video cross pe, k_pe = audio cross pe)
//     ax += gate_v2a * video_to_audio_attn(RMSNorm(ax)(1 + sa2) + sa3, RMSNorm(vx)(1 + sv2) + sv3, ...)
//     (s*i: scale_shift_table_a2v_ca_* rows 0..3 plus the cross scale-shift modulation, scale before
//     shift; the gates: row 4 plus the other stream's sigma's gate modulation)
//   x += gate_mlp * ff(RMSNorm(x)(1 + scale_mlp) + shift_mlp)
// All RMSNorms eps = norm_eps, no affine except q_norm / k_norm. Statistics, softmax and the residual
// streams in fp32; the linears in the compute dtype (their outputs widened to fp32 at once).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "backend/ops.h"
#include "models/ltx2/dit_config.h"
#include "models/ltx2/rope.h"
#include "nn/linear.h"
#include "nn/params.h"

namespace vidax::ltx2 {

// RoPE tables for one stream: one set for the batch, or one per sample when positions differ.
struct StreamRope {
  std::vector<RopeTables> per_sample;
  Tensor apply(const Tensor& x) const;  // x [B, T, dim]
};

// Linear -> fp32 (the compute dtype's output widened at once).
Tensor linear_f32(const nn::Linear& l, const Tensor& x);

struct AdaLNSingle {
  nn::Linear linear_1, linear_2, linear;
  static AdaLNSingle load(nn::ParamSource& params, const std::string& prefix, int64_t dim, int64_t coefficient);
  // t: the (already scaled) timesteps, one per row -> (modulation [N, k * D], embedded [N, D]), F32.
  std::pair<Tensor, Tensor> operator()(const std::vector<float>& t) const;
};

// One attention's STG perturbation for a block (BatchedPerturbationConfig.mask: 1 = keep): none, a
// per-sample keep mask [B, 1, 1], or every sample perturbed (`all`).
struct Perturb {
  std::optional<Tensor> keep;  // [B, 1, 1] F32
  bool all = false;
};

struct Attention {
  nn::Linear to_q, to_k, to_v, to_out;
  std::optional<nn::Linear> to_gate_logits;
  Tensor q_norm, k_norm;  // [inner]
  int64_t heads = 0, head_dim = 0;
  double eps = 1e-6;
  static Attention load(nn::ParamSource& params, const std::string& prefix, int64_t query_dim, int64_t context_dim,
                        int64_t heads, int64_t head_dim, bool gated, double eps, DType compute);
  // x [B, T, query_dim], context [B, S, context_dim] (nullptr: x) -> [B, T, query_dim] F32.
  // mask: the attention options (the text mask's kv_lens or bias, the self-attention bias); pe /
  // k_pe: RoPE (nullptr: none); perturb: out = attn * keep + v * (1 - keep), v alone when `all`.
  Tensor operator()(const Tensor& x, const Tensor* context, const ops::AttentionOptions& mask, const StreamRope* pe,
                    const StreamRope* k_pe, const Perturb& perturb = {}) const;
};

struct FeedForward {
  nn::Linear proj, out;  // net.0.proj, net.2
  static FeedForward load(nn::ParamSource& params, const std::string& prefix, int64_t dim, bool bias, DType compute);
  Tensor operator()(const Tensor& x) const;  // F32
};

// An AdaLN modulation [B, n, k * D] (n = 1 or T) kept compact: one row per distinct timestep and
// each token's row index, so a per-token modulation never holds B * T * k * D values at once.
struct Modulation {
  Tensor table;  // [U, k * D] F32
  Tensor ids;    // [B, n] I64
  bool defined() const { return table.defined(); }
  // Chunk r of width d ([..., r * d : (r + 1) * d] of the full modulation) -> [B, n, d], or
  // [1, 1, d] (a view, broadcast by its users) when there is one distinct timestep.
  Tensor chunk(int64_t r, int64_t d) const;
  Tensor full() const;  // [B * n, k * D], the reference's layout (for taps)
};

// One stream's state through the blocks (TransformerArgs).
struct StreamArgs {
  Tensor x;                  // [B, T, D] F32, the residual stream
  Tensor context;            // [B, L, D] F32
  ops::AttentionOptions context_mask;
  ops::AttentionOptions self_mask;  // Modality.attention_mask as the log-space bias [B, 1, T, T]
  Modulation timesteps;      // [B, 1 or T, k * D], the AdaLN modulation
  Tensor embedded_timestep;  // [B, 1 or T, D] ([1, 1, D] for one distinct timestep)
  Modulation prompt_timestep;  // [B, 1, 2D] (the prompt AdaLN) or undefined
  StreamRope pe;
  // Audio <-> video (only with the other stream present).
  StreamRope cross_pe;
  Modulation cross_scale_shift_timestep;  // [B, 1 or T, 4D]
  Modulation cross_gate_timestep;         // [B, 1, D]
  bool has_cross = false;
  bool enabled = true;  // Modality.enabled
};

// The perturbations of one block (PerturbationType rows): self-attention per stream, A2V, V2A.
struct BlockPerturbations {
  Perturb video_self, audio_self, a2v, v2a;
};

struct AVBlock {
  struct Stream {
    Attention attn1, attn2;
    FeedForward ff;
    Tensor scale_shift_table;         // [6 or 9, D]
    Tensor prompt_scale_shift_table;  // [2, D] with cross_attention_adaln
  };
  std::optional<Stream> video, audio;
  std::optional<Attention> audio_to_video_attn, video_to_audio_attn;
  Tensor a2v_ca_video, a2v_ca_audio;  // scale_shift_table_a2v_ca_{video,audio} [5, D]
  bool cross_attention_adaln = false;
  double eps = 1e-6;

  static AVBlock load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg, DType compute);
  // Either stream may be absent (nullptr); they are updated in place of the handles. A disabled
  // stream is not updated, and the other stream still attends to it (the reference's run_a2v /
  // run_v2a: only the updated stream must be enabled).
  void forward(StreamArgs* video, StreamArgs* audio, const BlockPerturbations& perturb = {}) const;

 private:
  Tensor self_and_text(const Stream& s, StreamArgs& a, const Perturb& perturb) const;
  Tensor feed_forward(const Stream& s, const StreamArgs& a, const Tensor& x) const;
};

}  // namespace vidax::ltx2
