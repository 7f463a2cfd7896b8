"""Golden file for kind `wan.vace.conditioning`: the VACE context that the OFFICIAL WanVace.generate
(wan/vace.py) builds before its loop, on a tiny random Wan 2.1 VAE, fp32 on the CPU:
  prepare_source's reference image rule (the module function wan/utils/vace_processor.prepare_source,
  the same canvas code as WanVace.prepare_source, which itself only accepts the 480x832 / 720x1280
  areas): a reference of another size, bilinear-resized and pasted on a white canvas;
  WanVace.vace_encode_frames (the mask binarized, inactive / reactive VAE latents, the reference's
  latent with zero channels before the frames), WanVace.vace_encode_masks (8x8 blocks on channels,
  nearest-exact in time, zero frames for the reference), WanVace.vace_latent.
They are methods that read only self.vae and self.vae_stride: called here on an object holding those.

Writes tests/golden/wan_vace_conditioning.safetensors:
  config: {"vae": WanVAE_ init args (the wan2.1-tiny-demo VAE), "vae_stride": [4, 8, 8]}
  parameters: the VAE encoder's (encoder.*, conv1.*) under the official names
  input.frames [3, 5, 32, 48] in [-1, 1]; input.mask [1, 5, 32, 48] in [0, 1] (not binary: the
  reference binarizes it for the frames only); input.reference_image.0 [3, 20, 44] in [-1, 1]
  inter.reference.0 [3, 1, 32, 48] (the canvas); output.z0 [32, 3, 4, 6]; output.m0 [64, 3, 4, 6];
  output [96, 3, 4, 6] (vace_latent: the DiT's vace_context).

Usage: WAN21_REPO=/work/ref/wan21 python tools/golden/wan_vace_conditioning.py
"""
import json
import os
import types

import torch
from safetensors.torch import save_file

import wan_pipeline as t2v  # the shared tiny parts (importing loads the reference)
from wan_reference import load
from wan_tiny_parts import wan21_vae

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
OUT = os.environ.get("OUT", os.path.join(ROOT, "tests", "golden", "wan_vace_conditioning.safetensors"))

vace_mod = load("wan.vace")
proc_mod = load("wan.utils.vace_processor")


def main():
    torch.set_num_threads(2)
    gen = torch.Generator().manual_seed(2024)
    vae = t2v.vae_mod.WanVAE_(**t2v.VAE).eval().requires_grad_(False)
    t2v.randomize(vae, gen)
    wan_vae = wan21_vae(t2v.vae_mod, vae)

    frames = torch.rand(3, 5, 32, 48, generator=gen) * 2 - 1
    mask = torch.rand(1, 5, 32, 48, generator=gen)
    ref = torch.rand(3, 20, 44, generator=gen) * 2 - 1
    # prepare_source(src_video, src_mask, src_ref_images, num_frames, image_size, device): the
    # reference [3, 1, h, w] onto the video's canvas.
    _, _, refs = proc_mod.prepare_source([frames], [mask], [[ref.unsqueeze(1)]], 5, (32, 48), "cpu")
    canvas = refs[0][0]

    me = types.SimpleNamespace(vae=wan_vae, vae_stride=(4, 8, 8))
    with torch.no_grad():
        z0 = vace_mod.WanVace.vace_encode_frames(me, [frames], [[canvas]], masks=[mask])
        m0 = vace_mod.WanVace.vace_encode_masks(me, [mask], [[canvas]])
        z = vace_mod.WanVace.vace_latent(me, z0, m0)

    tensors = {k: v.contiguous() for k, v in vae.state_dict().items()
               if k.startswith("encoder.") or k.startswith("conv1.")}
    tensors.update({"input.frames": frames, "input.mask": mask, "input.reference_image.0": ref,
                    "inter.reference.0": canvas.contiguous(), "output.z0": z0[0].contiguous(),
                    "output.m0": m0[0].contiguous(), "output": z[0].contiguous()})
    config = {"vae": t2v.VAE, "vae_stride": [4, 8, 8]}
    save_file(tensors, OUT, {"kind": "wan.vace.conditioning", "config": json.dumps(config)})
    print(f"wrote {OUT}: {len(tensors)} tensors, {os.path.getsize(OUT) / 1e6:.2f} MB; z {tuple(z[0].shape)}")


if __name__ == "__main__":
    main()
