// Megatron tensor parallelism for nn layers (DESIGN.md principle 6;
// shared/reference/parallelism-and-rng.md A.3; docs/parallelism.md).
//
// A tensor-parallel (TP) group of N ranks splits every attention layer's heads
// and every FFN's hidden channels N ways:
//   column-parallel Linear (q, k, v, ffn.0): this rank keeps rows [r*out/N, (r+1)*out/N)
//     of W and b; its output is this rank's slice of the features; no communication.
//   row-parallel Linear (o, ffn.2): this rank keeps columns [r*in/N, (r+1)*in/N) of W;
//     the partial products are all-reduced and the (whole) bias is added ONCE, after the
//     sum (vidax-anchor §5 row 13: adding it on every rank sums it N times).
//   RMSNorm over a TP-split dim (Wan's q/k norm spans all heads): the per-token sums of
//     squares are all-reduced, then each rank scales its slice (row 12).
// On one rank (group == nullptr) every function here is the plain single-rank op.
#pragma once
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "dist/communicator.h"
#include "nn/params.h"

namespace vidax::nn {

struct Linear;

// This rank's place in a tensor-parallel group.
struct TensorParallel {
  dist::Communicator* group = nullptr;  // nullptr = one rank
  int size() const { return group ? group->size() : 1; }
  int rank() const { return group ? group->rank() : 0; }
  bool active() const { return size() > 1; }
  // This rank's share of n (heads, features); throws naming `what` unless size() divides n.
  int64_t local(int64_t n, const std::string& what) const;
};

// How one parameter is split across the TP group.
enum class Split {
  Replicated,  // every rank holds all of it
  Rows,        // dim 0: a column-parallel Linear's weight and bias, a q/k norm gain
  Columns,     // dim 1: a row-parallel Linear's weight (packed: only the shard is allocated)
};
// Parameters split by name: the first rule whose suffix ends the name applies; other names are replicated.
struct ShardRule {
  std::string suffix;
  Split split;
};
using ShardTable = std::vector<ShardRule>;
Split split_of(const ShardTable& table, const std::string& name);

// What one rank holds of the parameters it took through shard_params (for the 1/N check).
struct WeightLedger {
  int64_t bytes = 0;       // bytes of the tensors this rank keeps (shards + replicated), stored dtype
  int64_t full_bytes = 0;  // bytes of the same parameters unsplit
  int64_t tensors = 0;
};

// A ParamSource that hands out this rank's shard of every parameter `table` splits (the model
// asks for the SHARD's shape) and the whole tensor for the others. Row shards are views of the
// source tensor (zero-copy for mmap'd files); column shards are packed copies of the shard only.
// Names are taken from `source`, so source.expect_all_taken() still checks coverage.
// `source` must outlive the returned ParamSource.
ParamSource shard_params(ParamSource& source, const TensorParallel& tp, ShardTable table,
                         std::shared_ptr<WeightLedger> ledger = nullptr);

// y = x W^T summed over l.reduce (fp32), then + bias once; in l.compute. Linear::operator()
// calls this when l.reduce is set.
Tensor row_parallel_linear(const Linear& l, const Tensor& x);

// RMSNorm over the last dim of the WHOLE vector when x holds this rank's slice of it:
// fp64 per-row sum of squares of the slice, all-reduced over tp, then ops::rms_norm_with_sum_sq
// (the same arithmetic as ops::rms_norm). gain: this rank's slice of the gain.
Tensor sharded_rms_norm(const Tensor& x, const std::optional<Tensor>& gain, double eps, const TensorParallel& tp);

}  // namespace vidax::nn
