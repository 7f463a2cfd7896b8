#!/usr/bin/env python3
"""Golden files for the HunyuanVideo 1.0 VAE (kinds hunyuan.vae.decode / hunyuan.vae.encode,
docs/parity.md), and the published VAE's key list.

Runs the official AutoencoderKLCausal3D ("884-16c-hy", hyvideo/vae/autoencoder_kl_causal_3d.py of
Tencent/HunyuanVideo, imported from $HUNYUAN_REPO) in float32 on the CPU, on a tiny random
configuration with the published structure: four levels (spatial halvings in the first three,
temporal halvings in levels 1 and 2: 8x spatial, 4x temporal), 16 latent channels, the mid-block
attention with its frame-causal mask. Writes

  tests/golden/hunyuan_vae_decode.safetensors   decoder.* + post_quant_conv.*, input.z -> output
  tests/golden/hunyuan_vae_encode.safetensors   encoder.* + quant_conv.*, input.x -> output, output.mean, output.logvar
  tests/golden/hunyuan_vae_tiled_decode.safetensors     TILED config, spatial + temporal tiling
  tests/golden/hunyuan_vae_tiled_encode.safetensors     TILED config, spatial + temporal tiling
  tests/hunyuan/data/vae_keys.json                      the published VAE's state_dict names and shapes

The official forward, raw (the kinds are named after its arguments; the pipeline's latent scaling
and [0, 1] mapping are not applied):
decode: output = vae.decode(z).sample for input.z (an unscaled latent); inter.<module> the outputs
of the decoder's modules (inter.decoder = output).
encode: input.x in [-1, 1]; posterior = vae.encode(x).latent_dist: output = posterior.mode(),
output.mean / output.logvar its DiagonalGaussianDistribution parameters (logvar clamped to
[-30, 20] as the reference does); inter.quant_conv holds the moments [mean; logvar].

3 latent frames decode to 9 video frames (the upsamplers' first frame is upsampled in space only);
9 frames encode to 3 latent frames. Weights are random (seeded), norms' affine parameters and biases
non-zero so every parameter matters.

Tiled files: a narrower VAE (TILED: 4 latent channels, widths [4, 4, 8, 8]) with sample_size 32
(latent tiles of 4 stepping by 3, 8 pixels blended, crops of 24) and sample_tsize 16 (latent tiles
of 4 + 1 frames stepping by 3, 4 frames blended, crops of 12), run with enable_tiling() (spatial
and temporal, __metadata__.tiling "spatial,temporal"): decode a [1, 4, 6, 4, 5] latent (two
temporal tiles, each 2 x 2 spatial tiles) to 21 frames of 32 x 40; encode 21 frames of 32 x 40
(two temporal tiles of 17 and 9 frames, each 2 x 2 spatial tiles). No inter.* (the tiles run alone).

Usage: HUNYUAN_REPO=/path/to/HunyuanVideo python tools/golden/hunyuan_vae.py
"""
import argparse
import json
import os

import torch
from safetensors.torch import save_file

from hunyuan_reference import load

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

CONFIG = dict(in_channels=3, out_channels=3, latent_channels=16,
              down_block_types=["DownEncoderBlockCausal3D"] * 4, up_block_types=["UpDecoderBlockCausal3D"] * 4,
              block_out_channels=[8, 8, 16, 16], layers_per_block=1, norm_num_groups=4, act_fn="silu",
              sample_size=32, sample_tsize=8, scaling_factor=0.476986, force_upcast=True,
              spatial_compression_ratio=8, time_compression_ratio=4, mid_block_add_attention=True)

TILED = dict(CONFIG, latent_channels=4, block_out_channels=[4, 4, 8, 8], norm_num_groups=2, sample_size=32,
             sample_tsize=16)

# The published hunyuan-video-t2v-720p/vae/config.json (the fields the model reads).
PUBLISHED = dict(CONFIG, block_out_channels=[128, 256, 512, 512], layers_per_block=2, norm_num_groups=32,
                 sample_size=256, sample_tsize=64)


def randomize_(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif p.dim() == 1:  # group norm weights
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:  # conv / linear weights [out, in, *k]
                p.copy_(torch.randn(p.shape, generator=g) / p[0].numel() ** 0.5)


class Recorder:
    """Forward hooks that keep each named module's output."""

    def __init__(self, model, names):
        self.outputs = {}
        modules = dict(model.named_modules())
        self.handles = [modules[n].register_forward_hook(self._hook(n)) for n in names]

    def _hook(self, name):
        def hook(_module, _inputs, output):
            self.outputs[name] = output.detach().clone()
        return hook

    def tensors(self):
        for h in self.handles:
            h.remove()
        return {"inter." + k: v for k, v in self.outputs.items()}


def save(path, tensors, kind, config, **extra):
    meta = {**extra, "kind": kind, "config": json.dumps(config), "generator": "tools/golden/hunyuan_vae.py",
            "torch": torch.__version__}
    tensors = {k: v.detach().to(torch.float32).contiguous().clone() for k, v in tensors.items()}  # no shared storage
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors)")


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(ROOT, "tests", "golden"))
    ap.add_argument("--keys", default=os.path.join(ROOT, "tests", "hunyuan", "data", "vae_keys.json"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(2)
    mod = load("hyvideo.vae.autoencoder_kl_causal_3d")

    with torch.device("meta"):
        published = mod.AutoencoderKLCausal3D(**PUBLISHED)
    keys = {k: list(v.shape) for k, v in published.state_dict().items()}
    with open(args.keys, "w") as f:
        json.dump(keys, f, indent=0, sort_keys=True)
    print(f"wrote {args.keys} ({len(keys)} keys)")

    torch.manual_seed(0)
    vae = mod.AutoencoderKLCausal3D(**CONFIG).eval().requires_grad_(False)
    randomize_(vae, seed=31)
    sd = vae.state_dict()

    z = torch.randn(1, 16, 3, 3, 4, generator=torch.Generator().manual_seed(32))
    dec_points = ["post_quant_conv", "decoder.conv_in", "decoder.mid_block", "decoder.up_blocks.0",
                  "decoder.up_blocks.1", "decoder"]
    rec = Recorder(vae, dec_points)
    with torch.no_grad():
        video = vae.decode(z).sample
    inter = rec.tensors()
    print(f"decode: {list(video.shape)} std {video.std().item():.4f}")
    params = {k: v for k, v in sd.items() if k.startswith(("decoder.", "post_quant_conv."))}
    save(os.path.join(args.out, "hunyuan_vae_decode.safetensors"),
         {**params, "input.z": z, "output": video, **inter}, "hunyuan.vae.decode", CONFIG)

    x = torch.rand(1, 3, 9, 24, 32, generator=torch.Generator().manual_seed(33)) * 2 - 1
    enc_points = ["encoder.down_blocks.0", "encoder.down_blocks.1", "encoder.down_blocks.2",
                  "encoder.down_blocks.3", "encoder.mid_block", "encoder", "quant_conv"]
    rec = Recorder(vae, enc_points)
    with torch.no_grad():
        post = vae.encode(x).latent_dist
    inter = rec.tensors()
    print(f"encode: {list(post.mode().shape)} std {post.mode().std().item():.4f}")
    params = {k: v for k, v in sd.items() if k.startswith(("encoder.", "quant_conv."))}
    save(os.path.join(args.out, "hunyuan_vae_encode.safetensors"),
         {**params, "input.x": x, "output": post.mode(), "output.mean": post.mean, "output.logvar": post.logvar,
          **inter}, "hunyuan.vae.encode", CONFIG)

    tiled(mod, args.out)


def tiled(mod, out):
    torch.manual_seed(0)
    vae = mod.AutoencoderKLCausal3D(**TILED).eval().requires_grad_(False)
    randomize_(vae, seed=41)
    vae.enable_tiling()
    sd = vae.state_dict()
    z = torch.randn(1, 4, 6, 4, 5, generator=torch.Generator().manual_seed(42))
    with torch.no_grad():
        video = vae.decode(z).sample
        vae.disable_tiling()
        untiled = vae.decode(z).sample
        vae.enable_tiling()
    assert video.shape == untiled.shape == (1, 3, 21, 32, 40), video.shape
    print(f"tiled decode: {list(video.shape)}, max |tiled - untiled| {(video - untiled).abs().max().item():.4f}")
    params = {k: v for k, v in sd.items() if k.startswith(("decoder.", "post_quant_conv."))}
    save(os.path.join(out, "hunyuan_vae_tiled_decode.safetensors"), {**params, "input.z": z, "output": video},
         "hunyuan.vae.decode", TILED, tiling="spatial,temporal")

    x = torch.rand(1, 3, 21, 32, 40, generator=torch.Generator().manual_seed(43)) * 2 - 1
    with torch.no_grad():
        post = vae.encode(x).latent_dist
        latent = post.mode()
        vae.disable_tiling()
        untiled = vae.encode(x).latent_dist.mode()
    assert latent.shape == untiled.shape == (1, 4, 6, 4, 5), latent.shape
    print(f"tiled encode: {list(latent.shape)}, max |tiled - untiled| {(latent - untiled).abs().max().item():.4f}")
    params = {k: v for k, v in sd.items() if k.startswith(("encoder.", "quant_conv."))}
    save(os.path.join(out, "hunyuan_vae_tiled_encode.safetensors"), {**params, "input.x": x, "output": latent, "output.mean": post.mean, "output.logvar": post.logvar},
         "hunyuan.vae.encode", TILED, tiling="spatial,temporal")


if __name__ == "__main__":
    main()
