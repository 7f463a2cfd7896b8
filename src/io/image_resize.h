// Image resampling as torch does it on the CPU, for the preprocessing that the
// image-to-video references run before their models (Wan: the CLIP input and
// the conditioning frame). Host F32 only: these run once per request on a few
// images, never inside a denoising step.
#pragma once
#include <cstdint>

#include "core/tensor.h"

namespace vidax::io {

// torch.nn.functional.interpolate(x, size=(out_h, out_w), mode='bicubic', align_corners=False)
// (no antialias, A = -0.75, edge indices clamped; float arithmetic as torch's float kernel).
// x [..., H, W] F32 (any leading dims) -> [..., out_h, out_w] F32.
Tensor resize_bicubic(const Tensor& x, int64_t out_h, int64_t out_w);

// torch.nn.functional.interpolate(x, size=(out_h, out_w), mode='bilinear', align_corners=False)
// (no antialias; float arithmetic as torch's CPU kernel: out = (x00 w0 + x01 w1) h0 + (x10 w0 + x11 w1) h1,
// source index scale * (i + 0.5) - 0.5 clamped at 0). x [..., H, W] F32 -> [..., out_h, out_w] F32.
Tensor resize_bilinear(const Tensor& x, int64_t out_h, int64_t out_w);

// torchvision.transforms.functional.center_crop on a tensor: the [..., h, w] window centred as
// torchvision centres it (top = round((H - h) / 2) with Python's round, halves to even; left
// likewise); a crop larger than the image pads it with zeros first, as torchvision does
// ((h - H) // 2 rows above, the rest below; columns likewise).
Tensor center_crop(const Tensor& x, int64_t h, int64_t w);

}  // namespace vidax::io

namespace vidax::io {

// PIL's Image.resize(size, Image.LANCZOS) of an 8-bit RGB picture (Pillow's ImagingResample: a
// lanczos-3 kernel widened by the scale when reducing (antialiased), coefficients in double,
// normalised per output pixel and rounded to 22-bit fixed point, the horizontal pass first with
// its result rounded and clipped to 8 bits, then the vertical pass). A pass whose size does not
// change is skipped, as PIL skips it. x [H, W, 3] U8 -> [out_h, out_w, 3] U8.
Tensor resize_lanczos_pil(const Tensor& x, int64_t out_h, int64_t out_w);

// torch.nn.functional.interpolate(x, size=(out_h, out_w), mode='bicubic', antialias=True) of a uint8
// tensor on the CPU (torch's fixed-point path, the one VACE's control-video resize takes): the
// antialiasing bicubic filter (A = -0.5, widened by the scale when reducing) in double, normalised
// per output pixel, rounded to int16 weights with the most fractional bits (< 22) that keep twice
// the largest weight under 2^15, the horizontal pass first with its result rounded and clipped to
// 8 bits, then the vertical; a pass whose size does not change is skipped.
// x [..., H, W] U8 (each plane alone) -> [..., out_h, out_w] U8.
Tensor resize_bicubic_antialias_u8(const Tensor& x, int64_t out_h, int64_t out_w);

}  // namespace vidax::io
