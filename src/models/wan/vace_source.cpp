#include "models/wan/vace_source.h"

#include <algorithm>
#include <cmath>

#include "backend/ops.h"
#include "core/error.h"
#include "io/image_resize.h"

namespace vidax::wan {

namespace {

// The frames `ids` of a [3, F, H, W] video, in order.
Tensor take_frames(const Tensor& v, const std::vector<int64_t>& ids) {
  std::vector<Tensor> parts;
  parts.reserve(ids.size());
  for (int64_t i : ids) parts.push_back(v.slice(1, i, i + 1));
  return ops::concat(parts, 1).contiguous();
}

// The 8-bit levels of a [3, F, H, W] video given as level / 127.5 - 1 (as the decoders give it);
// throws if a value is not such a level (the reference resizes the decoded bytes).
Tensor to_levels(const Tensor& v, const char* what) {
  const std::vector<float> f = v.contiguous().to_f32_vector();
  Tensor u = Tensor::empty(v.shape(), DType::U8);
  uint8_t* d = u.data<uint8_t>();  // view-write-ok: fills the tensor made on the line above
  for (size_t i = 0; i < f.size(); ++i) {
    const float level = std::nearbyint((f[i] + 1.0f) * 127.5f);
    VIDAX_CHECK(level >= 0.0f && level <= 255.0f && level / 127.5f - 1.0f == f[i],
                what << ": value " << f[i] << " is not an 8-bit level (level / 127.5 - 1): only decoded frames can be "
                     << "resized as the reference resizes them");
    d[i] = static_cast<uint8_t>(level);
  }
  return u;
}

}  // namespace

Tensor vace_resize_crop(const Tensor& video, int64_t oh, int64_t ow, const char* what) {
  const int64_t ih = video.size(2), iw = video.size(3);
  if (ih == oh && iw == ow) return video;
  // scale = max(ow / iw, oh / ih); size = (round(scale * ih), round(scale * iw)) with Python's
  // round (halves to even), then the centre (floor) crop.
  const double scale = std::max(static_cast<double>(ow) / static_cast<double>(iw),
                                static_cast<double>(oh) / static_cast<double>(ih));
  const auto rh = static_cast<int64_t>(std::nearbyint(scale * static_cast<double>(ih)));
  const auto rw = static_cast<int64_t>(std::nearbyint(scale * static_cast<double>(iw)));
  VIDAX_CHECK(rh >= oh && rw >= ow, what << ": resized to " << rw << "x" << rh << ", smaller than " << ow << "x" << oh);
  const Tensor r = io::resize_bicubic_antialias_u8(to_levels(video, what), rh, rw);
  const int64_t y1 = (rh - oh) / 2, x1 = (rw - ow) / 2;
  const Tensor c = r.slice(2, y1, y1 + oh).slice(3, x1, x1 + ow).contiguous();
  // .float().div_(127.5).sub_(1.) in fp32.
  std::vector<float> out(static_cast<size_t>(c.numel()));
  const uint8_t* b = c.data<uint8_t>();  // view-write-ok: reads the crop
  for (size_t i = 0; i < out.size(); ++i) out[i] = static_cast<float>(b[i]) / 127.5f - 1.0f;
  return Tensor::from_f32(out, c.shape());
}

VaceSource vace_prepare_source(const pipeline::ControlInputs& in, const pipeline::Geometry& g) {
  VaceSource s;
  const int64_t ds = g.vae_stride_s * g.patch_h;
  if (in.video.defined()) {
    const int64_t F = in.video.size(1), H = in.video.size(2), W = in.video.size(3);
    const int64_t area = in.height * in.width;
    const int64_t latent_frames = (in.frames - 1) / g.vae_stride_t + 1;
    const int64_t seq_len = area / (ds * ds) * latent_frames;
    const VaceSourcePlan plan = vace_source_plan(F, in.fps, H, W, area, seq_len, {g.vae_stride_t, ds, ds});
    const int64_t n = static_cast<int64_t>(plan.frame_ids.size());
    if (n != F)
      s.notes.push_back(msg() << "the control video's " << F << " frames were sampled to " << n
                              << " over its whole duration (as the reference does; at most --frames " << in.frames
                              << " at this area)");
    if (n != in.frames)
      s.notes.push_back(msg() << "the video has " << n << " frames: the control video sets the length (" << in.frames
                              << " requested)");
    const int64_t oh = plan.height, ow = plan.width;
    if (oh != H || ow != W)
      s.notes.push_back(msg() << "the control video" << (in.mask.defined() ? " and its mask were" : " was")
                              << " resized (antialiased bicubic) and centre-cropped from " << W << "x" << H << " to "
                              << ow << "x" << oh << ", as the reference does");
    if (oh != in.height || ow != in.width)
      s.notes.push_back(msg() << "the video is " << ow << "x" << oh << ": the control video's size at the requested "
                              << "area (" << in.width << "x" << in.height << " requested)");
    s.frames = vace_resize_crop(take_frames(in.video, plan.frame_ids), oh, ow, "--control-video");
    if (in.mask.defined()) {
      // torch.clamp((mask[:1] + 1) / 2, 0, 1) in fp32, after the same resize as the video.
      std::vector<float> m = vace_resize_crop(take_frames(in.mask, plan.frame_ids), oh, ow, "--mask-video")
                                 .slice(0, 0, 1)
                                 .contiguous()
                                 .to_f32_vector();
      for (float& v : m) v = std::clamp((v + 1.0f) / 2.0f, 0.0f, 1.0f);
      s.mask = Tensor::from_f32(m, {1, n, oh, ow});
    } else {
      s.mask = Tensor::full({1, n, oh, ow}, 1.0, DType::F32);
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
