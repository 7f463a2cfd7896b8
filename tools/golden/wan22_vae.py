#!/usr/bin/env python3
"""Golden files for the Wan 2.2 VAE (kinds wan2.2.vae.decode / wan2.2.vae.encode, docs/parity.md).

Runs the official WanVAE_ of Wan-Video/Wan2.2 (wan/modules/vae2_2.py, imported from $WAN22_REPO) on
a tiny random configuration with the published structure (four levels, temporal downsampling in
the last two, 48 latent channels, patchify 2, the AvgDown3D / DupUp3D shortcuts) and writes

  tests/golden/wan22_vae_decode.safetensors   the whole state dict, input.z -> output
  tests/golden/wan22_vae_encode.safetensors   the encoder half only, input.video -> output

decode: z / (1/std) + mean, WanVAE_.decode, .float().clamp_(-1, 1) (Wan2_2_VAE.decode);
encode: WanVAE_.encode with the wrapper's scale, .float() (the normalised mean). inter.<module>:
each module's output, concatenated over the chunks along time. 3 latent frames decode to 9 frames
(chunk 0 the first-chunk path, chunk 1 the first time_conv, chunk 2 the cached one); 9 frames
encode in chunks of 1, 4, 4.

Usage: WAN22_REPO=/path/to/Wan2.2 python tools/golden/wan22_vae.py [--out tests/golden]
"""
import argparse
import json
import os

import torch
from safetensors.torch import save_file

import wan_reference
from wan_vae import Recorder, randomize_, stats_line

wan_reference.use_wan22()

CONFIG = dict(dim=4, dec_dim=6, z_dim=48, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
              temperal_downsample=[False, True, True], dropout=0.0)


def wrapper_scale(vae_mod):
    """mean and std exactly as Wan2_2_VAE.__init__ builds them (without loading a checkpoint)."""
    import inspect
    src = inspect.getsource(vae_mod.Wan2_2_VAE.__init__)
    ns = {"torch": torch, "dtype": torch.float32, "device": "cpu"}
    block = src[src.index("mean = torch.tensor("):src.index("self.scale")]
    exec(block.replace("        ", "", 1).replace("\n        ", "\n"), ns)
    return ns["mean"], ns["std"]


def save(path, tensors, kind, config):
    meta = {"kind": kind, "config": json.dumps(config), "generator": "tools/golden/wan22_vae.py",
            "torch": torch.__version__}
    tensors = {k: v.detach().contiguous().to(torch.float32) for k, v in tensors.items()}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(2)
    vae_mod = wan_reference.load("wan.modules.vae2_2")
    torch.manual_seed(0)
    model = vae_mod.WanVAE_(**CONFIG).eval().requires_grad_(False)
    randomize_(model, seed=21)
    mean, std = wrapper_scale(vae_mod)
    assert mean.numel() == 48 and std.numel() == 48
    scale = [mean, 1.0 / std]  # as Wan2_2_VAE.__init__
    sd = model.state_dict()

    z = torch.randn(1, 48, 3, 2, 3, generator=torch.Generator().manual_seed(22))
    dec_points = ["conv2", "decoder.conv1", "decoder.middle.2", "decoder.upsamples.0",
                  "decoder.upsamples.1", "decoder.upsamples.2", "decoder.upsamples.3", "decoder.head.2"]
    rec = Recorder(model, dec_points)
    with torch.no_grad():
        video = model.decode(z, scale).float().clamp_(-1, 1)
    inter = rec.tensors()
    print(stats_line("decode output", video), "|", stats_line("pre-clamp", inter["inter.decoder.head.2"]))
    save(os.path.join(args.out, "wan22_vae_decode.safetensors"),
         {**sd, "input.z": z, "scale.mean": mean, "scale.std": std, "output": video, **inter},
         "wan2.2.vae.decode", CONFIG)

    x = torch.rand(1, 3, 9, 32, 48, generator=torch.Generator().manual_seed(23)) * 2 - 1
    enc_points = ["encoder.conv1", "encoder.downsamples.0", "encoder.downsamples.1", "encoder.downsamples.2",
                  "encoder.downsamples.3", "encoder.middle.2", "encoder.head.2", "conv1"]
    rec = Recorder(model, enc_points)
    with torch.no_grad():
        mu = model.encode(x, scale).float()
    inter = rec.tensors()
    print(stats_line("encode output", mu))
    params = {k: v for k, v in sd.items() if k.startswith(("encoder.", "conv1."))}
    save(os.path.join(args.out, "wan22_vae_encode.safetensors"),
         {**params, "input.video": x, "scale.mean": mean, "scale.std": std, "output": mu, **inter},
         "wan2.2.vae.encode", CONFIG)


if __name__ == "__main__":
    main()
