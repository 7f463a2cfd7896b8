// The blocks of the HunyuanVideo 1.0 DiT (hyvideo/modules/models.py, token_refiner.py), top to bottom.
//
// Token refiner block (IndividualTokenRefinerBlock), on the text tokens only:
//   gate_msa, gate_mlp = adaLN_modulation(c)                 (Linear of SiLU(c), 2 chunks)
//   x += gate_msa * proj(SelfAttn(LN_affine(x)))              (refiner mask, no q/k norm)
//   x += gate_mlp * fc2(SiLU(fc1(LN_affine(x))))
// Double-stream block (MMDoubleStreamBlock), image and text with their own weights:
//   (shift1, scale1, gate1, shift2, scale2, gate2) = *_mod(vec)        per stream
//   q, k, v = qkv(LN(x)(1 + scale1) + shift1), per-head q/k norm; RoPE on the image's q, k only
//   joint attention over [image, text]; x += gate1 * proj(attention); x += gate2 * MLP(LN(x)(1 + scale2) + shift2)
// Single-stream block (MMSingleStreamBlock), on x = [image, text]:
//   (shift, scale, gate) = modulation(vec); [qkv | mlp] = linear1(LN(x)(1 + scale) + shift)
//   q/k norm, RoPE on the image tokens; x += gate * linear2([attention, act(mlp)])
//
// The joint attention's mask (the official flash_attn_varlen call with get_cu_seqlens): per
// sample, the image tokens and the first sum(text_mask) text tokens attend to each other only.
// Here every query row sees the keys [0, image + valid text) (AttentionOptions::kv_lens), which is
// that exactly for those rows; the padded text rows, which the reference lets attend among
// themselves, see the same keys instead. Their values never reach an image token or a valid text
// token (no row attends to them), so the output is the reference's; the padded text rows of the
// text stream are not (docs/models/hunyuanvideo.md).
#pragma once
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "models/hunyuan/dit_config.h"
#include "nn/linear.h"
#include "nn/params.h"

namespace vidax::hunyuan {

// The rotary tables of the image tokens: [N, head_dim/2] F32 (one angle per rotated pair).
struct RopeTables {
  Tensor cos, sin;
};

// get_nd_rotary_pos_embed's [N, head_dim] tables (each angle's cos / sin repeated for its pair,
// repeat_interleave(2)) as the rope op's [N, head_dim / 2]. The reference multiplies element by
// element, so a table whose pairs differ is refused rather than silently halved. (Shared with the
// 1.5 DiT, whose forward takes the same tables.)
RopeTables rope_tables(const Tensor& cos, const Tensor& sin, int64_t tokens, int64_t head_dim);

// Per-head q/k normalization (RMSNorm or affine LayerNorm over head_dim, eps 1e-6); identity when off.
struct QKNorm {
  std::optional<Tensor> weight, bias;
  bool layer = false;
  bool enabled = false;
  static QKNorm load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg);
  Tensor operator()(const Tensor& x) const;  // x [B, S, H, hd]
};

// fc1 -> act -> fc2 (hyvideo MLP).
struct Mlp {
  nn::Linear fc1, fc2;
  std::string act;  // gelu_tanh | gelu | relu | silu
  static Mlp load(nn::ParamSource& params, const std::string& prefix, int64_t dim, int64_t hidden,
                  const std::string& act, DType compute);
  Tensor hidden(const Tensor& x) const;  // act(fc1(x)) (GELU-tanh fused into the GEMM's output stage)
  // residual + gate * fc2(hidden(x)), the gated residual fused where the backend can.
  Tensor gated_residual(const Tensor& x, const Tensor& residual, const Tensor& gate) const {
    return fc2.gated_residual(hidden(x), residual, gate);
  }
};
Tensor activation(const Tensor& x, const std::string& act);  // get_activation_layer(act)

struct RefinerBlock {
  Tensor norm1_w, norm1_b, norm2_w, norm2_b;
  nn::Linear qkv, proj, modulation;  // self_attn_qkv, self_attn_proj, adaLN_modulation.1
  Mlp mlp;
  int64_t heads = 0;
  static RefinerBlock load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg, DType compute);
  // x [B, L, D] fp32, c_silu = SiLU(c) [B, D], bias: the refiner mask as an additive score bias
  // [B, 1, L, L] (0 / -inf), undefined for none.
  Tensor forward(const Tensor& x, const Tensor& c_silu, const Tensor& bias) const;
};

struct DoubleStreamBlock {
  struct Stream {
    nn::Linear mod, qkv, proj;
    QKNorm q_norm, k_norm;
    Mlp mlp;
  };
  Stream img, txt;
  static DoubleStreamBlock load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg,
                                DType compute);
  // img_x [B, N, D], txt_x [B, L, D] (fp32 residual streams), vec_silu = SiLU(vec) [B, D];
  // kv_lens: per sample, image + valid text tokens. -> (img, txt).
  std::pair<Tensor, Tensor> forward(const Tensor& img_x, const Tensor& txt_x, const Tensor& vec_silu,
                                    const RopeTables& rope, const std::vector<int64_t>& kv_lens,
                                    const DiTConfig& cfg) const;
};

struct SingleStreamBlock {
  nn::Linear linear1, linear2, modulation;
  QKNorm q_norm, k_norm;
  std::string act;
  static SingleStreamBlock load(nn::ParamSource& params, const std::string& prefix, const DiTConfig& cfg,
                                DType compute);
  // x [B, N + L, D] = [image, text] (fp32), n_img = N -> x.
  Tensor forward(const Tensor& x, const Tensor& vec_silu, int64_t n_img, const RopeTables& rope,
                 const std::vector<int64_t>& kv_lens, const DiTConfig& cfg) const;
};

}  // namespace vidax::hunyuan
