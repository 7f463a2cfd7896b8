#include "models/wan/vace_source.h"

#include <algorithm>

#include "backend/ops.h"
#include "core/error.h"

namespace vidax::wan {

namespace {

// The frames `ids` of a [3, F, H, W] video, in order.
Tensor take_frames(const Tensor& v, const std::vector<int64_t>& ids) {
  std::vector<Tensor> parts;
  parts.reserve(ids.size());
  for (int64_t i : ids) parts.push_back(v.slice(1, i, i + 1));
  return ops::concat(parts, 1).contiguous();
}

}  // namespace

VaceSource vace_prepare_source(const pipeline::ControlInputs& in, const pipeline::Geometry& g) {
  VaceSource s;
  const int64_t ds = g.vae_stride_s * g.patch_h;
  if (in.video.defined()) {
    const int64_t F = in.video.size(1), H = in.video.size(2), W = in.video.size(3);
    const int64_t area = in.height * in.width;
    const int64_t latent_frames = (in.frames - 1) / g.vae_stride_t + 1;
    const int64_t seq_len = area / (ds * ds) * latent_frames;
    const VaceSourcePlan plan = vace_source_plan(F, in.fps, H, W, area, seq_len, {g.vae_stride_t, ds, ds});
    VIDAX_CHECK(plan.height == H && plan.width == W,
                "--control-video is " << W << "x" << H << "; at the requested area of " << in.width << "x" << in.height
                                      << " the reference resizes it (antialiased bicubic) and centre-crops it to "
                                      << plan.width << "x" << plan.height
                                      << ", which vidax does not do yet: give a control video (and mask) of "
                                      << plan.width << "x" << plan.height);
    const int64_t n = static_cast<int64_t>(plan.frame_ids.size());
    if (n != F)
      s.notes.push_back(msg() << "the control video's " << F << " frames were sampled to " << n
                              << " over its whole duration (as the reference does; at most --frames " << in.frames
                              << " at this area)");
    if (n != in.frames)
      s.notes.push_back(msg() << "the video has " << n << " frames: the control video sets the length (" << in.frames
                              << " requested)");
    if (H != in.height || W != in.width)
      s.notes.push_back(msg() << "the video is " << W << "x" << H << ": the control video's size ("
                              << in.width << "x" << in.height << " requested)");
    s.frames = take_frames(in.video, plan.frame_ids);
    if (in.mask.defined()) {
      // torch.clamp((mask[:1] + 1) / 2, 0, 1) in fp32.
      std::vector<float> m = take_frames(in.mask, plan.frame_ids).slice(0, 0, 1).contiguous().to_f32_vector();
      for (float& v : m) v = std::clamp((v + 1.0f) / 2.0f, 0.0f, 1.0f);
      s.mask = Tensor::from_f32(m, {1, n, H, W});
    } else {
      s.mask = Tensor::full({1, n, H, W}, 1.0, DType::F32);
    }
  } else {
    // No control video: zeros, all to be generated (prepare_source's src_video None).
    s.frames = Tensor::zeros({3, in.frames, in.height, in.width}, DType::F32);
    s.mask = Tensor::full({1, in.frames, in.height, in.width}, 1.0, DType::F32);
  }
  const int64_t H = s.frames.size(2), W = s.frames.size(3);
  for (const Tensor& r : in.references) {
    if (r.size(1) != H || r.size(2) != W)
      s.notes.push_back(msg() << "a reference image of " << r.size(2) << "x" << r.size(1)
                              << " is scaled (bilinear) onto a white " << W << "x" << H << " canvas, as the reference does");
    s.references.push_back(vace_reference_image(r, H, W));
  }
  return s;
}

Tensor vace_context(const pipeline::ControlInputs& in, const pipeline::Geometry& g, const VaeEncode& encode,
                    pipeline::ImageConditioning& out) {
  const VaceSource s = vace_prepare_source(in, g);
  out.notes = s.notes;
  out.frames = s.frames.size(1);
  out.height = s.frames.size(2);
  out.width = s.frames.size(3);
  out.leading_latent_frames = static_cast<int64_t>(s.references.size());
  const Tensor z0 = vace_encode_frames(s.frames, s.mask, s.references, encode);
  const Tensor m0 = vace_encode_masks(s.mask, out.leading_latent_frames, g.vae_stride_t, g.vae_stride_s);
  const Tensor z = vace_latent(z0, m0);
  out.taps["inter.z0"] = z0;
  out.taps["inter.m0"] = m0;
  out.taps["inter.vace_context"] = z;
  return z;
}

}  // namespace vidax::wan
