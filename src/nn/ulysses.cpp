#include "nn/ulysses.h"

#include <vector>

#include "backend/ops.h"

namespace vidax::nn {

Tensor SequenceParallel::local(const Tensor& x, int64_t dim) const {
  if (!active()) return x;
  if (dim < 0) dim += x.dim();
  VIDAX_CHECK(dim >= 0 && dim < x.dim() && x.size(dim) == tokens,
              "sequence parallelism: expected " << tokens << " tokens on dim " << dim << " of " << x.str());
  Tensor full = x;
  if (padded() > tokens) {
    // ops::pad lists (lo, hi) from the last dim backwards.
    std::vector<int64_t> pads(static_cast<size_t>(2 * (x.dim() - dim)), 0);
    pads.back() = padded() - tokens;
    full = ops::pad(x, pads);
  }
  const int64_t c = chunk();
  return ops::copy(full.slice(dim, rank() * c, (rank() + 1) * c));
}

Tensor SequenceParallel::gather(const Tensor& x, int64_t dim) const {
  if (!active()) return x;
  if (dim < 0) dim += x.dim();
  VIDAX_CHECK(dim >= 0 && dim < x.dim() && x.size(dim) == chunk(),
              "sequence parallelism: expected this rank's " << chunk() << " tokens on dim " << dim << " of "
                                                            << x.str());
  const Tensor all = group->all_gather(x, dim);  // [.., padded, ..]
  return padded() == tokens ? all : ops::copy(all.slice(dim, 0, tokens));
}

Tensor ulysses_attention(const Tensor& q, const Tensor& k, const Tensor& v, const SequenceParallel& sp) {
  if (!sp.active()) return ops::attention(q, k, v);
  VIDAX_CHECK(q.dim() == 4 && k.dim() == 4 && v.dim() == 4 && q.size(1) == sp.chunk() && k.size(1) == sp.chunk() &&
                  v.size(1) == sp.chunk(),
              "Ulysses attention: q " << q.str() << ", k " << k.str() << ", v " << v.str()
                                      << " must be [B, " << sp.chunk() << " tokens, H, D]");
  VIDAX_CHECK(q.size(2) % sp.size() == 0, "Ulysses attention: " << q.size(2) << " heads on this rank are not divisible"
                                                                << " by the sequence-parallel degree " << sp.size());
  // Sequence-sharded, all heads -> whole (padded) sequence, heads/N: scatter heads (dim 2), gather tokens (dim 1).
  const Tensor qh = sp.group->all_to_all(q, 2, 1);
  const Tensor kh = sp.group->all_to_all(k, 2, 1);
  const Tensor vh = sp.group->all_to_all(v, 2, 1);
  ops::AttentionOptions opt;
  if (sp.padded() > sp.tokens) opt.kv_lens.assign(static_cast<size_t>(q.size(0)), sp.tokens);  // mask the padding
  const Tensor o = ops::attention(qh, kh, vh, opt);
  return sp.group->all_to_all(o, 1, 2);  // back: scatter tokens, gather heads
}

}  // namespace vidax::nn
