// One Wan 2.1 DiT block (official WanAttentionBlock), top to bottom:
//   m = modulation + e0                                   (fp32, 6 chunks)
//   x = x + SelfAttn(LN(x)*(1+m1) + m0) * m2              (fp32 residual)
//   x = x + CrossAttn(norm3(x), text)                     (no gate; norm3 = affine LN;
//                                                          I2V adds Attn(q, image) before the output linear)
//   x = x + FFN(LN(x)*(1+m4) + m3) * m5                   (GELU-tanh)
// Attention: q/k RMSNorm over the whole dim (all heads), 3D RoPE on self-attn
// q/k only, softmax(q k^T / sqrt(d)) v. Every cast the reference's autocast
// makes is an explicit nn::to_dtype here.
#pragma once
#include <array>
#include <optional>
#include <string>

#include "models/wan/dit_config.h"
#include "models/wan/rope.h"
#include "nn/linear.h"
#include "nn/parallel.h"
#include "nn/params.h"
#include "nn/ulysses.h"

namespace vidax::wan {

// WanSelfAttention / WanT2VCrossAttention / WanI2VCrossAttention parameters.
struct AttentionWeights {
  nn::Linear q, k, v, o;
  std::optional<Tensor> norm_q, norm_k;  // [dim] RMSNorm gains (absent when qk_norm is off)
  // I2V cross-attention only: keys/values of the image tokens.
  std::optional<nn::Linear> k_img, v_img;
  std::optional<Tensor> norm_k_img;
  // Tensor parallelism: q/k/v hold `heads` of the num_heads heads (column-parallel), o is
  // row-parallel, the q/k norms reduce over tp (nn/parallel.h). One rank: all heads.
  nn::TensorParallel tp;
  int64_t heads = 0;

  // `params` hands out this rank's shards (nn::shard_params); tp says how many ways they are split.
  static AttentionWeights load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg,
                               DType compute, bool image_kv = false, const nn::TensorParallel& tp = {});
};

// The cross-attention keys and values of one block for one prompt batch
// (computed once per request and branch, DESIGN.md principle 1).
struct CrossKV {
  Tensor k;  // [B, text_len, H, D]
  Tensor v;  // [B, text_len, H, D]
  Tensor k_img, v_img;  // I2V/FLF2V: [B, image tokens, H, D]; undefined for T2V
};

struct DiTBlock {
  Tensor modulation;  // [1, 6, dim], fp32 math
  AttentionWeights self_attn, cross_attn;
  std::optional<Tensor> norm3_weight, norm3_bias;  // cross-attn LayerNorm affine (cross_attn_norm)
  nn::Linear ffn_in, ffn_out;                      // ffn.0 (dim -> ffn_dim), ffn.2 (ffn_dim -> dim)

  static DiTBlock load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg, DType compute,
                       const nn::TensorParallel& tp = {});

  // context [B, text_len, dim] (text_embedding output) and, for I2V, image
  // [B, tokens, dim] (img_emb output; undefined for T2V) -> this block's cross K/V.
  CrossKV cross_kv(const Tensor& context, const Tensor& image, const DiTConfig& cfg) const;
  // The two halves: the text K/V alone (image K/V undefined), and the image K/V of an I2V block.
  CrossKV text_kv(const Tensor& context, const DiTConfig& cfg) const;
  std::pair<Tensor, Tensor> image_kv(const Tensor& image, const DiTConfig& cfg) const;

  // x [B, L, dim] (fp32, or the compute dtype straight after the patch embedding),
  // e0 [B, 6, dim] (or per token [B, 6, L, dim], L this rank's tokens) fp32 -> [B, L, dim] fp32. Under sequence parallelism x is this rank's
  // chunk of the tokens (rope likewise) and self-attention runs through nn::ulysses_attention.
  Tensor forward(const Tensor& x, const Tensor& e0, const RopeTables& rope, const CrossKV& text,
                 const DiTConfig& cfg, const nn::SequenceParallel& sp = {}) const;
};

// Patchify: x [B, C, F'pt, H'ph, W'pw] -> tokens [B, L, C*pt*ph*pw], token order (f, h, w) row-major,
// features (c, kt, kh, kw): the input of a Conv3d with kernel == stride seen as a linear.
Tensor patchify(const Tensor& x, const std::array<int64_t, 3>& patch);

// LN(x; no affine)*(1 + scale) + shift in fp32. LN rounds to x's dtype first
// (WanLayerNorm's .type_as(x)), as the reference does for a bf16 x. The fp32 result is
// rounded to out_dtype: the consuming Linear's compute dtype (autocast's cast, fused).
Tensor norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps,
                     DType out_dtype = DType::F32);

}  // namespace vidax::wan
