#include "models/wan/i2v_conditioning.h"

#include <algorithm>
#include <cmath>
#include <cstring>

#include "core/error.h"
#include "io/image_resize.h"
#include "io/video.h"

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

namespace {

// Python's float floor division a // b (float_floor_div: through fmod, then floor with its
// correction), for the positive operands of best_output_size.
double py_floordiv(double a, double b) {
  const double mod = std::fmod(a, b);
  double div = (a - mod) / b;
  if (mod != 0.0 && ((b < 0) != (mod < 0))) div -= 1.0;
  if (div == 0.0) return std::copysign(0.0, a / b);
  double f = std::floor(div);
  if (div - f > 0.5) f += 1.0;
  return f;
}

}  // namespace

std::array<int64_t, 2> ti2v_output_size(int64_t img_w, int64_t img_h, int64_t dw, int64_t dh, int64_t area) {
  VIDAX_CHECK(img_h >= 1 && img_w >= 1, "an empty image (" << img_w << "x" << img_h << ")");
  const double a = static_cast<double>(area);
  const double ratio = static_cast<double>(img_w) / static_cast<double>(img_h);
  const double ow = std::pow(a * ratio, 0.5), oh = a / ow;
  auto too_far = [&](const char* first) {
    return Error(msg() << "an image of " << img_w << "x" << img_h << " at an area of " << area
                       << " pixels: rounding the " << first << " to a multiple of " << (first[0] == 'w' ? dw : dh)
                       << " leaves no room for the other side (the reference's best_output_size divides by zero "
                          "here); use an image closer to the requested shape or a larger --width x --height");
  };
  const int64_t ow1 = static_cast<int64_t>(py_floordiv(ow, static_cast<double>(dw)) * static_cast<double>(dw));
  if (ow1 <= 0) throw too_far("width");
  const int64_t oh1 = static_cast<int64_t>(py_floordiv(a / static_cast<double>(ow1), static_cast<double>(dh)) * static_cast<double>(dh));
  if (oh1 <= 0) throw too_far("width");
  const int64_t oh2 = static_cast<int64_t>(py_floordiv(oh, static_cast<double>(dh)) * static_cast<double>(dh));
  if (oh2 <= 0) throw too_far("height");
  const int64_t ow2 = static_cast<int64_t>(py_floordiv(a / static_cast<double>(oh2), static_cast<double>(dw)) * static_cast<double>(dw));
  if (ow2 <= 0) throw too_far("height");
  const double ratio1 = static_cast<double>(ow1) / static_cast<double>(oh1);
  const double ratio2 = static_cast<double>(ow2) / static_cast<double>(oh2);
  if (std::max(ratio / ratio1, ratio1 / ratio) < std::max(ratio / ratio2, ratio2 / ratio)) return {ow1, oh1};
  return {ow2, oh2};
}

Tensor ti2v_image(const Tensor& image, int64_t oh, int64_t ow) {
  VIDAX_CHECK(image.dim() == 3 && image.size(0) == 3 && image.dtype() == DType::F32,
              "ti2v_image: expects [3, H, W] F32 in [-1, 1], got " << image.str());
  const Tensor src = image.to_host().contiguous();
  const int64_t ih = src.size(1), iw = src.size(2), plane = ih * iw;
  // The picture's bytes [H, W, 3], as PIL holds it.
  Tensor pic = Tensor::empty({ih, iw, 3}, DType::U8);
  {
    const float* s = src.data<float>();  // view-write-ok: reads a fresh contiguous copy
    uint8_t* d = pic.data<uint8_t>();  // view-write-ok: fills the tensor made above
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < plane; ++i) {
        const double v = std::nearbyint((static_cast<double>(s[c * plane + i]) * 0.5 + 0.5) * 255.0);
        d[i * 3 + c] = static_cast<uint8_t>(std::min(255.0, std::max(0.0, v)));
      }
  }
  const double scale = std::max(static_cast<double>(ow) / static_cast<double>(iw),
                                static_cast<double>(oh) / static_cast<double>(ih));
  const int64_t rw = static_cast<int64_t>(std::nearbyint(static_cast<double>(iw) * scale));  // Python round: halves to even
  const int64_t rh = static_cast<int64_t>(std::nearbyint(static_cast<double>(ih) * scale));
  VIDAX_CHECK(rw >= ow && rh >= oh, "ti2v_image: the " << iw << "x" << ih << " image resized to " << rw << "x" << rh
                                                       << " does not cover " << ow << "x" << oh);
  const Tensor resized = (rw == iw && rh == ih) ? pic : io::resize_lanczos_pil(pic, rh, rw);  // PIL returns a copy
  const int64_t x1 = (rw - ow) / 2, y1 = (rh - oh) / 2;  // the centre crop, then to_tensor().sub_(0.5).div_(0.5)
  return io::picture_to_tensor(resized.slice(0, y1, y1 + oh).slice(1, x1, x1 + ow));
}

}  // namespace vidax::wan
