#include "models/wan/vace_conditioning.h"

#include <algorithm>
#include <cmath>

#include "backend/ops.h"
#include "core/error.h"
#include "io/image_resize.h"

namespace vidax::wan {

Tensor vace_encode_masks(const Tensor& mask, int64_t refs, int64_t stride_t, int64_t stride_s) {
  const Tensor m4 = mask.dim() == 3 ? mask.unsqueeze(0) : mask;
  VIDAX_CHECK(m4.dim() == 4 && m4.size(0) >= 1, "vace_encode_masks: mask " << mask.str() << ", expected [1, F, H, W]");
  const int64_t F = m4.size(1), H = m4.size(2), W = m4.size(3), s = stride_s;
  // The reference views [F, H, W] as [F, h, s, w, s] with h = 2 * (H // (2 s)): H must be h * s.
  const int64_t h = 2 * (H / (2 * s)), w = 2 * (W / (2 * s));
  VIDAX_CHECK(h >= 2 && w >= 2 && h * s == H && w * s == W,
              "VACE mask of " << W << "x" << H << ": width and height must be multiples of " << 2 * s);
  VIDAX_CHECK(refs >= 0 && F >= 1, "vace_encode_masks: " << F << " frames, " << refs << " references");
  const int64_t depth = (F + stride_t - 1) / stride_t;  // int((depth + 3) // vae_stride[0])
  const std::vector<float> in = m4.select(0, 0).contiguous().to_f32_vector();
  const int64_t frames = refs + depth, plane = h * w;
  std::vector<float> out(static_cast<size_t>(s * s * frames * plane), 0.0f);
  // nearest-exact: source frame min(floor((i + 0.5) * F / depth), F - 1).
  const double time_scale = static_cast<double>(F) / static_cast<double>(depth);
  for (int64_t i = 0; i < depth; ++i) {
    const int64_t f = std::min(static_cast<int64_t>(std::floor((static_cast<double>(i) + 0.5) * time_scale)), F - 1);
    for (int64_t kh = 0; kh < s; ++kh)
      for (int64_t kw = 0; kw < s; ++kw) {
        const int64_t c = kh * s + kw;
        for (int64_t y = 0; y < h; ++y)
          for (int64_t x = 0; x < w; ++x)
            out[static_cast<size_t>((c * frames + refs + i) * plane + y * w + x)] =
                in[static_cast<size_t>((f * H + y * s + kh) * W + x * s + kw)];
      }
  }
  return Tensor::from_f32(out, {s * s, frames, h, w});
}

Tensor vace_encode_frames(const Tensor& frames, const Tensor& mask, const std::vector<Tensor>& references,
                          const VaeEncode& encode) {
  VIDAX_CHECK(frames.dim() == 4 && frames.size(0) == 3, "vace_encode_frames: frames " << frames.str()
                                                                                      << ", expected [3, F, H, W]");
  VIDAX_CHECK(mask.dim() == 4 && mask.size(0) == 1 && mask.size(1) == frames.size(1) &&
                  mask.size(2) == frames.size(2) && mask.size(3) == frames.size(3),
              "vace_encode_frames: mask " << mask.str() << " does not fit the frames " << frames.str());
  const int64_t F = frames.size(1), H = frames.size(2), W = frames.size(3), n = F * H * W;
  const std::vector<float> v = frames.contiguous().to_f32_vector(), m = mask.contiguous().to_f32_vector();
  // m > 0.5 -> 1 else 0; inactive = frames * (1 - m), reactive = frames * m.
  std::vector<float> inactive(v.size()), reactive(v.size());
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t i = 0; i < n; ++i) {
      const size_t k = static_cast<size_t>(c * n + i);
      const bool on = m[static_cast<size_t>(i)] > 0.5f;
      inactive[k] = on ? 0.0f : v[k];
      reactive[k] = on ? v[k] : 0.0f;
    }
  Tensor latent = ops::concat({encode(Tensor::from_f32(inactive, {1, 3, F, H, W})),
                               encode(Tensor::from_f32(reactive, {1, 3, F, H, W}))},
                              0);  // [2 z, F', h, w]
  if (references.empty()) return latent;
  std::vector<Tensor> parts;
  for (const Tensor& r : references) {
    VIDAX_CHECK(r.dim() == 4 && r.size(0) == 3 && r.size(1) == 1 && r.size(2) == H && r.size(3) == W,
                "vace_encode_frames: reference image " << r.str() << ", expected [3, 1, " << H << ", " << W << "]");
    const Tensor z = encode(r.unsqueeze(0));  // [z, 1, h, w]
    parts.push_back(ops::concat({z, Tensor::zeros(z.shape(), z.dtype())}, 0));
  }
  parts.push_back(latent);
  return ops::concat(parts, 1);
}

Tensor vace_latent(const Tensor& z0, const Tensor& m0) {
  VIDAX_CHECK(z0.dim() == 4 && m0.dim() == 4 && z0.size(1) == m0.size(1) && z0.size(2) == m0.size(2) &&
                  z0.size(3) == m0.size(3),
              "vace_latent: the frames' latent " << z0.str() << " and the mask's " << m0.str() << " do not match");
  return ops::concat({z0, m0}, 0);
}

Tensor vace_reference_image(const Tensor& image, int64_t height, int64_t width) {
  VIDAX_CHECK(image.dim() == 3 && image.size(0) == 3, "a reference image must be [3, H, W], got " << image.str());
  const int64_t h = image.size(1), w = image.size(2);
  if (h == height && w == width) return image.unsqueeze(1);
  const double scale = std::min(static_cast<double>(height) / static_cast<double>(h),
                                static_cast<double>(width) / static_cast<double>(w));
  const int64_t nh = static_cast<int64_t>(static_cast<double>(h) * scale);
  const int64_t nw = static_cast<int64_t>(static_cast<double>(w) * scale);
  VIDAX_CHECK(nh >= 1 && nw >= 1, "a reference image of " << w << "x" << h << " scaled into " << width << "x"
                                                          << height << " has an empty side");
  const std::vector<float> r = io::resize_bilinear(image.contiguous(), nh, nw).to_f32_vector();
  std::vector<float> canvas(static_cast<size_t>(3 * height * width), 1.0f);  // white in [-1, 1]
  const int64_t top = (height - nh) / 2, left = (width - nw) / 2;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t y = 0; y < nh; ++y)
      std::copy_n(r.begin() + (c * nh + y) * nw, nw, canvas.begin() + (c * height + top + y) * width + left);
  return Tensor::from_f32(canvas, {3, 1, height, width});
}

VaceSourcePlan vace_source_plan(int64_t frames, double fps, int64_t h, int64_t w, int64_t area, int64_t seq_len,
                                std::array<int64_t, 3> downsample) {
  VIDAX_CHECK(frames >= 1 && fps > 0 && h >= 1 && w >= 1,
              "a control video of " << frames << " frames of " << w << "x" << h << " at " << fps << " fps");
  const auto [df, dh, dw] = downsample;
  const double ratio = static_cast<double>(h) / static_cast<double>(w);
  // area_z = min(seq_len, max_area / (dh * dw), (h // dh) * (w // dw))
  const double area_z = std::min({static_cast<double>(seq_len), static_cast<double>(area) / static_cast<double>(dh * dw),
                                  static_cast<double>((h / dh) * (w / dw))});
  VIDAX_CHECK(area_z >= 1, "a control video of " << w << "x" << h << " is smaller than one token (" << dw << "x" << dh
                                                 << " pixels)");
  int64_t of = std::min((frames - 1) / df + 1, static_cast<int64_t>(static_cast<double>(seq_len) / area_z));
  VIDAX_CHECK(of >= 1, "the token budget " << seq_len << " does not hold one latent frame of the control video");
  const double target_area_z = std::min(area_z, static_cast<double>(static_cast<int64_t>(static_cast<double>(seq_len) /
                                                                                          static_cast<double>(of))));
  const int64_t oh_t = static_cast<int64_t>(std::nearbyint(std::sqrt(target_area_z * ratio)));  // round(): to even
  VIDAX_CHECK(oh_t >= 1, "a control video of " << w << "x" << h << " gives an empty height at this area");
  const int64_t ow_t = static_cast<int64_t>(target_area_z / static_cast<double>(oh_t));
  VIDAX_CHECK(ow_t >= 1, "a control video of " << w << "x" << h << " gives an empty width at this area");
  of = (of - 1) * df + 1;
  VaceSourcePlan plan;
  plan.height = oh_t * dh;
  plan.width = ow_t * dw;
  // Frame i spans [i / fps, (i + 1) / fps] (float32, as the reference's timestamp array); the
  // sampled times span 0 .. the last frame's midpoint; each takes the first frame that holds it.
  std::vector<float> start(static_cast<size_t>(frames)), end(static_cast<size_t>(frames));
  for (int64_t i = 0; i < frames; ++i) {
    start[static_cast<size_t>(i)] = static_cast<float>(static_cast<double>(i) / fps);
    end[static_cast<size_t>(i)] = static_cast<float>(static_cast<double>(i + 1) / fps);
  }
  const float duration = (start.back() + end.back()) / 2.0f;
  const double step = of > 1 ? static_cast<double>(duration) / static_cast<double>(of - 1) : 0.0;
  for (int64_t k = 0; k < of; ++k) {
    const double t = k == of - 1 && of > 1 ? static_cast<double>(duration) : static_cast<double>(k) * step;
    int64_t id = 0;  // np.argmax of no match is 0
    for (int64_t i = 0; i < frames; ++i)
      if (t >= start[static_cast<size_t>(i)] && t <= end[static_cast<size_t>(i)]) {
        id = i;
        break;
      }
    plan.frame_ids.push_back(id);
  }
  return plan;
}

}  // namespace vidax::wan
