// kernels.h's tiered entry points (kernel_tiers.h): each calls the copy of the CPU tier
// in use, chosen once per process (cpu_tier.h). Compiled for the baseline.
#include <atomic>

#include "backend/cpu/amx.h"
#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/cpu_tier.h"
#include "backend/cpu/kernel_tiers.h"

namespace vidax::cpu {

namespace {
bool avx512_kernels() {
  static const bool on = cpu_tier_at_least(CpuTier::Avx512);
  return on;
}
}  // namespace

#define VIDAX_TIERED(fn, ...) return avx512_kernels() ? tier_avx512::fn(__VA_ARGS__) : tier_avx2::fn(__VA_ARGS__)

void binary(Binary op, const Tensor& a, const Tensor& b, Tensor& out) { VIDAX_TIERED(binary, op, a, b, out); }
void unary(Unary op, const Tensor& x, double p0, double p1, Tensor& out) { VIDAX_TIERED(unary, op, x, p0, p1, out); }
void axpby(double a, const Tensor& x, double b, const Tensor& y, Tensor& out) { VIDAX_TIERED(axpby, a, x, b, y, out); }
void modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, Tensor& out) {
  VIDAX_TIERED(modulate, x, shift, scale, out);
}
void gated_residual(const Tensor& x, const Tensor& gate, const Tensor& y, Tensor& out) {
  VIDAX_TIERED(gated_residual, x, gate, y, out);
}
bool all_finite(const Tensor& x) { VIDAX_TIERED(all_finite, x); }
void layer_norm(const Tensor& x, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, double eps,
                Tensor& out) {
  VIDAX_TIERED(layer_norm, x, weight, bias, eps, out);
}
void rms_norm(const Tensor& x, const std::optional<Tensor>& weight, double eps, Tensor& out) {
  VIDAX_TIERED(rms_norm, x, weight, eps, out);
}
void rms_norm_with_sum_sq(const Tensor& x, const Tensor& sum_sq, int64_t count, const std::optional<Tensor>& weight,
                          double eps, Tensor& out) {
  VIDAX_TIERED(rms_norm_with_sum_sq, x, sum_sq, count, weight, eps, out);
}
void layer_norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps, Tensor& out) {
  VIDAX_TIERED(layer_norm_modulate, x, shift, scale, eps, out);
}
void group_norm(const Tensor& x, int64_t groups, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                double eps, Tensor& out) {
  VIDAX_TIERED(group_norm, x, groups, weight, bias, eps, out);
}
void reduce_dim(DimReduce op, const Tensor& x, int64_t dim, double eps, Tensor& out) {
  VIDAX_TIERED(reduce_dim, op, x, dim, eps, out);
}
void attention(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt, Tensor& out) {
  VIDAX_TIERED(attention, q, k, v, opt, out);
}
void l2_norm_scale_silu(const Tensor& x, const Tensor& gamma, double scale, double eps, Tensor& out) {
  VIDAX_TIERED(l2_norm_scale_silu, x, gamma, scale, eps, out);
}

#undef VIDAX_TIERED

// The AMX attention's switch lives here, in baseline code: attention.cpp asks it on every CPU.
namespace attn {
namespace {
std::atomic<bool> g_amx_enabled{true};
}  // namespace

void set_amx_enabled(bool enabled) { g_amx_enabled = enabled; }

// AMX tiles for the products, AVX512-BF16 for rounding P (vcvtne2ps2bf16): the amx tier has both.
bool amx_available() { return g_amx_enabled && cpu_tier_at_least(CpuTier::Amx); }
}  // namespace attn

bool amx::available() { return cpu_tier_at_least(CpuTier::Amx); }

}  // namespace vidax::cpu
