// The op set that model and layer code calls on Tensor handles (DESIGN.md §2,
// "Models never touch raw data"). Each op validates its inputs, infers the
// output shape and dtype, allocates the output on the inputs' device and hands
// the work to that device's Backend (backend.h): CPU runs it now, Meta (the
// recording backend) records it and runs nothing, CUDA/PJRT later.
//
// Conventions
// - Out-of-place: every op returns a new tensor (no hidden aliasing).
// - Inputs may be strided views unless a comment says "contiguous".
// - Float compute: inputs F32/BF16/F16; the output dtype is the first
//   activation input's dtype unless stated; all reductions (norm statistics,
//   softmax, GEMM accumulation) are done in fp32 (f64 where stated).
// - Broadcasting in binary ops follows PyTorch (trailing-aligned, size-1 dims
//   stretch).
#pragma once
#include <array>
#include <optional>
#include <vector>

#include "core/tensor.h"

namespace vidax::ops {

// ---- data movement ----------------------------------------------------------
Tensor copy(const Tensor& x);                      // contiguous copy, same dtype
Tensor cast(const Tensor& x, DType dtype);         // RNE like torch .to()
Tensor concat(const std::vector<Tensor>& xs, int64_t dim);
// Pads the last len(pads)/2 dims; pads as torch.nn.functional.pad:
// {last_lo, last_hi, prev_lo, prev_hi, ...}. Mode zero or replicate.
enum class PadMode { Zero, Replicate };
Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, PadMode mode = PadMode::Zero);
// Row gather: out[..., :] = table[ids[...], :]. ids I64/I32, table [V, D].
Tensor embedding(const Tensor& ids, const Tensor& table);

// ---- elementwise --------------------------------------------------------------
Tensor add(const Tensor& a, const Tensor& b);
Tensor sub(const Tensor& a, const Tensor& b);
Tensor mul(const Tensor& a, const Tensor& b);
Tensor div(const Tensor& a, const Tensor& b);
Tensor scale(const Tensor& x, double alpha);                 // alpha * x
Tensor add_scalar(const Tensor& x, double alpha);            // x + alpha
// a*x + b*y in fp32 (schedulers: x_{t+1} = a*x + b*eps), output dtype of x.
Tensor axpby(double a, const Tensor& x, double b, const Tensor& y);
Tensor clamp(const Tensor& x, double lo, double hi);
enum class GeluMode { Erf, Tanh };
Tensor gelu(const Tensor& x, GeluMode mode);
Tensor silu(const Tensor& x);
Tensor sigmoid(const Tensor& x);
Tensor tanh(const Tensor& x);
Tensor sin(const Tensor& x);  // std::sin per element (the LTX-2.3 vocoder's Snake activations)
Tensor exp(const Tensor& x);  // std::exp per element
Tensor sqrt(const Tensor& x);  // std::sqrt per element (NaN below 0; the LTX-2 audio STFT magnitude)
Tensor log(const Tensor& x);   // std::log per element (NaN below 0, -inf at 0; the log-mel)
Tensor relu(const Tensor& x);
// x * (1 + scale) + shift, scale/shift broadcast against x (DiT adaLN).
Tensor modulate(const Tensor& x, const Tensor& shift, const Tensor& scale);
// x + gate * y, gate broadcast (DiT gated residual).
Tensor gated_residual(const Tensor& x, const Tensor& gate, const Tensor& y);

// ---- reductions / norms (fp32 statistics) -------------------------------------
// Over the last dim. weight/bias optional ([D]). out_dtype (default x's): the result is
// rounded to it on store, the same values as the op followed by cast(out_dtype).
Tensor layer_norm(const Tensor& x, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps, std::optional<DType> out_dtype = std::nullopt);
Tensor rms_norm(const Tensor& x, const std::optional<Tensor>& weight, double eps);
// rms_norm with the sum of squares given: x * rsqrt(sum_sq / count + eps) * weight, sum_sq [..., 1]
// (F64 or F32, one per row of x). Tensor parallelism: x is this rank's slice of a longer vector,
// sum_sq the all-reduced sum over the whole vector and count its full length (DESIGN.md principle 6).
Tensor rms_norm_with_sum_sq(const Tensor& x, const Tensor& sum_sq, int64_t count,
                            const std::optional<Tensor>& weight, double eps);
// layer_norm (no affine) fused with modulate: LN(x) * (1 + scale) + shift; out_dtype as layer_norm's.
Tensor layer_norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps,
                           std::optional<DType> out_dtype = std::nullopt);
// x / max(||x||_2 over dim, eps)   (torch.nn.functional.normalize)
Tensor l2_normalize(const Tensor& x, int64_t dim, double eps = 1e-12);
// x [N, C, *spatial]; weight/bias [C] optional.
Tensor group_norm(const Tensor& x, int64_t groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps);
// silu(l2_normalize(x, 1, eps) * scale * gamma) in one pass, rounding as those four ops do (the Wan
// VAE's RMS_norm + SiLU). x [N, C, ...], gamma [C]. x is taken by value: when the caller hands over
// the only reference to its buffer, the result is written over it (nothing else can see that).
Tensor l2_norm_scale_silu(Tensor x, const Tensor& gamma, double scale, double eps = 1e-12);
Tensor softmax(const Tensor& x, int64_t dim);
Tensor sum(const Tensor& x, int64_t dim, bool keepdim = false);  // fp32 accumulation
Tensor mean(const Tensor& x, int64_t dim, bool keepdim = false);
// true when every element is finite (used to stop a run on NaN/Inf).
bool all_finite(const Tensor& x);

// ---- matrix products ------------------------------------------------------------
// y = x W^T + bias. x [..., K] (F32/BF16), W [N, K] (F32/BF16/F16; int8/fp8 later),
// bias [N] optional. Output dtype = x's. fp32 accumulation. Backends may pack W
// once and cache the pack (keyed by W's buffer and offset).
Tensor linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias = std::nullopt);
// Fused forms of linear and the op that reads its result, with the same values:
// the product is rounded to x's dtype first, exactly as linear's output, then
// gelu(y, mode) (output x's dtype), or residual + gate * y (gated_residual;
// gate broadcast to the product's shape, output residual's dtype). Backends
// that can apply the second op as the GEMM writes its output save a pass over
// memory; the others run the two ops.
Tensor linear_gelu(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, GeluMode mode);
Tensor linear_gated_residual(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
                             const Tensor& residual, const Tensor& gate);
// Batched a [..., M, K] @ b [..., K, N] with broadcast batch dims.
Tensor matmul(const Tensor& a, const Tensor& b);

// ---- attention --------------------------------------------------------------------
struct AttentionOptions {
  double scale = 0;            // 0 -> 1/sqrt(D)
  std::vector<int64_t> kv_lens;  // per batch: keys >= kv_lens[b] are masked (empty = none)
  std::optional<Tensor> bias;  // additive score bias [B or 1, H or 1, Lq, Lk] (T5 position bias)
  bool causal = false;
};
// q [B, Lq, H, D], k [B, Lk, H, D], v [B, Lk, H, Dv] -> [B, Lq, H, Dv].
// Flash style: online softmax in fp32, no Lq x Lk buffer.
Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt = {});

// ---- positional -------------------------------------------------------------------
enum class RopeMode { InterleavedPairs, SplitHalf };
// x [B, L, H, D]; cos/sin [L, D/2] (F32 or F64: F64 tables rotate in f64 as Wan's
// complex128 rope_apply does). InterleavedPairs rotates (x[2i], x[2i+1]);
// SplitHalf rotates (x[i], x[i + D/2]).
Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin, RopeMode mode);

// ---- convolution / resampling -------------------------------------------------------
// x [N, C, T, H, W], w [O, C/groups, kT, kH, kW], bias [O]; zero padding per side
// {pT, pH, pW} (asymmetric/causal padding: call pad() first).
Tensor conv3d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
              std::array<int64_t, 3> stride, std::array<int64_t, 3> padding);
// conv3d over the time concatenation of xs (each [N, C, T_i, H, W], one N, C, H, W) with padding[0]
// zero frames in FRONT only (a causal conv) and {pH, pW} on both spatial sides: the value of
// conv3d(pad(concat(xs, 2), front padding[0]), w, bias, stride, {0, pH, pW}) without materializing
// the concatenation or the padding (a causal conv over cached frames + the current chunk).
// residual, when given (the output's shape), is added after the bias: add(conv3d(...), residual).
Tensor causal_conv3d(const std::vector<Tensor>& xs, const Tensor& w, const std::optional<Tensor>& bias,
                     std::array<int64_t, 3> stride, std::array<int64_t, 3> padding,
                     const std::optional<Tensor>& residual = std::nullopt);
// x [N, C, H, W], w [O, C, kH, kW].
Tensor conv2d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
              std::array<int64_t, 2> stride, std::array<int64_t, 2> padding);
// Nearest upsampling of the trailing spatial dims by integer factors
// (factors.size() = number of trailing dims scaled).
Tensor upsample_nearest(const Tensor& x, const std::vector<int64_t>& factors);
// [N, C*rt*rh*rw, T, H, W] <-> [N, C, T*rt, H*rh, W*rw] (channel order c, rt, rh, rw).
Tensor pixel_shuffle3d(const Tensor& x, std::array<int64_t, 3> r);
Tensor pixel_unshuffle3d(const Tensor& x, std::array<int64_t, 3> r);

}  // namespace vidax::ops
