#include "models/wan/i2v_conditioning.h"

#include <cmath>
#include <cstring>

#include "core/error.h"
#include "io/image_resize.h"

namespace vidax::wan {

std::array<int64_t, 2> i2v_latent_size(int64_t img_h, int64_t img_w, int64_t area, int64_t vae_stride,
                                       int64_t patch) {
  VIDAX_CHECK(img_h >= 1 && img_w >= 1, "an empty image (" << img_w << "x" << img_h << ")");
  const double aspect = static_cast<double>(img_h) / static_cast<double>(img_w);
  const double a = static_cast<double>(area), s = static_cast<double>(vae_stride), p = static_cast<double>(patch);
  // np.sqrt(max_area * aspect_ratio) // vae_stride // patch * patch, then round(); floor division of
  // positive floats by powers of two is exact.
  const int64_t lat_h = static_cast<int64_t>(std::nearbyint(std::floor(std::floor(std::sqrt(a * aspect) / s) / p) * p));
  const int64_t lat_w = static_cast<int64_t>(std::nearbyint(std::floor(std::floor(std::sqrt(a / aspect) / s) / p) * p));
  VIDAX_CHECK(lat_h >= patch && lat_w >= patch,
              "an image of " << img_w << "x" << img_h << " at an area of " << area << " pixels gives a video of "
                             << lat_w * vae_stride << "x" << lat_h * vae_stride
                             << " (the reference keeps the image's aspect ratio): a side is empty; use an image "
                                "closer to the requested shape or a larger --width x --height");
  return {lat_h, lat_w};
}

Tensor i2v_mask(int64_t frames, int64_t lat_h, int64_t lat_w, bool last) {
  VIDAX_CHECK(frames >= 1 && (frames - 1) % 4 == 0, "i2v_mask: " << frames << " frames is not 4k+1");
  const int64_t lf = (frames - 1) / 4 + 1, plane = lat_h * lat_w;
  Tensor m = Tensor::zeros({4, lf, lat_h, lat_w}, DType::F32);
  float* d = m.data<float>();  // view-write-ok: fills the tensor made on the line above
  auto fill = [&](int64_t c, int64_t f) {
    for (int64_t i = 0; i < plane; ++i) d[(c * lf + f) * plane + i] = 1.0f;
  };
  for (int64_t c = 0; c < 4; ++c) fill(c, 0);  // the first frame, repeated 4 times
  // The last frame (index frames - 1) is element 4 + (frames - 2) = 4 (lf - 1) + 3 of the repeated
  // sequence: channel 3 of the last latent frame. One frame: the first is the last.
  if (last && frames > 1) fill(3, lf - 1);
  return m;
}

Tensor flf2v_last_frame(const Tensor& first, const Tensor& last, std::string* note) {
  const int64_t Hf = first.size(1), Wf = first.size(2), Hl = last.size(1), Wl = last.size(2);
  if (Hf == Hl && Wf == Wl) return last;
  // PIL's .size is (W, H): first_frame_size[0] / last_frame_size[0] is the width ratio.
  const double ratio = std::max(static_cast<double>(Wf) / static_cast<double>(Wl),
                                static_cast<double>(Hf) / static_cast<double>(Hl));
  // Python's round() (halves to even): nearbyint in the default rounding mode.
  const int64_t s0 = static_cast<int64_t>(std::nearbyint(static_cast<double>(Wl) * ratio));
  const int64_t s1 = static_cast<int64_t>(std::nearbyint(static_cast<double>(Hl) * ratio));
  // TF.center_crop(img, [s0, s1]) takes [height, width]: s0 (a width) becomes the height.
  if (note)
    *note = msg() << "the last frame (" << Wl << "x" << Hl << ") differs in size from the first (" << Wf << "x" << Hf
                  << "): cropped to " << s1 << "x" << s0 << " (width x height) as the reference's center_crop "
                  << "does it (it reads the scaled (width, height) as (height, width); zero-padded where larger), "
                  << "then resized to the video size; give frames of one size to avoid this";
  return io::center_crop(last, s0, s1);
}

Tensor i2v_video(const Tensor& first, const Tensor& last, int64_t frames, int64_t h, int64_t w) {
  Tensor v = Tensor::zeros({1, 3, frames, h, w}, DType::F32);
  float* d = v.data<float>();  // view-write-ok: fills the tensor made on the line above
  const int64_t plane = h * w;
  auto put = [&](const Tensor& img, int64_t f) {
    const Tensor r = io::resize_bicubic(img.contiguous(), h, w).contiguous();  // [3, h, w]
    const float* s = r.data<float>();  // view-write-ok: a read of a fresh contiguous copy
    for (int64_t c = 0; c < 3; ++c) std::memcpy(d + (c * frames + f) * plane, s + c * plane, sizeof(float) * plane);
  };
  put(first, 0);
  if (last.defined()) {
    VIDAX_CHECK(frames >= 2, "a first and a last frame need at least 2 frames");
    put(last, frames - 1);
  }
  return v;
}

}  // namespace vidax::wan
