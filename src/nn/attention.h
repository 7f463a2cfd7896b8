// Head split/merge for attention layers: pure views on contiguous tensors
// (no copies, no ops). Layout [B, L, H*D] <-> [B, L, H, D], channel h*D + d.
#pragma once
#include "core/tensor.h"

namespace vidax::nn {

inline Tensor split_heads(const Tensor& x, int64_t heads) {
  VIDAX_CHECK(x.dim() == 3 && x.size(2) % heads == 0,
              "split_heads: expected [B, L, H*D] with H = " << heads << ", got " << x.str());
  return x.view({x.size(0), x.size(1), heads, x.size(2) / heads});
}

inline Tensor merge_heads(const Tensor& x) {
  VIDAX_CHECK(x.dim() == 4, "merge_heads: expected [B, L, H, D], got " << x.str());
  return x.view({x.size(0), x.size(1), x.size(2) * x.size(3)});
}

}  // namespace vidax::nn
