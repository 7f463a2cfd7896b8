"""Golden file for the control-video resize of VACE: the OFFICIAL
VaceVideoProcessor.resize_crop (wan/utils/vace_processor.py of Wan-Video/Wan2.1) on 8-bit frames,
i.e. torch.nn.functional.interpolate(uint8, size, mode='bicubic', antialias=True) (torch's
fixed-point uint8 path) followed by the centre crop and the [-1, 1] scaling; plus the bare
interpolate on planar uint8 pictures at shapes that exercise both passes, one pass alone,
upscaling, downscaling and extreme ratios.

Writes tests/golden/wan/vace_resize.safetensors:
  case.<i>.input  [T, H, W, 3] U8 (as decord returns frames); case.<i>.size [2] I64 (oh, ow);
  case.<i>.output [3, T, oh, ow] F32 (resize_crop's result)
  interp.<j>.input [C, H, W] U8; interp.<j>.output [C, h, w] U8 (F.interpolate, channels-first);
  the script asserts that the channels-last tensor (torch's AVX path for C <= 4) gives the same bytes

Usage: WAN21_REPO=/work/ref/wan21 python tools/golden/wan_vace_resize.py
"""
import os

import torch
import torch.nn.functional as F
from safetensors.torch import save_file

from wan_reference import load

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.environ.get("OUT", os.path.join(ROOT, "tests", "golden", "wan", "vace_resize.safetensors"))

proc = load("wan.utils.vace_processor")

# (T, H, W, oh, ow): what resize_crop is asked in VACE (the control video's size vs the planned size).
CASES = [(2, 36, 60, 32, 48), (1, 50, 40, 32, 32), (2, 20, 30, 32, 48), (1, 31, 47, 16, 48), (1, 96, 20, 64, 16)]
# (C, H, W, h, w) for the bare interpolate.
INTERP = [(3, 17, 23, 9, 11), (3, 12, 12, 12, 29), (1, 40, 9, 7, 9), (3, 5, 7, 19, 30), (2, 64, 64, 3, 5),
          (3, 13, 200, 13, 7), (4, 9, 9, 33, 2)]


def main():
    gen = torch.Generator().manual_seed(77)
    out = {}
    for i, (t, h, w, oh, ow) in enumerate(CASES):
        v = torch.randint(0, 256, (t, h, w, 3), generator=gen, dtype=torch.uint8)
        if i == 0:  # smooth content too: a gradient exercises the rounding, not only the clipping
            yy, xx = torch.meshgrid(torch.arange(h), torch.arange(w), indexing="ij")
            v[0, ..., 0] = (yy * 255 // (h - 1)).to(torch.uint8)
            v[0, ..., 1] = (xx * 255 // (w - 1)).to(torch.uint8)
        r = proc.VaceVideoProcessor.resize_crop(v.clone(), oh, ow)
        out[f"case.{i}.input"] = v
        out[f"case.{i}.size"] = torch.tensor([oh, ow], dtype=torch.int64)
        out[f"case.{i}.output"] = r.contiguous()
    for j, (c, h, w, oh, ow) in enumerate(INTERP):
        x = torch.randint(0, 256, (c, h, w), generator=gen, dtype=torch.uint8)
        y = F.interpolate(x[None], size=(oh, ow), mode="bicubic", antialias=True)[0]
        out[f"interp.{j}.input"] = x
        out[f"interp.{j}.output"] = y.contiguous()
        if c <= 4:
            xcl = x[None].contiguous(memory_format=torch.channels_last)
            ycl = F.interpolate(xcl, size=(oh, ow), mode="bicubic", antialias=True)[0]
            assert torch.equal(ycl, y), f"interp {j}: channels-last and channels-first differ"
    save_file(out, OUT, metadata={"torch": torch.__version__,
                                  "cpu_capability": torch.backends.cpu.get_cpu_capability()})
    print("wrote", OUT, os.path.getsize(OUT), "bytes")


if __name__ == "__main__":
    main()
