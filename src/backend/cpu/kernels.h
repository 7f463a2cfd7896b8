// CPU kernel entry points (one per op), called by CpuBackend. Same contracts as
// Backend's virtuals: validated inputs, preallocated contiguous `out`.
#pragma once
#include <array>
#include <optional>
#include <vector>

#include "backend/ops.h"
#include "core/tensor.h"

namespace vidax::cpu {

// movement.cpp
void concat(const std::vector<Tensor>& xs, int64_t dim, Tensor& out);
void pad(const Tensor& x, const std::vector<int64_t>& pads, ops::PadMode mode, Tensor& out);
void embedding(const Tensor& ids, const Tensor& table, Tensor& out);
void upsample_nearest(const Tensor& x, const std::vector<int64_t>& factors, Tensor& out);
void pixel_shuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& out);
void pixel_unshuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& out);

// elementwise.cpp
enum class Binary { Add, Sub, Mul, Div };
void binary(Binary op, const Tensor& a, const Tensor& b, Tensor& out);
enum class Unary { Scale, AddScalar, Clamp, GeluErf, GeluTanh, Silu, Sigmoid, Tanh, Relu, Sin, Exp, Sqrt, Log };
void unary(Unary op, const Tensor& x, double p0, double p1, Tensor& out);
void axpby(double a, const Tensor& x, double b, const Tensor& y, Tensor& out);
void modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, Tensor& out);
void gated_residual(const Tensor& x, const Tensor& gate, const Tensor& y, Tensor& out);
bool all_finite(const Tensor& x);

// norms.cpp
void layer_norm(const Tensor& x, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, double eps,
                Tensor& out);
void rms_norm(const Tensor& x, const std::optional<Tensor>& weight, double eps, Tensor& out);
void rms_norm_with_sum_sq(const Tensor& x, const Tensor& sum_sq, int64_t count, const std::optional<Tensor>& weight,
                          double eps, Tensor& out);
void layer_norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps, Tensor& out);
void group_norm(const Tensor& x, int64_t groups, const std::optional<Tensor>& weight,
                const std::optional<Tensor>& bias, double eps, Tensor& out);
enum class DimReduce { Sum, Mean, Softmax, L2Normalize };
void reduce_dim(DimReduce op, const Tensor& x, int64_t dim, double eps, Tensor& out);

// gemm.cpp
void linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, Tensor& out);
void matmul(const Tensor& a, const Tensor& b, Tensor& out);
// ops::linear_gelu / ops::linear_gated_residual with the second op in the GEMM's
// output stage (the AMX kernel: bf16 x and w on the shapes it runs); false when
// this call has no fused path, and the caller runs the two ops instead.
bool linear_gelu(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, ops::GeluMode mode, Tensor& out);
bool linear_gated_residual(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, const Tensor& residual,
                           const Tensor& gate, Tensor& out);

// attention.cpp
void attention(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt, Tensor& out);

// rope.cpp
void rope(const Tensor& x, const Tensor& cos, const Tensor& sin, ops::RopeMode mode, Tensor& out);

// norm_silu.cpp: ops::l2_norm_scale_silu for contiguous F32 (out may be x).
void l2_norm_scale_silu(const Tensor& x, const Tensor& gamma, double scale, double eps, Tensor& out);

// conv.cpp
// Bytes of im2col columns per GEMM call (default 8 MiB); tests shrink it to
// exercise output tiles that start mid-row.
void set_conv_column_budget(int64_t bytes);
void conv_nd(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, const std::vector<int64_t>& stride,
             const std::vector<int64_t>& padding, Tensor& out);
// ops::causal_conv3d: reads the time segments in place.
void causal_conv3d(const std::vector<Tensor>& xs, const Tensor& w, const std::optional<Tensor>& bias,
                   std::array<int64_t, 3> stride, std::array<int64_t, 3> padding, const std::optional<Tensor>& residual,
                   Tensor& out);

}  // namespace vidax::cpu
