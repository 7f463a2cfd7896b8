// The device interface behind the op set (ops.h). ops.cpp validates inputs,
// infers the output's shape and dtype, allocates it on the inputs' device and
// calls exactly one virtual here; a Backend only computes (CPU, CUDA) or
// records (Meta, see recording.h). Inputs may be strided views; `out` is a
// fresh contiguous tensor of the inferred shape and dtype.
//
// Two kinds of virtual (docs/architecture.md, "Backends"):
// - CORE (pure virtual): the primitives every backend writes.
// - FUSED (marked "fused:" below): composites with a default built from core
//   ops (ops_fused.cpp), run through ops:: on the inputs' device, so a new
//   backend that writes only the core set runs every op. A default computes
//   the values of the fused CPU kernel: the same roundings in the same order
//   (in fp32, or f64 when the output or an operand is F64), except where a
//   kernel contracts a multiply-add into an FMA or sums in another order: there
//   a default may differ by one rounding of the compute dtype per contracted
//   term (axpby: u*|a x| + u*|b y|), then the output's rounding. The Wan DiT
//   runs bit-identically through the defaults (tests/plugin). Backends
//   override a fused op to save passes over memory (the CPU backend overrides
//   all of them).
#pragma once
#include <array>
#include <optional>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "core/tensor.h"

namespace vidax {

class Backend {
 public:
  virtual ~Backend() = default;
  virtual const char* name() const = 0;

  // ---- data movement ----
  virtual void copy(const Tensor& x, Tensor& out) = 0;
  virtual void cast(const Tensor& x, Tensor& out) = 0;
  virtual void concat(const std::vector<Tensor>& xs, int64_t dim, Tensor& out) = 0;
  virtual void pad(const Tensor& x, const std::vector<int64_t>& pads, ops::PadMode mode, Tensor& out) = 0;
  virtual void embedding(const Tensor& ids, const Tensor& table, Tensor& out) = 0;
  // fused: [N, C*rt*rh*rw, T, H, W] <-> [N, C, T*rt, H*rh, W*rw]; default: a view, a permute, a copy (exact).
  virtual void pixel_shuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& out);
  virtual void pixel_unshuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& out);

  // ---- elementwise (binary ops broadcast a and b to out's shape) ----
  virtual void add(const Tensor& a, const Tensor& b, Tensor& out) = 0;
  virtual void sub(const Tensor& a, const Tensor& b, Tensor& out) = 0;
  virtual void mul(const Tensor& a, const Tensor& b, Tensor& out) = 0;
  virtual void div(const Tensor& a, const Tensor& b, Tensor& out) = 0;
  virtual void scale(const Tensor& x, double alpha, Tensor& out) = 0;
  virtual void add_scalar(const Tensor& x, double alpha, Tensor& out) = 0;
  // fused: default scale, scale, add in the compute dtype, then cast.
  virtual void axpby(double a, const Tensor& x, double b, const Tensor& y, Tensor& out);
  virtual void clamp(const Tensor& x, double lo, double hi, Tensor& out) = 0;
  virtual void gelu(const Tensor& x, ops::GeluMode mode, Tensor& out) = 0;
  virtual void silu(const Tensor& x, Tensor& out) = 0;
  virtual void sigmoid(const Tensor& x, Tensor& out) = 0;
  virtual void tanh(const Tensor& x, Tensor& out) = 0;
  virtual void sin(const Tensor& x, Tensor& out) = 0;
  virtual void exp(const Tensor& x, Tensor& out) = 0;
  virtual void sqrt(const Tensor& x, Tensor& out) = 0;
  virtual void log(const Tensor& x, Tensor& out) = 0;
  virtual void relu(const Tensor& x, Tensor& out) = 0;
  // fused: default add_scalar(scale, 1), mul, add in the compute dtype, then cast.
  virtual void modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, Tensor& out);
  // fused: default mul, add in the compute dtype, then cast.
  virtual void gated_residual(const Tensor& x, const Tensor& gate, const Tensor& y, Tensor& out);

  // ---- reductions / norms ----
  virtual void layer_norm(const Tensor& x, const std::optional<Tensor>& weight,
                          const std::optional<Tensor>& bias, double eps, Tensor& out) = 0;
  // Core: the norm with its statistic given (rms_norm and tensor-parallel norms build on it).
  virtual void rms_norm_with_sum_sq(const Tensor& x, const Tensor& sum_sq, int64_t count,
                                    const std::optional<Tensor>& weight, double eps, Tensor& out) = 0;
  // fused: default f64 squares summed over the row (sum), then rms_norm_with_sum_sq.
  virtual void rms_norm(const Tensor& x, const std::optional<Tensor>& weight, double eps, Tensor& out);
  // fused: default layer_norm rounded to F32, then modulate's ops in f32, then cast.
  virtual void layer_norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps,
                                   Tensor& out);
  virtual void l2_normalize(const Tensor& x, int64_t dim, double eps, Tensor& out) = 0;
  virtual void group_norm(const Tensor& x, int64_t groups, const std::optional<Tensor>& weight,
                          const std::optional<Tensor>& bias, double eps, Tensor& out) = 0;
  // fused: ops::l2_norm_scale_silu; `out` may be x itself. Default: the four ops, then a copy.
  virtual void l2_norm_scale_silu(const Tensor& x, const Tensor& gamma, double scale, double eps, Tensor& out);
  virtual void softmax(const Tensor& x, int64_t dim, Tensor& out) = 0;
  virtual void sum(const Tensor& x, int64_t dim, Tensor& out) = 0;   // out keeps dim as size 1
  virtual void mean(const Tensor& x, int64_t dim, Tensor& out) = 0;  // out keeps dim as size 1
  virtual bool all_finite(const Tensor& x) = 0;

  // ---- matrix products ----
  // x viewed as [M, K], out as [M, N].
  virtual void linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, Tensor& out) = 0;
  // fused: ops::linear_gelu / ops::linear_gated_residual. Defaults: linear, then the second op.
  virtual void linear_gelu(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, ops::GeluMode mode,
                           Tensor& out);
  virtual void linear_gated_residual(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
                                     const Tensor& residual, const Tensor& gate, Tensor& out);
  // fused: ops::linear with a block-quantized weight w [N, K] (Tensor::is_quantized, host
  // memory): out = x w^T + b with w's values dequantized as ggml does and cast to x's dtype,
  // a panel of rows at a time (never all of w widened at once). Default: each panel
  // dequantized into a panel of x's dtype, then linear on it (the values of linear on the
  // whole dequantized weight up to the GEMM's summation order per panel). A scaled fp8/int8
  // weight (Tensor::is_scaled) takes the same path: each panel widened with its scale applied
  // in x's dtype (Tensor::to), as ComfyUI's scaled fp8 Linear computes weight.to(D) * scale.
  virtual void linear_quantized(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, Tensor& out);
  // a [..., M, K], b [..., K, N]; their batch dims broadcast to out's [..., M, N].
  virtual void matmul(const Tensor& a, const Tensor& b, Tensor& out) = 0;

  // ---- attention / positional ----
  // opt.scale is already resolved (never 0); opt.bias, when set, is [B or 1, H or 1, Lq, Lk].
  virtual void attention(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt,
                         Tensor& out) = 0;
  virtual void rope(const Tensor& x, const Tensor& cos, const Tensor& sin, ops::RopeMode mode, Tensor& out) = 0;

  // ---- convolution / resampling ----
  virtual void conv3d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
                      std::array<int64_t, 3> stride, std::array<int64_t, 3> padding, Tensor& out) = 0;
  // fused: ops::causal_conv3d. The default concatenates and pads, then calls conv3d (backends that can
  // read the segments in place override it).
  virtual void causal_conv3d(const std::vector<Tensor>& xs, const Tensor& w, const std::optional<Tensor>& bias,
                             std::array<int64_t, 3> stride, std::array<int64_t, 3> padding,
                             const std::optional<Tensor>& residual, Tensor& out);
  virtual void conv2d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
                      std::array<int64_t, 2> stride, std::array<int64_t, 2> padding, Tensor& out) = 0;
  virtual void upsample_nearest(const Tensor& x, const std::vector<int64_t>& factors, Tensor& out) = 0;
};

// The backend registry: one Backend per Device. CPU and Meta (the recording backend) are
// built in; another backend registers itself (with its DeviceMemory, core/device_memory.h,
// so that Tensor::empty can allocate its outputs). Registering replaces the previous
// backend; nullptr unregisters (not CPU or Meta). Not thread-safe: register at start-up.
void register_backend(Device device, Backend* backend);
// The backend that runs ops on tensors of `device`; throws vidax::Error naming the device
// and the registered ones when there is none.
Backend& backend_for(Device device);
std::string registered_backends();  // "cpu, meta", for messages
// Profiling hook (vidax bench --profile): while set, CPU tensors run through `b`,
// which must forward to the CPU backend; nullptr restores the CPU backend. Not thread-safe.
void set_cpu_backend_interceptor(Backend* b);

}  // namespace vidax
