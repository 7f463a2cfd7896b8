// LTX-2's rotary position embedding (official ltx_core/model/transformer/rope.py with the positions
// the patchifiers build, components/patchifiers.py and tools.py VideoLatentTools):
//  - positions are per-token [start, end) bounds per axis; video: latent (f, h, w) -> pixel bounds
//    [8f, 8f+8) x [32h, 32h+32) x [32w, 32w+32), the frame axis shifted by the causal fix
//    max(0, x + 1 - 8) and divided by fps; audio: latent frame i -> mel frames [4i, 4i+4) with the
//    causal shift max(0, x + 1 - 4), times hop / sample_rate (seconds). The midpoint of each bound
//    pair, divided by that axis' max position, is u in [0, 1).
//  - frequencies (generate_freq_grid_np, the fp64 build): w_j = theta^(j / (F - 1)) * pi / 2 in fp64,
//    rounded to fp32, j < F = dim / (2 * n_axes); the angle of (token, j, axis a) is
//    w_j * (2 u_a - 1) in fp32, flattened axis fastest (index j * n_axes + a).
//  - split layout: the angles are front-padded with identity (cos 1, sin 0) to dim / 2, cut into
//    heads x (head_dim / 2); inside each head x[i] pairs with x[i + head_dim / 2].
//  - interleaved layout: the angles front-padded with (dim % (2 n_axes)) / 2 identity pairs to
//    dim / 2; pair i is (x[2i], x[2i+1]) across the whole width (heads not involved).
//  - cross-modal RoPE (audio <-> video attention): the temporal axis only (video positions' axis 0,
//    audio positions), width = the audio inner dim, max position max(20, 20) = 20.
// The fp32 frequency build (generate_freq_grid_pytorch, torch's fp32 pow) is not built here.
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"

namespace vidax::ltx2 {

enum class RopeLayout { Split, Interleaved };

// Per-token bounds: start[a * tokens + t], end[...] for axis a < n_axes (fp32, as the reference).
struct Positions {
  int64_t n_axes = 0, tokens = 0;
  std::vector<float> start, end;
};

struct VideoScale {
  int64_t time = 8, height = 32, width = 32;  // SpatioTemporalScaleFactors.default()
};

// The latent grid (frames, height, width) row-major like the tokens; patch size 1.
Positions video_positions(int64_t frames, int64_t height, int64_t width, double fps, VideoScale scale = {},
                          bool causal_fix = true);

struct AudioTiming {
  int64_t sample_rate = 16000, hop_length = 160, downsample = 4, shift = 0;
  bool causal = true;
};
Positions audio_positions(int64_t frames, AudioTiming timing = {});

// Axis 0 only (the cross-modal temporal RoPE's positions).
Positions temporal(const Positions& p);

struct RopeSpec {
  int64_t dim = 0;    // the rotated width (heads * head_dim)
  int64_t heads = 1;  // split layout only: the tables are cut per head
  double theta = 10000.0;
  std::vector<int64_t> max_pos;  // one per axis: video {20, 2048, 2048}, audio and cross {20}
  RopeLayout layout = RopeLayout::Split;
};

// Tables in the layout ops::rope takes for the view apply_rope makes:
//   split: [tokens * heads, head_dim / 2] (row t * heads + h); interleaved: [tokens, dim / 2].
struct RopeTables {
  Tensor cos, sin;  // F32
  RopeLayout layout = RopeLayout::Split;
  int64_t heads = 1, dim = 0;
};

RopeTables rope_tables(const Positions& p, const RopeSpec& spec);

// x [B, tokens, dim] (any float dtype the backend rotates) -> a new rotated tensor, same shape.
Tensor apply_rope(const Tensor& x, const RopeTables& t);

}  // namespace vidax::ltx2
