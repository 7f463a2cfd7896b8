// The image conditioning of Wan 2.1 image-to-video and first-last-frame-to-video, as
// WanI2V.generate (wan/image2video.py) and WanFLF2V.generate (wan/first_last_frame2video.py)
// build it before their loops:
//   size:  the video takes the first image's aspect ratio at the requested area (max_area =
//          height * width): lat_h = round(sqrt(area * h/w) // 8 // 2 * 2), lat_w likewise with w/h,
//          the video lat_h * 8 x lat_w * 8 (whatever orientation the request named);
//   y:     the VAE encoding of [first frame, zeros..., (last frame)] (each bicubic-resized to the
//          video size, F.interpolate, no antialias), after a 4-channel mask that is 1 on the
//          given frames (repeat_interleave of the first frame 4 times, then 4 frames per latent);
//   clip:  CLIPModel.visual of each image at its own size (clip.h).
// FLF2V's last frame, when its size differs from the first's, is resized and centre-cropped as the
// reference does it (see flf2v_last_frame).
#pragma once
#include <array>
#include <cstdint>
#include <string>

#include "core/tensor.h"

namespace vidax::wan {

// {lat_h, lat_w} for an image of img_h x img_w at `area` pixels (vae_stride 8, patch 2 for every
// Wan 2.1 model; given here so the rule reads as the reference's). Throws when a side comes out 0.
std::array<int64_t, 2> i2v_latent_size(int64_t img_h, int64_t img_w, int64_t area, int64_t vae_stride = 8,
                                       int64_t patch = 2);

// The mask [4, (frames - 1) / 4 + 1, lat_h, lat_w]: 1 on the first frame's latent (all 4
// channels) and, with `last`, on the last frame's (channel 3 of the last latent frame), 0 elsewhere.
// The FLF2V reference builds it for 81 frames whatever frame_num is (other counts fail there);
// this is the same mask for any 4k+1 frames, identical at 81.
Tensor i2v_mask(int64_t frames, int64_t lat_h, int64_t lat_w, bool last);

// WanFLF2V.generate's handling of a last frame whose size differs from the first's: PIL sizes
// are (W, H); ratio = max(Wf / Wl, Hf / Hl); size = [round(Wl * ratio), round(Hl * ratio)]; then
// TF.center_crop(last, size), which reads size as (height, width) - so the reference's crop is
// transposed for a non-square frame, zero-padded where it exceeds the image. Done exactly so (the
// parity contract); *note says what happened, for the user. Same-size frames pass unchanged.
Tensor flf2v_last_frame(const Tensor& first, const Tensor& last, std::string* note = nullptr);

// The VAE input [1, 3, frames, h, w]: the first image (and the last) bicubic-resized to h x w,
// zeros between (F.interpolate(mode='bicubic'), align_corners=False, no antialias).
Tensor i2v_video(const Tensor& first, const Tensor& last, int64_t frames, int64_t h, int64_t w);

// Wan 2.2 TI2V-5B's image branch (WanTI2V.i2v of wan/textimage2video.py) sizes and prepares the
// image differently from Wan 2.1 I2V:
//   size:  best_output_size(w, h, dw, dh, max_area) (wan/utils/utils.py), dw = dh = patch x
//          vae_stride (32): the width-first and the height-first rounding to multiples of 32 under
//          the area, whichever keeps the image's aspect ratio better (ties: height-first);
//   image: PIL LANCZOS to (round(w * s), round(h * s)), s = max(ow / w, oh / h), then the centre
//          crop box ((W - ow) // 2, (H - oh) // 2) of ow x oh, to_tensor, [-1, 1];
//   latent: the Wan 2.2 VAE encoding of that one frame is the first latent frame, kept fixed
//          (the loader's condition_on_images; the first frame's tokens take t = 0).
// Returns {ow, oh}. The reference divides by zero when a side rounds to 0 (an image of an aspect
// ratio far from what the area allows); here that is an error saying so.
std::array<int64_t, 2> ti2v_output_size(int64_t img_w, int64_t img_h, int64_t dw, int64_t dh, int64_t area);

// The [3, oh, ow] F32 frame in [-1, 1] that WanTI2V.i2v encodes, from the request's image
// ([3, H, W] F32 in [-1, 1]; its 8-bit levels round((x + 1) / 2 * 255) are the PIL picture the
// reference resizes, so a tensor that did not come from 8-bit pixels is quantised as PIL would hold it).
Tensor ti2v_image(const Tensor& image, int64_t oh, int64_t ow);

}  // namespace vidax::wan
