// The VACE conditioning of WanVace (wan/vace.py, wan/utils/vace_processor.py), what its generate()
// builds before the loop:
//   source (prepare_source / VaceVideoProcessor, keep_last): the control video's size from its own
//     aspect ratio inside the area and token budget, its frames sampled over its whole duration;
//     the mask video's first channel mapped to [0, 1]; no video = zeros with an all-ones mask; a
//     reference image of another size pasted, centred, on a white canvas after a bilinear resize;
//   vace_encode_frames: the mask binarized (m > 0.5); inactive = frames * (1 - m) and reactive =
//     frames * m, each VAE-encoded (normalized latent), concatenated on channels (2 z_dim); each
//     reference image encoded alone with z_dim zero channels after it, placed before the frames;
//   vace_encode_masks: mask[0] [F, H, W] -> [64, F', H/8, W/8] (pixel (kh, kw) of each 8x8 block
//     on channel kh * 8 + kw), nearest-exact in time to F' = (F + 3) // 4, zero frames for the
//     references first;
//   vace_latent: [z0; m0] on channels: the DiT's vace_context [2 z_dim + 64, refs + F', H/8, W/8].
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <vector>

#include "core/tensor.h"

namespace vidax::wan {

// vace_encode_masks of one mask [1, F, H, W] (or [F, H, W]) with `refs` reference images.
// H and W must be multiples of 2 * stride_s (the reference's view); throws naming the sizes.
Tensor vace_encode_masks(const Tensor& mask, int64_t refs, int64_t stride_t = 4, int64_t stride_s = 8);

// The normalized VAE encoding of one video [1, 3, F, H, W] -> [z_dim, F', H/8, W/8].
using VaeEncode = std::function<Tensor(const Tensor& video)>;

// vace_encode_frames (masked form, as generate() always calls it): frames [3, F, H, W] in [-1, 1],
// mask [1, F, H, W] (any values; binarized here as the reference does), references [3, 1, H, W]
// each (already on the video's canvas) -> [2 z_dim, refs + F', H/8, W/8].
Tensor vace_encode_frames(const Tensor& frames, const Tensor& mask, const std::vector<Tensor>& references,
                          const VaeEncode& encode);

// vace_latent: z0 and m0 on channels.
Tensor vace_latent(const Tensor& z0, const Tensor& m0);

// prepare_source's reference image: image [3, h, w] in [-1, 1] -> [3, 1, H, W]; unchanged when the
// sizes match, else F.interpolate(bilinear, align_corners=False) to int(h * s) x int(w * s),
// s = min(H / h, W / w), pasted at ((H - nh) // 2, (W - nw) // 2) on a white (1.0) canvas.
Tensor vace_reference_image(const Tensor& image, int64_t height, int64_t width);

// VaceVideoProcessor._get_frameid_bbox_adjust_last: which frames of a video of `frames` frames at
// `fps` (constant rate: frame i spans [i / fps, (i + 1) / fps]) of h x w pixels the reference takes,
// and at what size, for a token budget `seq_len` and pixel area `area` (downsample = vae stride x
// patch = 4, 16, 16). Returns the frame indices (4k+1 of them) and {oh, ow}.
struct VaceSourcePlan {
  std::vector<int64_t> frame_ids;
  int64_t height = 0, width = 0;
};
VaceSourcePlan vace_source_plan(int64_t frames, double fps, int64_t h, int64_t w, int64_t area, int64_t seq_len,
                                std::array<int64_t, 3> downsample = {4, 16, 16});

}  // namespace vidax::wan
