#include "nn/parallel.h"

#include "backend/ops.h"
#include "nn/cast.h"
#include "nn/linear.h"

namespace vidax::nn {

int64_t TensorParallel::local(int64_t n, const std::string& what) const {
  const int p = size();
  VIDAX_CHECK(n % p == 0, "tensor parallelism: " << what << " = " << n << " is not divisible by tp = " << p);
  return n / p;
}

Split split_of(const ShardTable& table, const std::string& name) {
  for (const ShardRule& r : table)
    if (name.size() >= r.suffix.size() && name.compare(name.size() - r.suffix.size(), r.suffix.size(), r.suffix) == 0)
      return r.split;
  return Split::Replicated;
}

ParamSource shard_params(ParamSource& source, const TensorParallel& tp, ShardTable table,
                         std::shared_ptr<WeightLedger> ledger) {
  auto lookup = [&source, tp, table = std::move(table), ledger](const std::string& name,
                                                                const Shape& expected) -> std::optional<Tensor> {
    const Split split = tp.active() ? split_of(table, name) : Split::Replicated;
    const size_t dim = split == Split::Columns ? 1 : 0;
    Shape full = expected;
    if (split != Split::Replicated) {
      VIDAX_CHECK(full.size() > dim, source.origin() << ": parameter '" << name << "' of shape "
                                                     << shape_str(expected) << " cannot be split on dim " << dim);
      full[dim] *= tp.size();
    }
    std::optional<Tensor> t = source.take_optional_stored(name, full);  // block-quantized stays so
    if (!t) return std::nullopt;
    const int64_t n = expected.empty() ? 1 : expected[dim], r = tp.rank();
    Tensor shard = *t;
    if (split == Split::Rows) shard = t->slice(0, r * n, (r + 1) * n);            // a view (rows are contiguous)
    if (split == Split::Columns) shard = ops::copy(t->slice(1, r * n, (r + 1) * n));  // pack the shard only
    if (ledger) {
      ledger->bytes += static_cast<int64_t>(shard.nbytes());
      ledger->full_bytes += static_cast<int64_t>(t->nbytes());
      ledger->tensors += 1;
    }
    return shard;
  };
  ParamSource out({}, std::move(lookup), source.origin());
  // Runtime LoRAs (nn::LowRankAdapter) are whole-weight: a shard of one is not built.
  VIDAX_CHECK(!source.has_adapters() || !tp.active(),
              source.origin() << ": runtime LoRAs (--lora-mode runtime) with tensor parallelism are not supported; "
                                 "use --lora-mode merge");
  source.share_adapters_with(out);
  return out;
}

Tensor row_parallel_linear(const Linear& l, const Tensor& x) {
  VIDAX_CHECK(l.reduce, "row_parallel_linear: the Linear has no reduction group");
  VIDAX_CHECK(x.dim() >= 1 && x.size(-1) == l.in_features(),
              "Linear (row-parallel): input " << x.str() << " does not end in this rank's " << l.in_features()
                                              << " features");
  // This rank's partial product, no bias; the sum over the group in fp32; the bias once.
  Tensor sum = to_dtype(ops::linear(to_dtype(x, l.compute), l.weight), DType::F32);
  if (!sum.is_contiguous()) sum = ops::copy(sum);
  // view-write-ok: `sum` is the linear's fresh output (or its copy), held by nothing else.
  l.reduce->all_reduce_sum_inplace(sum);
  if (l.bias) sum = ops::add(sum, *l.bias);
  return to_dtype(sum, l.compute);
}

Tensor sharded_rms_norm(const Tensor& x, const std::optional<Tensor>& gain, double eps, const TensorParallel& tp) {
  if (!tp.active()) return ops::rms_norm(x, gain, eps);
  // fp64 squares summed in index order (as the rms_norm kernel does), then over the ranks.
  const Tensor x64 = ops::cast(x, DType::F64);
  Tensor sum_sq = ops::sum(ops::mul(x64, x64), -1, /*keepdim=*/true);
  if (!sum_sq.is_contiguous()) sum_sq = ops::copy(sum_sq);
  // view-write-ok: `sum_sq` is the fresh ops::sum result (or its copy), held by nothing else.
  tp.group->all_reduce_sum_inplace(sum_sq);
  return ops::rms_norm_with_sum_sq(x, sum_sq, x.size(-1) * tp.size(), gain, eps);
}

}  // namespace vidax::nn
