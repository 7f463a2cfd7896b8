#include "nn/linear.h"

#include "backend/recording.h"

#include "nn/cast.h"
#include "nn/parallel.h"

namespace vidax::nn {

Linear Linear::make(const Tensor& weight, const std::optional<Tensor>& bias, DType compute) {
  VIDAX_CHECK(weight.dim() == 2, "Linear: weight must be [out, in], got " << weight.str());
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16,
              "Linear: compute dtype must be F32 or BF16, got " << dtype_name(compute));
  if (bias) VIDAX_CHECK(bias->dim() == 1 && bias->size(0) == weight.size(0),
                        "Linear: bias " << bias->str() << " does not match weight " << weight.str());
  Linear l;
  l.compute = compute;
  // A plain fp8 weight (no scale_weight in its file) computes as a scaled one with scale 1: kept
  // in storage form, widened a panel of rows at a time.
  if ((weight.dtype() == DType::F8_E4M3 || weight.dtype() == DType::F8_E5M2) && !weight.is_scaled() &&
      weight.device() != Device::Meta) {
    l.weight = Tensor::scaled(weight, Tensor::full({}, 1.0, DType::F32));
    if (bias) l.bias = compute == DType::BF16 ? to_dtype(*bias, DType::BF16) : *bias;
    return l;
  }
  // fp32 compute reads the stored weight as is; bf16 compute casts it once, as autocast would per call.
  l.weight = weight.is_weight_only_quantized() || compute != DType::BF16 ? weight : to_dtype(weight.contiguous(), DType::BF16);
  if (bias) l.bias = compute == DType::BF16 ? to_dtype(*bias, DType::BF16) : *bias;
  return l;
}

Linear Linear::load(ParamSource& params, const std::string& prefix, int64_t in_features, int64_t out_features,
                    DType compute, bool has_bias) {
  Tensor w = params.take_weight(prefix + ".weight", {out_features, in_features});
  std::optional<Tensor> b;
  if (has_bias) b = params.take(prefix + ".bias", {out_features});
  Linear l = make(w, b, compute);
  l.adapters = params.take_adapters(prefix + ".weight", out_features, in_features);
  // The tensors the ops read (bf16 compute: cast copies) keep the checkpoint names in a recorded step.
  set_param_name(l.weight, prefix + ".weight");
  if (l.bias) set_param_name(*l.bias, prefix + ".bias");
  return l;
}

void Linear::check_input(const Tensor& x) const {
  VIDAX_CHECK(x.dim() >= 1 && x.size(-1) == in_features(),
              "Linear: input " << x.str() << " does not end in " << in_features() << " features");
}

Tensor Linear::with_adapters(const Tensor& x) const {
  VIDAX_CHECK(!reduce, "Linear: runtime LoRAs on a row-parallel Linear are not supported");
  // The base GEMM as without adapters (fp32 accumulation, rounded to the compute dtype), widened
  // exactly; each low-rank product in fp32 from the fp32 input; one rounding at the end.
  Tensor y = to_dtype(ops::linear(to_dtype(x, compute), weight, bias), DType::F32);
  const Tensor x32 = to_dtype(x, DType::F32);
  for (const LowRankAdapter& a : adapters)
    y = ops::add(y, a.down.defined() ? ops::linear(ops::linear(x32, a.down), a.up) : ops::linear(x32, a.up));
  return to_dtype(y, compute);
}

Tensor Linear::operator()(const Tensor& x) const {
  check_input(x);
  if (!adapters.empty()) return with_adapters(x);
  if (reduce) return row_parallel_linear(*this, x);
  return ops::linear(to_dtype(x, compute), weight, bias);
}

Tensor Linear::gelu(const Tensor& x, ops::GeluMode mode) const {
  if (reduce || !adapters.empty()) return ops::gelu((*this)(x), mode);
  check_input(x);
  return ops::linear_gelu(to_dtype(x, compute), weight, bias, mode);
}

Tensor Linear::gated_residual(const Tensor& x, const Tensor& residual, const Tensor& gate) const {
  if (reduce || !adapters.empty()) return ops::gated_residual(residual, gate, (*this)(x));
  check_input(x);
  return ops::linear_gated_residual(to_dtype(x, compute), weight, bias, residual, gate);
}

}  // namespace vidax::nn
