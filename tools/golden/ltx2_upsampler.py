"""Golden files for the LTX-2 latent upsampler (kind ltx2.upsampler, docs/models/ltx2.md).

Runs the OFFICIAL ltx_core.model.upsampler.LatentUpsampler (Lightricks/LTX-2, imported from
$LTX2_CORE, default /work/ref/ltx2/packages/ltx-core/src), built by LatentUpsamplerConfigurator
.from_metadata, in float32 on the CPU with tiny configs (in_channels 4, mid_channels 32: the
GroupNorm(32) floor) and seeded random weights, on a random latent [B, C, F, H, W]. Each file holds
the module's state dict under its official names (the rational resampler's blur kernel buffer
included), input.latent (the forward's argument), output, the module taps inter.initial_conv,
inter.res_blocks.<i>, inter.upsampler, inter.post_upsample_res_blocks.<i>, inter.final_conv
(each module's output; a per-frame dims-2 tensor [(B F), C, H, W] is stored as [B, C, F, H, W]; the
temporal upsampler's tap is before the first frame is dropped), __metadata__.kind and
__metadata__.config (the checkpoint metadata's `config` dict).

  ltx2_upsampler_x2.safetensors        dims 3, spatial x2 (Conv2d + PixelShuffle per frame), 1 block/stage
  ltx2_upsampler_rational.safetensors  dims 3, rational resampler x1.5 (x3 shuffle, blur, stride 2), B = 2
  ltx2_upsampler_temporal.safetensors  dims 3, temporal x2 only (Conv3d + shuffle, first frame dropped)
  ltx2_upsampler_2d.safetensors        dims 2 (every conv and norm per frame), spatial x2, 1 block/stage
  ltx2_upsampler_st.safetensors        dims 3, spatial and temporal x2 (Conv3d to 8 C + 3-D shuffle, first
                                       frame dropped); its parameters are rounded to fp16 values and stored
                                       as F16 (exact) to keep the file small; the forward runs in fp32
  ltx2_upsampler_rational_x0_75.safetensors  rational x0.75 (x3 shuffle, blur at stride 4), F16 parameters
  ltx2_upsampler_rational_x4.safetensors     rational x4 (x4 shuffle, stride 1: no blur), F16 parameters

Usage: /work/venv-golden/bin/python tools/golden/ltx2_upsampler.py [--out tests/golden/ltx2]
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.environ.get("LTX2_CORE", "/work/ref/ltx2/packages/ltx-core/src"))
from ltx_core.model.upsampler import LatentUpsamplerConfigurator  # noqa: E402

BASE = {"in_channels": 4, "mid_channels": 32, "num_blocks_per_stage": 1, "dims": 3}


def to_5d(t, b, f):
    if t.dim() == 5:
        return t
    n, c, h, w = t.shape
    return t.reshape(b, f, c, h, w).permute(0, 2, 1, 3, 4)


def make(path, config, shape, seed, f16_params=False):
    torch.manual_seed(seed)
    model = LatentUpsamplerConfigurator.from_metadata({"config": config}).eval()
    with torch.no_grad():  # GroupNorm affine off its (1, 0) init so that a wrong one would show
        for name, p in model.named_parameters():
            if ".norm" in name or "initial_norm" in name:
                p.add_(0.3 * torch.randn_like(p))
            if f16_params:  # fp16-representable values, stored as F16 (exact), the forward in fp32
                p.copy_(p.half().float())
    b, f = shape[0], shape[2]
    taps = {}

    def hook(name):
        def fn(_module, _inputs, out):
            taps["inter." + name] = to_5d(out, b, f).detach().contiguous().clone()
        return fn

    names = ["initial_conv", "upsampler", "final_conv"]
    names += [f"res_blocks.{i}" for i in range(len(model.res_blocks))]
    names += [f"post_upsample_res_blocks.{i}" for i in range(len(model.post_upsample_res_blocks))]
    for n in names:
        model.get_submodule(n).register_forward_hook(hook(n))
    x = torch.randn(*shape)
    with torch.no_grad():
        y = model(x)
    store = torch.float16 if f16_params else torch.float32
    tensors = {k: v.detach().contiguous().to(store) for k, v in model.state_dict().items()}
    tensors["input.latent"] = x.contiguous()
    tensors["output"] = y.contiguous()
    tensors.update(taps)
    meta = {"kind": "ltx2.upsampler", "config": json.dumps(config), "generator": "tools/golden/ltx2_upsampler.py",
            "torch": torch.__version__}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors), {tuple(x.shape)} -> "
          f"{tuple(y.shape)} range [{y.min():.3f}, {y.max():.3f}]")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/ltx2")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    make(os.path.join(args.out, "ltx2_upsampler_x2.safetensors"), BASE, (1, 4, 2, 4, 3), 0)
    make(os.path.join(args.out, "ltx2_upsampler_rational.safetensors"),
         {**BASE, "num_blocks_per_stage": 0, "rational_resampler": True, "spatial_scale": 1.5}, (2, 4, 2, 4, 6), 1)
    make(os.path.join(args.out, "ltx2_upsampler_temporal.safetensors"),
         {**BASE, "num_blocks_per_stage": 0, "spatial_upsample": False, "temporal_upsample": True}, (1, 4, 3, 3, 4), 2)
    make(os.path.join(args.out, "ltx2_upsampler_2d.safetensors"), {**BASE, "dims": 2}, (2, 4, 2, 3, 4), 3)
    make(os.path.join(args.out, "ltx2_upsampler_st.safetensors"),
         {**BASE, "num_blocks_per_stage": 0, "temporal_upsample": True}, (1, 4, 2, 3, 2), 4, f16_params=True)
    rational = {**BASE, "num_blocks_per_stage": 0, "rational_resampler": True}
    make(os.path.join(args.out, "ltx2_upsampler_rational_x0_75.safetensors"), {**rational, "spatial_scale": 0.75},
         (1, 4, 1, 8, 5), 5, f16_params=True)
    make(os.path.join(args.out, "ltx2_upsampler_rational_x4.safetensors"), {**rational, "spatial_scale": 4.0},
         (1, 4, 2, 2, 3), 6, f16_params=True)


if __name__ == "__main__":
    main()
