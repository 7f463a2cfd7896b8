// The tile geometry of the LTX-2 video VAE's tiled decode (ltx_core/tiling.py with
// ConvVideoDecoder._prepare_tiles): how a TileSizeConfig splits the latent grid into overlapping
// intervals (split_by_size, split_temporal_causal), where each lands in the video
// (map_spatial_slice, map_temporal_slice) and the 1-D trapezoidal blending masks
// (compute_trapezoidal_mask_1d, masks_are_complementary).
#pragma once
#include <cstdint>
#include <vector>

namespace vidax::ltx2::vae {

// DimensionInterval: [start, end) of the latent axis, with its blending ramps (in latent units).
struct Interval {
  int64_t start = 0, end = 0, left_ramp = 0, right_ramp = 0;
};

// split_by_size(size, overlap)(n): one interval when n <= size, else tiles of `size` stepping by
// size - overlap, the last ending at n.
std::vector<Interval> split_by_size(int64_t n, int64_t size, int64_t overlap);
// split_temporal_causal: the same, every tile after the first one latent frame earlier with a
// left ramp one longer.
std::vector<Interval> split_temporal_causal(int64_t n, int64_t size, int64_t overlap);

// compute_trapezoidal_mask_1d(length, ramp_left, ramp_right, left_starts_from_0) in fp32: ones,
// times a torch.linspace fade-in on the left and fade-out on the right, clamped to [0, 1].
std::vector<float> trapezoid_mask(int64_t length, int64_t ramp_left, int64_t ramp_right, bool left_starts_from_0);

// The latent intervals of one axis: untiled (tile_size 0) -> the whole axis; else the split of
// (tile_size / factor, overlap / factor) (the tile at least max(2, overlap + 1); time:
// split_temporal_causal). Throws for a size the reference refuses (tile_size < 2 factor, not a
// multiple of factor, overlap not a multiple or not below tile_size).
std::vector<Interval> latent_intervals(int64_t latent_len, int64_t factor, int64_t tile_size, int64_t overlap,
                                       bool temporal, const char* axis_name);

// One axis of one tile: the latent slice it reads, the video slice it writes, its mask over that
// slice ({1}: untiled, broadcast).
struct AxisTile {
  int64_t in_start = 0, in_end = 0, out_start = 0, out_end = 0;
  std::vector<float> mask;
  bool untiled = false;  // the decode's DEFAULT_MAPPING_OPERATION: mask {1} over the whole axis
};

// Decode (ConvVideoDecoder._prepare_tiles): the tiles of one axis of `latent_len` latents decoding
// to `out_len` pixels / frames: untiled -> one tile over everything with mask {1}; else
// latent_intervals mapped to the video (time [s f, 1 + (e - 1) f), space [s f, e f)) with masks
// in video units.
std::vector<AxisTile> axis_tiles(int64_t latent_len, int64_t out_len, int64_t factor, int64_t tile_size,
                                 int64_t overlap, bool temporal, const char* axis_name);

// Encode (prepare_tiles_for_encoding): in = the video slice of each latent interval, out = the
// interval, the mask in latent units (an untiled axis: one interval, mask all ones). Also refuses
// an overlap under the reference's minimum (16 frames, 64 px).
std::vector<AxisTile> encode_axis_tiles(int64_t latent_len, int64_t factor, int64_t tile_size, int64_t overlap,
                                        bool temporal, const char* axis_name);

// masks_are_complementary for one axis: the masks of its distinct tiles sum to 1 (atol 1e-5) everywhere.
bool complementary(const std::vector<AxisTile>& tiles, int64_t out_len);

}  // namespace vidax::ltx2::vae
