// The kernels compiled once per CPU tier (isa.h): elementwise.cpp, norms.cpp,
// norm_silu.cpp and attention.cpp are built as tier_avx2 (the x86-64-v3 baseline:
// their portable paths, vectorized by the compiler) and again as tier_avx512 (from
// the wrappers in avx512/, with AVX-512 flags: their AVX-512 paths).
// kernel_dispatch.cpp defines kernels.h's entry points, which call the copy of the
// tier in use (cpu_tier.h). The AMX kernels (gemm_amx.cpp, attention_amx.cpp) are
// one copy, compiled with AMX flags and entered only at the amx tier.
#pragma once
#include "backend/cpu/kernels.h"

#define VIDAX_TIERED_KERNEL_DECLS                                                                                 \
  void binary(Binary op, const Tensor& a, const Tensor& b, Tensor& out);                                         \
  void unary(Unary op, const Tensor& x, double p0, double p1, Tensor& out);                                      \
  void axpby(double a, const Tensor& x, double b, const Tensor& y, Tensor& out);                                 \
  void modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, Tensor& out);                         \
  void gated_residual(const Tensor& x, const Tensor& gate, const Tensor& y, Tensor& out);                        \
  bool all_finite(const Tensor& x);                                                                              \
  void layer_norm(const Tensor& x, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,        \
                  double eps, Tensor& out);                                                                      \
  void rms_norm(const Tensor& x, const std::optional<Tensor>& weight, double eps, Tensor& out);                  \
  void rms_norm_with_sum_sq(const Tensor& x, const Tensor& sum_sq, int64_t count,                                \
                            const std::optional<Tensor>& weight, double eps, Tensor& out);                       \
  void layer_norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps, Tensor& out);  \
  void group_norm(const Tensor& x, int64_t groups, const std::optional<Tensor>& weight,                          \
                  const std::optional<Tensor>& bias, double eps, Tensor& out);                                   \
  void reduce_dim(DimReduce op, const Tensor& x, int64_t dim, double eps, Tensor& out);                          \
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt, Tensor& out); \
  void l2_norm_scale_silu(const Tensor& x, const Tensor& gamma, double scale, double eps, Tensor& out);

namespace vidax::cpu {
namespace tier_avx2 {
VIDAX_TIERED_KERNEL_DECLS
}
namespace tier_avx512 {
VIDAX_TIERED_KERNEL_DECLS
}
}  // namespace vidax::cpu
