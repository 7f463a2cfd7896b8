// Fused ops the Wan VAE's memory budget relies on (ops::causal_conv3d, ops::l2_norm_scale_silu):
// validation, output shape, dispatch; and the Backend defaults of every fused op (these two, and
// linear_gelu / linear_gated_residual, whose ops live next to linear in ops.cpp), built from the
// plain ops.
#include "backend/backend.h"
#include "backend/ops.h"

namespace vidax {

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

void Backend::l2_norm_scale_silu(const Tensor& x, const Tensor& gamma, double scale, double eps, Tensor& out) {
  Shape g(static_cast<size_t>(x.dim()) - 1, 1);
  g[0] = x.size(1);
  Tensor y = ops::l2_normalize(x, 1, eps);
  y = ops::scale(y, scale);
  y = ops::mul(y, gamma.reshape(g));
  y = ops::silu(y);
  copy(y, out);
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
