// Fused ops the Wan VAE's memory budget relies on (ops::causal_conv3d, ops::l2_norm_scale_silu):
// validation, output shape, dispatch; and the Backend defaults of every fused op (backend.h marks
// them; the others' ops live in ops.cpp), built from the core ops. A default runs its ops through
// ops:: on the inputs' device and rounds as the CPU kernel does: operands widened to the compute
// dtype (f64 when the output or an operand is F64, else f32), every step rounded in it, one cast
// into `out` at the end.
#include "backend/backend.h"
#include "backend/ops.h"

#include <algorithm>

namespace vidax {

namespace {

DType compute_dtype(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (t->dtype() == DType::F64) return DType::F64;
  return DType::F32;
}

Tensor widen(const Tensor& t, DType dt) { return t.dtype() == dt ? t : ops::cast(t, dt); }

}  // namespace

namespace ops {

Tensor causal_conv3d(const std::vector<Tensor>& xs, const Tensor& w, const std::optional<Tensor>& bias,
                     std::array<int64_t, 3> stride, std::array<int64_t, 3> padding,
                     const std::optional<Tensor>& residual) {
  VIDAX_CHECK(!xs.empty(), "causal_conv3d: no input segments");
  VIDAX_CHECK(w.defined() && w.dim() == 5, "causal_conv3d: weight must be [O, C/groups, kT, kH, kW], found "
                                               << (w.defined() ? w.str() : std::string("undefined")));
  const Tensor& x0 = xs.front();
  int64_t frames = 0;
  bool meta = w.device() == Device::Meta || (bias && bias->device() == Device::Meta);
  for (const Tensor& x : xs) {
    VIDAX_CHECK(x.defined() && x.dim() == 5, "causal_conv3d: segments must be [N, C, T, H, W], found "
                                                 << (x.defined() ? x.str() : std::string("undefined")));
    VIDAX_CHECK(x.dtype() == x0.dtype() && x.size(0) == x0.size(0) && x.size(1) == x0.size(1) &&
                    x.size(3) == x0.size(3) && x.size(4) == x0.size(4),
                "causal_conv3d: segment " << x.str() << " does not match " << x0.str() << " outside time");
    VIDAX_CHECK(x.dtype() == DType::F32 || x.dtype() == DType::BF16 || x.dtype() == DType::F16,
                "causal_conv3d: segment " << x.str() << " is not a float tensor");
    meta = meta || x.device() == Device::Meta;
    frames += x.size(2);
  }
  const int64_t C = x0.size(1), O = w.size(0), Cg = w.size(1);
  VIDAX_CHECK(Cg > 0 && C % Cg == 0 && O % (C / Cg) == 0,
              "causal_conv3d: weight " << w.str() << " does not fit " << C << " input channels");
  VIDAX_CHECK(!bias || (bias->dim() == 1 && bias->size(0) == O),
              "causal_conv3d: bias " << bias->str() << " must be [" << O << "]");
  Shape out_shape{x0.size(0), O};
  const int64_t in[3] = {frames, x0.size(3), x0.size(4)};
  for (int i = 0; i < 3; ++i) {
    VIDAX_CHECK(stride[i] >= 1 && padding[i] >= 0,
                "causal_conv3d: stride " << stride[i] << " / padding " << padding[i] << " invalid");
    // Time: padding[0] frames in front only; space: both sides.
    const int64_t span = in[i] + (i == 0 ? padding[i] : 2 * padding[i]) - w.size(2 + i);
    VIDAX_CHECK(span >= 0, "causal_conv3d: kernel " << w.str() << " larger than the padded input (" << frames
                                                    << " frames + " << padding[0] << " in front, " << in[1]
                                                    << "x" << in[2] << ")");
    out_shape.push_back(span / stride[i] + 1);
  }
  VIDAX_CHECK(!residual || residual->shape() == out_shape,
              "causal_conv3d: residual " << residual->str() << " must have the output's shape " << shape_str(out_shape));
  meta = meta || (residual && residual->device() == Device::Meta);
  const Device dev = meta ? Device::Meta : x0.device();
  Tensor out = Tensor::empty(out_shape, x0.dtype(), dev);
  backend_for(dev).causal_conv3d(xs, w, bias, stride, padding, residual, out);
  return out;
}

Tensor l2_norm_scale_silu(Tensor x, const Tensor& gamma, double scale, double eps) {
  VIDAX_CHECK(x.defined() && x.dim() >= 2, "l2_norm_scale_silu: x must be [N, C, ...], found "
                                               << (x.defined() ? x.str() : std::string("undefined")));
  VIDAX_CHECK(x.dtype() == DType::F32 || x.dtype() == DType::BF16 || x.dtype() == DType::F16,
              "l2_norm_scale_silu: x " << x.str() << " is not a float tensor");
  VIDAX_CHECK(gamma.defined() && gamma.numel() == x.size(1),
              "l2_norm_scale_silu: gamma " << (gamma.defined() ? gamma.str() : std::string("undefined"))
                                           << " must hold one value per channel of " << x.str());
  const Device dev = x.device() == Device::Meta || gamma.device() == Device::Meta ? Device::Meta : x.device();
  // The caller's handle is the buffer's only owner: nothing else can observe an in-place write.
  const bool in_place = dev != Device::Meta && x.is_contiguous() && x.byte_offset() == 0 &&
                        x.buffer() && x.buffer().use_count() == 1;
  Tensor out = in_place ? x : Tensor::empty(x.shape(), x.dtype(), dev);
  backend_for(dev).l2_norm_scale_silu(x, gamma, scale, eps, out);
  return out;
}

}  // namespace ops

void Backend::pixel_shuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& out) {
  // Channel order (c, rt, rh, rw): out[n, c, t*rt + i, h*rh + j, w*rw + k] = x[n, (c, i, j, k), t, h, w].
  const int64_t N = x.size(0), C = out.size(1), T = x.size(2), H = x.size(3), W = x.size(4);
  const Tensor xc = x.is_contiguous() ? x : ops::copy(x);
  const Tensor moved = xc.view({N, C, r[0], r[1], r[2], T, H, W}).permute({0, 1, 5, 2, 6, 3, 7, 4});
  Tensor o = out.view({N, C, T, r[0], H, r[1], W, r[2]});
  copy(moved, o);
}

void Backend::pixel_unshuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& out) {
  const int64_t N = x.size(0), C = x.size(1), T = out.size(2), H = out.size(3), W = out.size(4);
  const Tensor xc = x.is_contiguous() ? x : ops::copy(x);
  const Tensor moved = xc.view({N, C, T, r[0], H, r[1], W, r[2]}).permute({0, 1, 3, 5, 7, 2, 4, 6});
  Tensor o = out.view({N, C, r[0], r[1], r[2], T, H, W});
  copy(moved, o);
}

void Backend::axpby(double a, const Tensor& x, double b, const Tensor& y, Tensor& out) {
  const DType dt = compute_dtype({&x, &y, &out});
  cast(ops::add(ops::scale(widen(x, dt), a), ops::scale(widen(y, dt), b)), out);
}

void Backend::modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, Tensor& out) {
  const DType dt = compute_dtype({&x, &shift, &scale, &out});
  const Tensor one_plus = ops::add_scalar(widen(scale, dt), 1.0);
  cast(ops::add(ops::mul(widen(x, dt), one_plus), widen(shift, dt)), out);
}

void Backend::gated_residual(const Tensor& x, const Tensor& gate, const Tensor& y, Tensor& out) {
  const DType dt = compute_dtype({&x, &gate, &y, &out});
  cast(ops::add(widen(x, dt), ops::mul(widen(gate, dt), widen(y, dt))), out);
}

void Backend::rms_norm(const Tensor& x, const std::optional<Tensor>& weight, double eps, Tensor& out) {
  const Tensor x64 = widen(x, DType::F64);
  const Tensor sum_sq = ops::sum(ops::mul(x64, x64), -1, /*keepdim=*/true);
  rms_norm_with_sum_sq(x, sum_sq, x.size(-1), weight, eps, out);
}

void Backend::layer_norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps,
                                  Tensor& out) {
  // The reference rounds LN(x) to f32 and modulates in f32 (whatever x's dtype).
  const Tensor n = ops::layer_norm(x, std::nullopt, std::nullopt, eps, DType::F32);
  const Tensor one_plus = ops::add_scalar(widen(scale, DType::F32), 1.0);
  cast(ops::add(ops::mul(n, one_plus), widen(shift, DType::F32)), out);
}

void Backend::l2_norm_scale_silu(const Tensor& x, const Tensor& gamma, double scale, double eps, Tensor& out) {
  Shape g(static_cast<size_t>(x.dim()) - 1, 1);
  g[0] = x.size(1);
  Tensor y = ops::l2_normalize(x, 1, eps);
  y = ops::scale(y, scale);
  y = ops::mul(y, gamma.reshape(g));
  y = ops::silu(y);
  copy(y, out);
}

// Rows of w per widened panel: about 8 MiB of x's dtype (it stays in the last-level cache for the
// GEMM's packing: 32 MiB panels measured 4% slower per 1.3B step), at least 64 rows.
static int64_t quantized_panel_rows(int64_t N, int64_t K, DType dtype) {
  const int64_t per_row = std::max<int64_t>(1, K * static_cast<int64_t>(dtype_size(dtype)));
  const int64_t rows = std::max<int64_t>(64, (int64_t(8) << 20) / per_row / 64 * 64);
  return std::min(N, rows);
}

void Backend::linear_quantized(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, Tensor& out) {
  const int64_t N = w.size(0), K = w.size(1);
  const int64_t panel = quantized_panel_rows(N, K, x.dtype());
  if (panel >= N) {  // one panel: the GEMM writes the output directly
    linear(x, w.to(x.dtype()), bias, out);
    return;
  }
  const Tensor x2 = x.reshape({-1, K});
  Tensor o2 = out.view({-1, N});
  for (int64_t n0 = 0; n0 < N; n0 += panel) {
    const int64_t n1 = std::min(N, n0 + panel);
    std::optional<Tensor> b;
    if (bias) b = bias->slice(0, n0, n1);
    Tensor y = ops::linear(x2, w.slice(0, n0, n1).to(x.dtype()), b);
    Tensor cols = o2.slice(1, n0, n1);
    copy_into(y, cols);
  }
}

void Backend::linear_gelu(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, ops::GeluMode mode,
                          Tensor& out) {
  gelu(ops::linear(x, w, bias), mode, out);
}

void Backend::linear_gated_residual(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
                                    const Tensor& residual, const Tensor& gate, Tensor& out) {
  gated_residual(residual, gate, ops::linear(x, w, bias), out);
}

void Backend::causal_conv3d(const std::vector<Tensor>& xs, const Tensor& w, const std::optional<Tensor>& bias,
                            std::array<int64_t, 3> stride, std::array<int64_t, 3> padding,
                            const std::optional<Tensor>& residual, Tensor& out) {
  Tensor x = xs.size() == 1 ? xs.front() : ops::concat(xs, 2);
  if (padding[0] > 0) x = ops::pad(x, {0, 0, 0, 0, padding[0], 0});
  if (!residual) return conv3d(x, w, bias, stride, {0, padding[1], padding[2]}, out);
  copy(ops::add(ops::conv3d(x, w, bias, stride, {0, padding[1], padding[2]}), *residual), out);
}

}  // namespace vidax
