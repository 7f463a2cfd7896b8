// The op set: validation, shape/dtype inference, output allocation, dispatch.
// Kernels live in the backends; this file never touches tensor data.
#include "backend/ops.h"

#include <algorithm>
#include <cmath>
#include <initializer_list>

#include "backend/backend.h"

namespace vidax::ops {

namespace {

bool is_compute_float(DType t) { return t == DType::F32 || t == DType::BF16 || t == DType::F16 || t == DType::F64; }

void check_defined(const char* op, const char* what, const Tensor& t) {
  VIDAX_CHECK(t.defined(), op << ": input '" << what << "' is an undefined tensor");
}

void check_float(const char* op, const char* what, const Tensor& t) {
  check_defined(op, what, t);
  VIDAX_CHECK(is_compute_float(t.dtype()), op << ": input '" << what << "' is " << t.str()
                                               << ", expected a float tensor (F32, BF16, F16 or F64)");
}

// The device every input lives on. Any Meta input makes the op a recording
// (other inputs, e.g. CPU weights, are then only described, never read).
Device op_device(const char* op, std::initializer_list<const Tensor*> inputs) {
  bool meta = false, first = true;
  Device dev = Device::CPU;
  for (const Tensor* t : inputs) {
    if (!t || !t->defined()) continue;
    if (t->device() == Device::Meta) { meta = true; continue; }
    if (first) { dev = t->device(); first = false; }
    VIDAX_CHECK(t->device() == dev, op << ": inputs on different devices (" << device_name(dev) << " and "
                                       << device_name(t->device()) << ")");
  }
  return meta ? Device::Meta : dev;
}

Device op_device(const char* op, const std::vector<Tensor>& inputs) {
  bool meta = false, first = true;
  Device dev = Device::CPU;
  for (const Tensor& t : inputs) {
    if (t.device() == Device::Meta) { meta = true; continue; }
    if (first) { dev = t.device(); first = false; }
    VIDAX_CHECK(t.device() == dev, op << ": inputs on different devices (" << device_name(dev) << " and "
                                      << device_name(t.device()) << ")");
  }
  return meta ? Device::Meta : dev;
}

const Tensor* opt_ptr(const std::optional<Tensor>& t) { return t ? &*t : nullptr; }

// An op's requested output dtype (norms that round on store): a float compute dtype.
void check_out_dtype(const char* op, const std::optional<DType>& out_dtype) {
  VIDAX_CHECK(!out_dtype || is_compute_float(*out_dtype),
              op << ": output dtype " << dtype_name(*out_dtype) << " is not F32, BF16, F16 or F64");
}

int64_t norm_dim(const char* op, int64_t dim, const Tensor& x) {
  int64_t n = x.dim();
  int64_t d = dim < 0 ? dim + n : dim;
  VIDAX_CHECK(d >= 0 && d < n, op << ": dim " << dim << " out of range for " << x.str());
  return d;
}

// PyTorch broadcasting: trailing-aligned, size-1 dims stretch.
Shape broadcast_shape(const char* op, const Shape& a, const Shape& b) {
  size_t n = std::max(a.size(), b.size());
  Shape out(n);
  for (size_t i = 0; i < n; ++i) {
    int64_t da = i < n - a.size() ? 1 : a[i - (n - a.size())];
    int64_t db = i < n - b.size() ? 1 : b[i - (n - b.size())];
    VIDAX_CHECK(da == db || da == 1 || db == 1,
                op << ": shapes " << shape_str(a) << " and " << shape_str(b) << " do not broadcast");
    out[i] = da == 1 ? db : da;
  }
  return out;
}

// Checks `t` broadcasts to exactly `target` (it may not grow the result).
void check_broadcasts_to(const char* op, const char* what, const Tensor& t, const Shape& target) {
  Shape b = broadcast_shape(op, target, t.shape());
  VIDAX_CHECK(b == target, op << ": '" << what << "' " << t.str() << " does not broadcast to the input's shape "
                              << shape_str(target));
}

void check_vector(const char* op, const char* what, const std::optional<Tensor>& t, int64_t n) {
  if (!t) return;
  check_float(op, what, *t);
  VIDAX_CHECK(t->dim() == 1 && t->size(0) == n, op << ": '" << what << "' is " << t->str() << ", expected [" << n << "]");
}

Tensor alloc(const Shape& shape, DType dtype, Device dev) { return Tensor::empty(shape, dtype, dev); }

template <class F>
Tensor unary_op(const char* op, const Tensor& x, F&& run) {
  check_float(op, "x", x);
  Device dev = op_device(op, {&x});
  Tensor out = alloc(x.shape(), x.dtype(), dev);
  run(backend_for(dev), out);
  return out;
}

template <class F>
Tensor binary_op(const char* op, const Tensor& a, const Tensor& b, F&& run) {
  check_float(op, "a", a);
  check_float(op, "b", b);
  Device dev = op_device(op, {&a, &b});
  Tensor out = alloc(broadcast_shape(op, a.shape(), b.shape()), a.dtype(), dev);
  run(backend_for(dev), out);
  return out;
}

}  // namespace

// ---- data movement ------------------------------------------------------------

Tensor copy(const Tensor& x) {
  check_defined("copy", "x", x);
  Device dev = op_device("copy", {&x});
  Tensor out = alloc(x.shape(), x.dtype(), dev);
  backend_for(dev).copy(x, out);
  return out;
}

Tensor cast(const Tensor& x, DType dtype) {
  check_defined("cast", "x", x);
  Device dev = op_device("cast", {&x});
  Tensor out = alloc(x.shape(), dtype, dev);
  backend_for(dev).cast(x, out);
  return out;
}

Tensor concat(const std::vector<Tensor>& xs, int64_t dim) {
  VIDAX_CHECK(!xs.empty(), "concat: no inputs");
  const Tensor& x0 = xs[0];
  check_defined("concat", "xs[0]", x0);
  int64_t d = norm_dim("concat", dim, x0);
  Shape out_shape = x0.shape();
  out_shape[d] = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const Tensor& t = xs[i];
    check_defined("concat", "xs[i]", t);
    VIDAX_CHECK(t.dtype() == x0.dtype(), "concat: input " << i << " is " << t.str() << " but input 0 is " << x0.str()
                                                          << " (cast explicitly)");
    VIDAX_CHECK(t.dim() == x0.dim(), "concat: input " << i << " " << t.str() << " has a different rank than input 0 "
                                                      << x0.str());
    for (int64_t k = 0; k < t.dim(); ++k)
      VIDAX_CHECK(k == d || t.size(k) == x0.size(k), "concat along dim " << d << ": input " << i << " " << t.str()
                                                                         << " does not match input 0 " << x0.str());
    out_shape[d] += t.size(d);
  }
  Device dev = op_device("concat", xs);
  Tensor out = alloc(out_shape, x0.dtype(), dev);
  backend_for(dev).concat(xs, d, out);
  return out;
}

Tensor pad(const Tensor& x, const std::vector<int64_t>& pads, PadMode mode) {
  check_defined("pad", "x", x);
  VIDAX_CHECK(pads.size() % 2 == 0 && static_cast<int64_t>(pads.size()) / 2 <= x.dim(),
              "pad: " << pads.size() << " pad values for " << x.str() << " (need an even count, at most 2 per dim)");
  Shape out_shape = x.shape();
  for (size_t i = 0; i < pads.size() / 2; ++i) {
    size_t d = x.shape().size() - 1 - i;
    out_shape[d] += pads[2 * i] + pads[2 * i + 1];
    VIDAX_CHECK(out_shape[d] >= 0, "pad: pads " << pads[2 * i] << "," << pads[2 * i + 1] << " make dim " << d << " of "
                                                << x.str() << " negative");
    if (mode == PadMode::Replicate)
      VIDAX_CHECK(x.shape()[d] > 0, "pad: replicate padding of an empty dim " << d << " of " << x.str());
  }
  Device dev = op_device("pad", {&x});
  Tensor out = alloc(out_shape, x.dtype(), dev);
  backend_for(dev).pad(x, pads, mode, out);
  return out;
}

Tensor embedding(const Tensor& ids, const Tensor& table) {
  check_defined("embedding", "ids", ids);
  check_defined("embedding", "table", table);
  VIDAX_CHECK(ids.dtype() == DType::I64 || ids.dtype() == DType::I32,
              "embedding: ids are " << ids.str() << ", expected I64 or I32");
  VIDAX_CHECK(table.dim() == 2, "embedding: table is " << table.str() << ", expected [V, D]");
  Shape out_shape = ids.shape();
  out_shape.push_back(table.size(1));
  Device dev = op_device("embedding", {&ids, &table});
  Tensor out = alloc(out_shape, table.dtype(), dev);
  backend_for(dev).embedding(ids, table, out);
  return out;
}

// ---- elementwise ------------------------------------------------------------------

Tensor add(const Tensor& a, const Tensor& b) {
  return binary_op("add", a, b, [&](Backend& be, Tensor& o) { be.add(a, b, o); });
}
Tensor sub(const Tensor& a, const Tensor& b) {
  return binary_op("sub", a, b, [&](Backend& be, Tensor& o) { be.sub(a, b, o); });
}
Tensor mul(const Tensor& a, const Tensor& b) {
  return binary_op("mul", a, b, [&](Backend& be, Tensor& o) { be.mul(a, b, o); });
}
Tensor div(const Tensor& a, const Tensor& b) {
  return binary_op("div", a, b, [&](Backend& be, Tensor& o) { be.div(a, b, o); });
}
Tensor scale(const Tensor& x, double alpha) {
  return unary_op("scale", x, [&](Backend& be, Tensor& o) { be.scale(x, alpha, o); });
}
Tensor add_scalar(const Tensor& x, double alpha) {
  return unary_op("add_scalar", x, [&](Backend& be, Tensor& o) { be.add_scalar(x, alpha, o); });
}
Tensor axpby(double a, const Tensor& x, double b, const Tensor& y) {
  check_float("axpby", "x", x);
  check_float("axpby", "y", y);
  VIDAX_CHECK(x.shape() == y.shape(), "axpby: x " << x.str() << " and y " << y.str() << " differ in shape");
  Device dev = op_device("axpby", {&x, &y});
  Tensor out = alloc(x.shape(), x.dtype(), dev);
  backend_for(dev).axpby(a, x, b, y, out);
  return out;
}
Tensor clamp(const Tensor& x, double lo, double hi) {
  VIDAX_CHECK(lo <= hi, "clamp: lo " << lo << " > hi " << hi);
  return unary_op("clamp", x, [&](Backend& be, Tensor& o) { be.clamp(x, lo, hi, o); });
}
Tensor gelu(const Tensor& x, GeluMode mode) {
  return unary_op("gelu", x, [&](Backend& be, Tensor& o) { be.gelu(x, mode, o); });
}
Tensor silu(const Tensor& x) {
  return unary_op("silu", x, [&](Backend& be, Tensor& o) { be.silu(x, o); });
}
Tensor sigmoid(const Tensor& x) {
  return unary_op("sigmoid", x, [&](Backend& be, Tensor& o) { be.sigmoid(x, o); });
}
Tensor tanh(const Tensor& x) {
  return unary_op("tanh", x, [&](Backend& be, Tensor& o) { be.tanh(x, o); });
}
Tensor sin(const Tensor& x) {
  return unary_op("sin", x, [&](Backend& be, Tensor& o) { be.sin(x, o); });
}
Tensor exp(const Tensor& x) {
  return unary_op("exp", x, [&](Backend& be, Tensor& o) { be.exp(x, o); });
}
Tensor sqrt(const Tensor& x) {
  return unary_op("sqrt", x, [&](Backend& be, Tensor& o) { be.sqrt(x, o); });
}
Tensor log(const Tensor& x) {
  return unary_op("log", x, [&](Backend& be, Tensor& o) { be.log(x, o); });
}
Tensor relu(const Tensor& x) {
  return unary_op("relu", x, [&](Backend& be, Tensor& o) { be.relu(x, o); });
}

Tensor modulate(const Tensor& x, const Tensor& shift, const Tensor& scale) {
  check_float("modulate", "x", x);
  check_float("modulate", "shift", shift);
  check_float("modulate", "scale", scale);
  check_broadcasts_to("modulate", "shift", shift, x.shape());
  check_broadcasts_to("modulate", "scale", scale, x.shape());
  Device dev = op_device("modulate", {&x, &shift, &scale});
  Tensor out = alloc(x.shape(), x.dtype(), dev);
  backend_for(dev).modulate(x, shift, scale, out);
  return out;
}

Tensor gated_residual(const Tensor& x, const Tensor& gate, const Tensor& y) {
  check_float("gated_residual", "x", x);
  check_float("gated_residual", "gate", gate);
  check_float("gated_residual", "y", y);
  check_broadcasts_to("gated_residual", "gate", gate, x.shape());
  check_broadcasts_to("gated_residual", "y", y, x.shape());
  Device dev = op_device("gated_residual", {&x, &gate, &y});
  Tensor out = alloc(x.shape(), x.dtype(), dev);
  backend_for(dev).gated_residual(x, gate, y, out);
  return out;
}

// ---- reductions / norms ------------------------------------------------------------

Tensor layer_norm(const Tensor& x, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias,
                  double eps, std::optional<DType> out_dtype) {
  check_float("layer_norm", "x", x);
  VIDAX_CHECK(x.dim() >= 1, "layer_norm: x is a scalar");
  check_vector("layer_norm", "weight", weight, x.size(-1));
  check_vector("layer_norm", "bias", bias, x.size(-1));
  check_out_dtype("layer_norm", out_dtype);
  Device dev = op_device("layer_norm", {&x, opt_ptr(weight), opt_ptr(bias)});
  Tensor out = alloc(x.shape(), out_dtype.value_or(x.dtype()), dev);
  backend_for(dev).layer_norm(x, weight, bias, eps, out);
  return out;
}

Tensor rms_norm(const Tensor& x, const std::optional<Tensor>& weight, double eps) {
  check_float("rms_norm", "x", x);
  VIDAX_CHECK(x.dim() >= 1, "rms_norm: x is a scalar");
  check_vector("rms_norm", "weight", weight, x.size(-1));
  Device dev = op_device("rms_norm", {&x, opt_ptr(weight)});
  Tensor out = alloc(x.shape(), x.dtype(), dev);
  backend_for(dev).rms_norm(x, weight, eps, out);
  return out;
}

Tensor rms_norm_with_sum_sq(const Tensor& x, const Tensor& sum_sq, int64_t count,
                            const std::optional<Tensor>& weight, double eps) {
  check_float("rms_norm_with_sum_sq", "x", x);
  check_float("rms_norm_with_sum_sq", "sum_sq", sum_sq);
  VIDAX_CHECK(x.dim() >= 1, "rms_norm_with_sum_sq: x is a scalar");
  Shape rows = x.shape();
  rows.back() = 1;
  VIDAX_CHECK(sum_sq.shape() == rows, "rms_norm_with_sum_sq: sum_sq " << sum_sq.str() << " must be "
                                                                      << shape_str(rows) << " for x " << x.str());
  VIDAX_CHECK(count >= x.size(-1), "rms_norm_with_sum_sq: count " << count << " < the row length " << x.size(-1));
  check_vector("rms_norm_with_sum_sq", "weight", weight, x.size(-1));
  Device dev = op_device("rms_norm_with_sum_sq", {&x, &sum_sq, opt_ptr(weight)});
  Tensor out = alloc(x.shape(), x.dtype(), dev);
  backend_for(dev).rms_norm_with_sum_sq(x, sum_sq, count, weight, eps, out);
  return out;
}

Tensor layer_norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps,
                           std::optional<DType> out_dtype) {
  check_float("layer_norm_modulate", "x", x);
  check_float("layer_norm_modulate", "shift", shift);
  check_float("layer_norm_modulate", "scale", scale);
  VIDAX_CHECK(x.dim() >= 1, "layer_norm_modulate: x is a scalar");
  check_broadcasts_to("layer_norm_modulate", "shift", shift, x.shape());
  check_broadcasts_to("layer_norm_modulate", "scale", scale, x.shape());
  check_out_dtype("layer_norm_modulate", out_dtype);
  Device dev = op_device("layer_norm_modulate", {&x, &shift, &scale});
  Tensor out = alloc(x.shape(), out_dtype.value_or(x.dtype()), dev);
  backend_for(dev).layer_norm_modulate(x, shift, scale, eps, out);
  return out;
}

Tensor l2_normalize(const Tensor& x, int64_t dim, double eps) {
  check_float("l2_normalize", "x", x);
  int64_t d = norm_dim("l2_normalize", dim, x);
  Device dev = op_device("l2_normalize", {&x});
  Tensor out = alloc(x.shape(), x.dtype(), dev);
  backend_for(dev).l2_normalize(x, d, eps, out);
  return out;
}

Tensor group_norm(const Tensor& x, int64_t groups, const std::optional<Tensor>& weight,
                  const std::optional<Tensor>& bias, double eps) {
  check_float("group_norm", "x", x);
  VIDAX_CHECK(x.dim() >= 2, "group_norm: x is " << x.str() << ", expected [N, C, *spatial]");
  VIDAX_CHECK(groups >= 1 && x.size(1) % groups == 0,
              "group_norm: " << groups << " groups do not divide the " << x.size(1) << " channels of " << x.str());
  check_vector("group_norm", "weight", weight, x.size(1));
  check_vector("group_norm", "bias", bias, x.size(1));
  Device dev = op_device("group_norm", {&x, opt_ptr(weight), opt_ptr(bias)});
  Tensor out = alloc(x.shape(), x.dtype(), dev);
  backend_for(dev).group_norm(x, groups, weight, bias, eps, out);
  return out;
}

Tensor softmax(const Tensor& x, int64_t dim) {
  check_float("softmax", "x", x);
  int64_t d = norm_dim("softmax", dim, x);
  Device dev = op_device("softmax", {&x});
  Tensor out = alloc(x.shape(), x.dtype(), dev);
  backend_for(dev).softmax(x, d, out);
  return out;
}

namespace {
template <class F>
Tensor reduce_op(const char* op, const Tensor& x, int64_t dim, bool keepdim, F&& run) {
  check_float(op, "x", x);
  int64_t d = norm_dim(op, dim, x);
  Device dev = op_device(op, {&x});
  Shape kept = x.shape();
  kept[d] = 1;
  Tensor out = alloc(kept, x.dtype(), dev);
  run(backend_for(dev), d, out);
  return keepdim ? out : out.squeeze(d);
}
}  // namespace

Tensor sum(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce_op("sum", x, dim, keepdim, [&](Backend& be, int64_t d, Tensor& o) { be.sum(x, d, o); });
}
Tensor mean(const Tensor& x, int64_t dim, bool keepdim) {
  return reduce_op("mean", x, dim, keepdim, [&](Backend& be, int64_t d, Tensor& o) { be.mean(x, d, o); });
}

bool all_finite(const Tensor& x) {
  check_float("all_finite", "x", x);
  return backend_for(op_device("all_finite", {&x})).all_finite(x);
}

// ---- matrix products ------------------------------------------------------------------

namespace {

// linear's checks; returns the output shape (x's with the last dim N).
Shape check_linear(const char* op, const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias) {
  check_defined(op, "x", x);
  check_defined(op, "w", w);
  VIDAX_CHECK(x.dtype() == DType::F32 || x.dtype() == DType::BF16,
              op << ": x is " << x.str() << ", expected F32 or BF16 activations");
  VIDAX_CHECK(w.is_weight_only_quantized() || w.dtype() == DType::F32 || w.dtype() == DType::BF16 || w.dtype() == DType::F16,
              op << ": weight is " << w.str() << ", expected F32, BF16, F16 or a block-quantized type");
  VIDAX_CHECK(x.dim() >= 1, op << ": x is a scalar");
  VIDAX_CHECK(w.dim() == 2, op << ": weight is " << w.str() << ", expected [N, K]");
  VIDAX_CHECK(x.size(-1) == w.size(1), op << ": x " << x.str() << " has K = " << x.size(-1) << " but weight "
                                          << w.str() << " expects K = " << w.size(1));
  check_vector(op, "bias", bias, w.size(0));
  Shape out_shape = x.shape();
  out_shape.back() = w.size(0);
  return out_shape;
}

}  // namespace

Tensor linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias) {
  const Shape out_shape = check_linear("linear", x, w, bias);
  Device dev = op_device("linear", {&x, &w, opt_ptr(bias)});
  Tensor out = alloc(out_shape, x.dtype(), dev);
  if (w.is_weight_only_quantized()) backend_for(dev).linear_quantized(x, w, bias, out);
  else backend_for(dev).linear(x, w, bias, out);
  return out;
}

Tensor linear_gelu(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, GeluMode mode) {
  const Shape out_shape = check_linear("linear_gelu", x, w, bias);
  if (w.is_weight_only_quantized()) return gelu(linear(x, w, bias), mode);  // the two steps' values
  Device dev = op_device("linear_gelu", {&x, &w, opt_ptr(bias)});
  Tensor out = alloc(out_shape, x.dtype(), dev);
  backend_for(dev).linear_gelu(x, w, bias, mode, out);
  return out;
}

Tensor linear_gated_residual(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
                             const Tensor& residual, const Tensor& gate) {
  const Shape out_shape = check_linear("linear_gated_residual", x, w, bias);
  check_float("linear_gated_residual", "residual", residual);
  check_float("linear_gated_residual", "gate", gate);
  VIDAX_CHECK(residual.shape() == out_shape, "linear_gated_residual: residual " << residual.str()
                                                 << " must have the product's shape " << shape_str(out_shape));
  if (w.is_weight_only_quantized()) return gated_residual(residual, gate, linear(x, w, bias));  // the two steps' values
  check_broadcasts_to("linear_gated_residual", "gate", gate, out_shape);
  Device dev = op_device("linear_gated_residual", {&x, &w, opt_ptr(bias), &residual, &gate});
  Tensor out = alloc(out_shape, residual.dtype(), dev);
  backend_for(dev).linear_gated_residual(x, w, bias, residual, gate, out);
  return out;
}

Tensor matmul(const Tensor& a, const Tensor& b) {
  check_float("matmul", "a", a);
  check_float("matmul", "b", b);
  VIDAX_CHECK(a.dim() >= 2 && b.dim() >= 2, "matmul: a " << a.str() << " and b " << b.str()
                                                         << " must both have at least 2 dims");
  VIDAX_CHECK(a.size(-1) == b.size(-2), "matmul: a " << a.str() << " @ b " << b.str() << ": inner dims "
                                                     << a.size(-1) << " != " << b.size(-2));
  Shape ab(a.shape().begin(), a.shape().end() - 2), bb(b.shape().begin(), b.shape().end() - 2);
  Shape out_shape = broadcast_shape("matmul", ab, bb);
  out_shape.push_back(a.size(-2));
  out_shape.push_back(b.size(-1));
  Device dev = op_device("matmul", {&a, &b});
  Tensor out = alloc(out_shape, a.dtype(), dev);
  backend_for(dev).matmul(a, b, out);
  return out;
}

// ---- attention ----------------------------------------------------------------------

Tensor attention(const Tensor& q, const Tensor& k, const Tensor& v, const AttentionOptions& opt) {
  check_float("attention", "q", q);
  check_float("attention", "k", k);
  check_float("attention", "v", v);
  VIDAX_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4,
              "attention: q " << q.str() << ", k " << k.str() << ", v " << v.str() << " must be [B, L, H, D]");
  const int64_t B = q.size(0), Lq = q.size(1), H = q.size(2), D = q.size(3), Lk = k.size(1);
  VIDAX_CHECK(k.size(0) == B && v.size(0) == B && k.size(2) == H && v.size(2) == H && k.size(3) == D &&
                  v.size(1) == Lk,
              "attention: q " << q.str() << ", k " << k.str() << ", v " << v.str()
                              << " disagree (expected q [B, Lq, H, D], k [B, Lk, H, D], v [B, Lk, H, Dv])");
  VIDAX_CHECK(D > 0, "attention: head dim is 0");
  AttentionOptions o = opt;
  if (o.scale == 0) o.scale = 1.0 / std::sqrt(static_cast<double>(D));
  if (!o.kv_lens.empty()) {
    VIDAX_CHECK(static_cast<int64_t>(o.kv_lens.size()) == B,
                "attention: " << o.kv_lens.size() << " kv_lens for batch " << B);
    for (int64_t len : o.kv_lens)
      VIDAX_CHECK(len >= 0 && len <= Lk, "attention: kv_len " << len << " outside [0, " << Lk << "]");
  }
  if (o.bias) {
    const Tensor& bt = *o.bias;
    check_float("attention", "bias", bt);
    VIDAX_CHECK(bt.dim() == 4 && (bt.size(0) == B || bt.size(0) == 1) && (bt.size(1) == H || bt.size(1) == 1) &&
                    bt.size(2) == Lq && bt.size(3) == Lk,
                "attention: bias " << bt.str() << ", expected [" << B << " or 1, " << H << " or 1, " << Lq << ", "
                                   << Lk << "]");
  }
  Device dev = op_device("attention", {&q, &k, &v, opt_ptr(o.bias)});
  Tensor out = alloc({B, Lq, H, v.size(3)}, q.dtype(), dev);
  backend_for(dev).attention(q, k, v, o, out);
  return out;
}

// ---- positional -----------------------------------------------------------------------

Tensor rope(const Tensor& x, const Tensor& cos, const Tensor& sin, RopeMode mode) {
  check_float("rope", "x", x);
  check_float("rope", "cos", cos);
  check_float("rope", "sin", sin);
  VIDAX_CHECK(x.dim() == 4 && x.size(3) % 2 == 0, "rope: x is " << x.str() << ", expected [B, L, H, D] with even D");
  const int64_t L = x.size(1), half = x.size(3) / 2;
  VIDAX_CHECK(cos.dim() == 2 && cos.size(0) == L && cos.size(1) == half && sin.shape() == cos.shape(),
              "rope: cos " << cos.str() << " / sin " << sin.str() << ", expected [" << L << ", " << half << "] for x "
                           << x.str());
  VIDAX_CHECK(cos.dtype() == sin.dtype(), "rope: cos " << cos.str() << " and sin " << sin.str() << " differ in dtype");
  Device dev = op_device("rope", {&x, &cos, &sin});
  Tensor out = alloc(x.shape(), x.dtype(), dev);
  backend_for(dev).rope(x, cos, sin, mode, out);
  return out;
}

// ---- convolution / resampling -----------------------------------------------------------

namespace {
int64_t conv_out_size(const char* op, int64_t in, int64_t k, int64_t stride, int64_t pad, const Tensor& x,
                      const Tensor& w) {
  VIDAX_CHECK(stride >= 1 && pad >= 0, op << ": stride " << stride << " / padding " << pad << " invalid");
  int64_t span = in + 2 * pad - k;
  VIDAX_CHECK(span >= 0, op << ": kernel " << w.str() << " larger than the padded input " << x.str());
  return span / stride + 1;
}

template <size_t S>
Tensor conv_nd(const char* op, const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias,
               std::array<int64_t, S> stride, std::array<int64_t, S> padding) {
  check_float(op, "x", x);
  check_float(op, "w", w);
  constexpr int64_t R = static_cast<int64_t>(S) + 2;
  VIDAX_CHECK(x.dim() == R && w.dim() == R, op << ": x " << x.str() << " and w " << w.str() << " must have " << R
                                              << " dims");
  const int64_t C = x.size(1), O = w.size(0), Cg = w.size(1);
  VIDAX_CHECK(Cg > 0 && C % Cg == 0, op << ": weight " << w.str() << " expects " << Cg << " input channels per group but x "
                                       << x.str() << " has " << C);
  const int64_t groups = C / Cg;
  VIDAX_CHECK(O % groups == 0, op << ": " << O << " output channels of " << w.str() << " not divisible by " << groups
                                 << " groups");
  check_vector(op, "bias", bias, O);
  Shape out_shape{x.size(0), O};
  for (size_t i = 0; i < S; ++i)
    out_shape.push_back(conv_out_size(op, x.size(2 + i), w.size(2 + i), stride[i], padding[i], x, w));
  Device dev = op_device(op, {&x, &w, opt_ptr(bias)});
  return alloc(out_shape, x.dtype(), dev);
}
}  // namespace

Tensor conv3d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, std::array<int64_t, 3> stride,
              std::array<int64_t, 3> padding) {
  Tensor out = conv_nd<3>("conv3d", x, w, bias, stride, padding);
  backend_for(out.device()).conv3d(x, w, bias, stride, padding, out);
  return out;
}

Tensor conv2d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, std::array<int64_t, 2> stride,
              std::array<int64_t, 2> padding) {
  Tensor out = conv_nd<2>("conv2d", x, w, bias, stride, padding);
  backend_for(out.device()).conv2d(x, w, bias, stride, padding, out);
  return out;
}

Tensor upsample_nearest(const Tensor& x, const std::vector<int64_t>& factors) {
  check_defined("upsample_nearest", "x", x);
  VIDAX_CHECK(!factors.empty() && static_cast<int64_t>(factors.size()) <= x.dim(),
              "upsample_nearest: " << factors.size() << " factors for " << x.str());
  Shape out_shape = x.shape();
  for (size_t i = 0; i < factors.size(); ++i) {
    VIDAX_CHECK(factors[i] >= 1, "upsample_nearest: factor " << factors[i] << " < 1");
    out_shape[out_shape.size() - factors.size() + i] *= factors[i];
  }
  Device dev = op_device("upsample_nearest", {&x});
  Tensor out = alloc(out_shape, x.dtype(), dev);
  backend_for(dev).upsample_nearest(x, factors, out);
  return out;
}

Tensor pixel_shuffle3d(const Tensor& x, std::array<int64_t, 3> r) {
  check_defined("pixel_shuffle3d", "x", x);
  VIDAX_CHECK(x.dim() == 5, "pixel_shuffle3d: x is " << x.str() << ", expected [N, C*rt*rh*rw, T, H, W]");
  const int64_t f = r[0] * r[1] * r[2];
  VIDAX_CHECK(r[0] >= 1 && r[1] >= 1 && r[2] >= 1 && x.size(1) % f == 0,
              "pixel_shuffle3d: channels of " << x.str() << " not divisible by " << r[0] << "*" << r[1] << "*" << r[2]);
  Device dev = op_device("pixel_shuffle3d", {&x});
  Tensor out = alloc({x.size(0), x.size(1) / f, x.size(2) * r[0], x.size(3) * r[1], x.size(4) * r[2]}, x.dtype(), dev);
  backend_for(dev).pixel_shuffle3d(x, r, out);
  return out;
}

Tensor pixel_unshuffle3d(const Tensor& x, std::array<int64_t, 3> r) {
  check_defined("pixel_unshuffle3d", "x", x);
  VIDAX_CHECK(x.dim() == 5, "pixel_unshuffle3d: x is " << x.str() << ", expected [N, C, T*rt, H*rh, W*rw]");
  VIDAX_CHECK(r[0] >= 1 && r[1] >= 1 && r[2] >= 1 && x.size(2) % r[0] == 0 && x.size(3) % r[1] == 0 &&
                  x.size(4) % r[2] == 0,
              "pixel_unshuffle3d: " << x.str() << " not divisible by factors " << r[0] << "," << r[1] << "," << r[2]);
  Device dev = op_device("pixel_unshuffle3d", {&x});
  Tensor out = alloc({x.size(0), x.size(1) * r[0] * r[1] * r[2], x.size(2) / r[0], x.size(3) / r[1], x.size(4) / r[2]},
                     x.dtype(), dev);
  backend_for(dev).pixel_unshuffle3d(x, r, out);
  return out;
}

}  // namespace vidax::ops
