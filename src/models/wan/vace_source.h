// Wan VACE's request inputs -> the DiT's vace_context, as WanVace.generate takes them (wan/vace.py):
// prepare_source (the control video's frames and size by VaceVideoProcessor's keep_last rule, the
// mask's first channel to [0, 1], zeros and an all-ones mask when no video is given, reference
// images on the video's canvas), then vace_encode_frames / vace_encode_masks / vace_latent
// (vace_conditioning.h).
//
// The token budget: the reference's prepare_source accepts only the areas 480x832 (seq_len 32760)
// and 720x1280 (75600), both (area / 256) x 21 latent frames (81 video frames). Here seq_len =
// (area / 256) x ((frames - 1) / 4 + 1) for the request's area and frames: the reference's at 81
// frames, and the same rule at the other sizes and lengths it refuses.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/wan/vace_conditioning.h"
#include "pipeline/parts.h"

namespace vidax::wan {

struct VaceSource {
  Tensor frames;                    // [3, F, H, W] in [-1, 1]
  Tensor mask;                      // [1, F, H, W] in [0, 1]
  std::vector<Tensor> references;   // [3, 1, H, W] each, on the video's canvas
  std::vector<std::string> notes;   // what was done to the inputs, for the user
};

// prepare_source. A control video (and its mask) of another size than the plan's is resized and
// cropped as the reference's VaceVideoProcessor.resize_crop (vace_resize_crop).
VaceSource vace_prepare_source(const pipeline::ControlInputs& in, const pipeline::Geometry& g);

// VaceVideoProcessor.resize_crop on decoded frames: a [3, F, H, W] F32 video of 8-bit levels
// (level / 127.5 - 1) scaled by max(ow / W, oh / H) to (round(scale H), round(scale W)) with
// torch's uint8 antialiased bicubic interpolate, centre-cropped to oh x ow and scaled back to
// [-1, 1]; the video itself when its size is oh x ow. `what` names the input in errors (a value
// that is not an 8-bit level is refused).
Tensor vace_resize_crop(const Tensor& video, int64_t oh, int64_t ow, const char* what);

// The whole conditioning: the source, its VAE latents, the mask latent; out.frames, height, width,
// leading_latent_frames (one per reference image), notes and taps (inter.z0, inter.m0,
// inter.vace_context) set; returns vace_context [2 z_dim + stride_s^2, refs + F', H/8, W/8].
Tensor vace_context(const pipeline::ControlInputs& in, const pipeline::Geometry& g, const VaeEncode& encode,
                    pipeline::ImageConditioning& out);

}  // namespace vidax::wan
