// y = x W^T + b with an explicit compute dtype. Mirrors what torch autocast
// does to nn.Linear: in a bf16 region the activation, the weight and the bias
// are cast to bf16 and the GEMM accumulates in fp32; in an fp32 region the
// weight is read as stored (a bf16 checkpoint weight upcasts exactly).
// The weight cast is done once, at load, not per call.
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "backend/ops.h"
#include "dist/communicator.h"
#include "nn/params.h"

namespace vidax::nn {

struct Linear {
  Tensor weight;               // [out, in], in the dtype the GEMM reads, or block-quantized (GGUF)
  std::optional<Tensor> bias;  // [out]
  DType compute = DType::F32;  // activations are cast to this before the GEMM
  // Row-parallel (Megatron TP, nn/parallel.h): the weight is this rank's slice of the input
  // features; the partial products are summed over `reduce` and the bias is added once, after.
  dist::Communicator* reduce = nullptr;
  // Runtime LoRAs (docs/lora.md, --lora-mode runtime): the weight stays as stored (quantized or
  // not) and each adapter adds x @ down^T @ up^T to the output in fp32, before the output is
  // rounded to the compute dtype and before a fused GELU / gated residual.
  std::vector<LowRankAdapter> adapters;

  // weight [out, in] (any float dtype, or block-quantized: kept as it is, the GEMM widens a
  // panel of its rows at a time to the compute dtype), bias [out] optional.
  static Linear make(const Tensor& weight, const std::optional<Tensor>& bias, DType compute);
  // Takes "<prefix>.weight" [out, in] and, when has_bias, "<prefix>.bias" [out], and the
  // weight's runtime LoRAs (ParamSource::take_adapters).
  static Linear load(ParamSource& params, const std::string& prefix, int64_t in_features, int64_t out_features,
                     DType compute, bool has_bias = true);

  int64_t in_features() const { return weight.size(1); }
  int64_t out_features() const { return weight.size(0); }
  // x [..., in] (any float dtype) -> [..., out] in the compute dtype.
  Tensor operator()(const Tensor& x) const;
  // ops::gelu(this(x), mode) and ops::gated_residual(residual, gate, this(x)), the second op
  // fused into the GEMM's output stage where the backend can (ops::linear_gelu /
  // linear_gated_residual); the same values as the two steps. A row-parallel Linear sums its
  // partial products first, so it runs the two steps.
  Tensor gelu(const Tensor& x, ops::GeluMode mode) const;
  Tensor gated_residual(const Tensor& x, const Tensor& residual, const Tensor& gate) const;

 private:
  void check_input(const Tensor& x) const;  // x ends in in_features()
  Tensor with_adapters(const Tensor& x) const;  // the GEMM plus every adapter, in the compute dtype
};

}  // namespace vidax::nn
