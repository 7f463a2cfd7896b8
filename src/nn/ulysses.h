// Ulysses sequence parallelism (DeepSpeed-Ulysses; shared/reference/parallelism-and-rng.md A.1;
// docs/parallelism.md). Between attention calls each rank of the sequence-parallel (SP) group
// holds one contiguous chunk of the token sequence with all heads; self-attention exchanges
// q/k/v all-to-all to the whole sequence for 1/N of the heads, attends, and exchanges back.
//
// The sequence is zero-padded to a multiple of N. Unlike the official Wan code and xDiT, the
// padded KEYS ARE MASKED (kv_lens), so the output does not depend on N (their multi-GPU output
// changes whenever the token count is not a multiple of N). Padded query rows compute finite
// values that are dropped when the chunks are gathered.
#pragma once
#include "core/tensor.h"
#include "dist/communicator.h"

namespace vidax::nn {

struct SequenceParallel {
  dist::Communicator* group = nullptr;  // nullptr = one rank (every call below is the identity)
  int64_t tokens = 0;                   // the real sequence length

  int size() const { return group ? group->size() : 1; }
  int rank() const { return group ? group->rank() : 0; }
  bool active() const { return size() > 1; }
  int64_t padded() const { return (tokens + size() - 1) / size() * size(); }
  int64_t chunk() const { return padded() / size(); }

  // This rank's chunk [rank*chunk, (rank+1)*chunk) along `dim` of x, which holds all `tokens`
  // rows there; rows past `tokens` are zeros. Contiguous.
  Tensor local(const Tensor& x, int64_t dim) const;
  // Every rank's chunk concatenated in rank order along `dim`, padding dropped. Contiguous.
  Tensor gather(const Tensor& x, int64_t dim) const;
};

// softmax(q k^T / sqrt(D)) v over the whole sequence, from this rank's chunk of q, k, v
// [B, chunk, H, D] to its chunk of the output [B, chunk, H, D]; H must divide by the group size.
// One rank: ops::attention(q, k, v).
Tensor ulysses_attention(const Tensor& q, const Tensor& k, const Tensor& v, const SequenceParallel& sp);

}  // namespace vidax::nn
