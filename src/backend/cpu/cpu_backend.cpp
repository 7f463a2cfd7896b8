#include "backend/cpu/cpu_backend.h"

#include "backend/cpu/common.h"
#include "backend/cpu/cpu_tier.h"
#include "backend/cpu/kernels.h"

namespace vidax::cpu {

namespace {

class CpuBackend final : public Backend {
 public:
  const char* name() const override { return "cpu"; }

  void copy(const Tensor& x, Tensor& o) override { copy_strided(x, o); }
  void cast(const Tensor& x, Tensor& o) override { copy_strided(x, o); }
  void concat(const std::vector<Tensor>& xs, int64_t dim, Tensor& o) override { cpu::concat(xs, dim, o); }
  void pad(const Tensor& x, const std::vector<int64_t>& pads, ops::PadMode mode, Tensor& o) override {
    cpu::pad(x, pads, mode, o);
  }
  void embedding(const Tensor& ids, const Tensor& table, Tensor& o) override { cpu::embedding(ids, table, o); }

  void add(const Tensor& a, const Tensor& b, Tensor& o) override { binary(Binary::Add, a, b, o); }
  void sub(const Tensor& a, const Tensor& b, Tensor& o) override { binary(Binary::Sub, a, b, o); }
  void mul(const Tensor& a, const Tensor& b, Tensor& o) override { binary(Binary::Mul, a, b, o); }
  void div(const Tensor& a, const Tensor& b, Tensor& o) override { binary(Binary::Div, a, b, o); }
  void scale(const Tensor& x, double alpha, Tensor& o) override { unary(Unary::Scale, x, alpha, 0, o); }
  void add_scalar(const Tensor& x, double alpha, Tensor& o) override { unary(Unary::AddScalar, x, alpha, 0, o); }
  void axpby(double a, const Tensor& x, double b, const Tensor& y, Tensor& o) override { cpu::axpby(a, x, b, y, o); }
  void clamp(const Tensor& x, double lo, double hi, Tensor& o) override { unary(Unary::Clamp, x, lo, hi, o); }
  void gelu(const Tensor& x, ops::GeluMode mode, Tensor& o) override {
    unary(mode == ops::GeluMode::Erf ? Unary::GeluErf : Unary::GeluTanh, x, 0, 0, o);
  }
  void silu(const Tensor& x, Tensor& o) override { unary(Unary::Silu, x, 0, 0, o); }
  void sigmoid(const Tensor& x, Tensor& o) override { unary(Unary::Sigmoid, x, 0, 0, o); }
  void tanh(const Tensor& x, Tensor& o) override { unary(Unary::Tanh, x, 0, 0, o); }
  void sin(const Tensor& x, Tensor& o) override { unary(Unary::Sin, x, 0, 0, o); }
  void exp(const Tensor& x, Tensor& o) override { unary(Unary::Exp, x, 0, 0, o); }
  void sqrt(const Tensor& x, Tensor& o) override { unary(Unary::Sqrt, x, 0, 0, o); }
  void log(const Tensor& x, Tensor& o) override { unary(Unary::Log, x, 0, 0, o); }
  void relu(const Tensor& x, Tensor& o) override { unary(Unary::Relu, x, 0, 0, o); }
  void modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, Tensor& o) override {
    cpu::modulate(x, shift, scale, o);
  }
  void gated_residual(const Tensor& x, const Tensor& gate, const Tensor& y, Tensor& o) override {
    cpu::gated_residual(x, gate, y, o);
  }

  void layer_norm(const Tensor& x, const std::optional<Tensor>& w, const std::optional<Tensor>& b, double eps,
                  Tensor& o) override {
    cpu::layer_norm(x, w, b, eps, o);
  }
  void rms_norm(const Tensor& x, const std::optional<Tensor>& w, double eps, Tensor& o) override {
    cpu::rms_norm(x, w, eps, o);
  }
  void rms_norm_with_sum_sq(const Tensor& x, const Tensor& ss, int64_t count, const std::optional<Tensor>& w,
                            double eps, Tensor& o) override {
    cpu::rms_norm_with_sum_sq(x, ss, count, w, eps, o);
  }
  void layer_norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps, Tensor& o) override {
    cpu::layer_norm_modulate(x, shift, scale, eps, o);
  }
  void l2_normalize(const Tensor& x, int64_t dim, double eps, Tensor& o) override {
    reduce_dim(DimReduce::L2Normalize, x, dim, eps, o);
  }
  void group_norm(const Tensor& x, int64_t groups, const std::optional<Tensor>& w, const std::optional<Tensor>& b,
                  double eps, Tensor& o) override {
    cpu::group_norm(x, groups, w, b, eps, o);
  }
  void softmax(const Tensor& x, int64_t dim, Tensor& o) override { reduce_dim(DimReduce::Softmax, x, dim, 0, o); }
  void sum(const Tensor& x, int64_t dim, Tensor& o) override { reduce_dim(DimReduce::Sum, x, dim, 0, o); }
  void mean(const Tensor& x, int64_t dim, Tensor& o) override { reduce_dim(DimReduce::Mean, x, dim, 0, o); }
  bool all_finite(const Tensor& x) override { return cpu::all_finite(x); }

  void linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, Tensor& o) override {
    cpu::linear(x, w, b, o);
  }
  // Where the GEMM cannot fuse, the two kernels run here directly (not through ops::, which
  // would pass the profiler's interceptor again and count the GEMM twice).
  void linear_gelu(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, ops::GeluMode mode,
                   Tensor& o) override {
    if (cpu::linear_gelu(x, w, b, mode, o)) return;
    Tensor y = Tensor::empty(o.shape(), x.dtype());
    cpu::linear(x, w, b, y);
    gelu(y, mode, o);
  }
  void linear_gated_residual(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b,
                             const Tensor& residual, const Tensor& gate, Tensor& o) override {
    if (cpu::linear_gated_residual(x, w, b, residual, gate, o)) return;
    Tensor y = Tensor::empty(o.shape(), x.dtype());
    cpu::linear(x, w, b, y);
    cpu::gated_residual(residual, gate, y, o);
  }
  void matmul(const Tensor& a, const Tensor& b, Tensor& o) override { cpu::matmul(a, b, o); }

  void attention(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt,
                 Tensor& o) override {
    cpu::attention(q, k, v, opt, o);
  }
  void rope(const Tensor& x, const Tensor& cos, const Tensor& sin, ops::RopeMode mode, Tensor& o) override {
    cpu::rope(x, cos, sin, mode, o);
  }

  void conv3d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, std::array<int64_t, 3> stride,
              std::array<int64_t, 3> padding, Tensor& o) override {
    conv_nd(x, w, b, {stride.begin(), stride.end()}, {padding.begin(), padding.end()}, o);
  }
  void l2_norm_scale_silu(const Tensor& x, const Tensor& gamma, double scale, double eps, Tensor& o) override {
    if (x.dtype() == DType::F32 && o.dtype() == DType::F32 && x.is_contiguous())
      cpu::l2_norm_scale_silu(x, gamma, scale, eps, o);
    else
      Backend::l2_norm_scale_silu(x, gamma, scale, eps, o);
  }
  void causal_conv3d(const std::vector<Tensor>& xs, const Tensor& w, const std::optional<Tensor>& b,
                     std::array<int64_t, 3> stride, std::array<int64_t, 3> padding,
                     const std::optional<Tensor>& residual, Tensor& o) override {
    // The fused residual add is fp32; other dtypes round the conv first (the default's two ops).
    if (residual && o.dtype() != DType::F32) return Backend::causal_conv3d(xs, w, b, stride, padding, residual, o);
    cpu::causal_conv3d(xs, w, b, stride, padding, residual, o);
  }
  void conv2d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, std::array<int64_t, 2> stride,
              std::array<int64_t, 2> padding, Tensor& o) override {
    conv_nd(x, w, b, {stride.begin(), stride.end()}, {padding.begin(), padding.end()}, o);
  }
  void upsample_nearest(const Tensor& x, const std::vector<int64_t>& factors, Tensor& o) override {
    cpu::upsample_nearest(x, factors, o);
  }
  void pixel_shuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& o) override {
    cpu::pixel_shuffle3d(x, r, o);
  }
  void pixel_unshuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& o) override {
    cpu::pixel_unshuffle3d(x, r, o);
  }
};

}  // namespace

Backend& cpu_backend() {
  // The CPU tier is decided here, on the first use of the backend and outside any OpenMP
  // region, so that a VIDAX_CPU_TIER the CPU cannot honour is refused with its Error
  // before any kernel runs (cpu_tier.h).
  (void)cpu_tier();
  static CpuBackend be;
  return be;
}

}  // namespace vidax::cpu
