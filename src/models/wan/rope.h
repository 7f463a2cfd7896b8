// Wan 3D RoPE tables (official rope_params / rope_apply): the head dim is split
// into [t | h | w] of d - 4*(d/6), 2*(d/6), 2*(d/6) real channels; axis a with
// width D_a has frequencies 1 / 10000^(2j / D_a) (float64); token (f, h, w) of
// the latent grid (row-major, positions from 0) rotates pair k by
// f*freq_t[k], h*freq_h[k - n_t] or w*freq_w[k - n_t - n_h]. Pairs are
// interleaved (x[2k], x[2k+1]). The tables are float64 because the official
// code rotates in complex128 (ops::rope rotates in f64 for F64 tables).
#pragma once
#include <array>

#include "core/tensor.h"
#include "models/wan/dit_config.h"

namespace vidax::wan {

struct RopeTables {
  Tensor cos;  // [L, head_dim / 2] F64, L = F' * H' * W'
  Tensor sin;
};

// grid = (F', H', W') after patching. On Device::Meta the tables are shape-only.
RopeTables rope_tables(const DiTConfig& cfg, std::array<int64_t, 3> grid, Device device = Device::CPU);

}  // namespace vidax::wan
