#!/usr/bin/env python3
"""Golden files for the Wan 2.1 VAE (kinds wan.vae.decode / wan.vae.encode, DESIGN.md §4).

Runs the official WanVAE_ (Wan-Video/Wan2.1 wan/modules/vae.py, imported from $WAN21_REPO) and
diffusers' AutoencoderKLWan on tiny random configurations and writes

  tests/golden/wan_vae_decode.safetensors            official names, decoder.* + conv2.*
  tests/golden/wan_vae_encode.safetensors            official names, encoder.* + conv1.*
  tests/golden/wan_vae_diffusers_decode.safetensors  diffusers names, decoder.* + post_quant_conv.*
  tests/golden/wan_vae_diffusers_encode.safetensors  diffusers names, encoder.* + quant_conv.*

Every file holds: the parameters of the half it exercises, input.z (normalized latent) or
input.video, scale.mean / scale.std, output (decode: video clamped to [-1, 1] as the wrapper does;
encode: normalized mean (mu - mean) * (1 / std)) and, for the official files, inter.<module path>
(each module's output, concatenated over the chunks along time).

Frame counts make the chunked causal cache work across several chunks: 3 latent frames decode to
9 frames (chunk 0 = the 'Rep' path, chunk 1 the first time_conv, chunk 2 the cached one); 9 video
frames encode in chunks of 1, 4, 4.

Usage: WAN21_REPO=/path/to/Wan2.1 python tools/golden/wan_vae.py [--out tests/golden]
"""
import argparse
import json
import os

import torch
from safetensors.torch import save_file
from wan_reference import load


# The official WanVAE wrapper's latent statistics (wan/modules/vae.py, class WanVAE).
LATENT_MEAN = [-0.7571, -0.7089, -0.9113, 0.1075, -0.1745, 0.9653, -0.1517, 1.5508,
               0.4134, -0.0715, 0.5517, -0.3632, -0.1922, -0.9497, 0.2503, -0.2921]
LATENT_STD = [2.8184, 1.4541, 2.3275, 2.6558, 1.2196, 1.7708, 2.6052, 2.0743,
              3.2687, 2.1526, 2.8652, 1.5579, 1.6382, 1.1253, 2.8251, 1.9160]


def randomize_(model, seed):
    """Random parameters that keep activations O(1): the reference's init leaves RMS gammas at 1
    and the attention projection at 0, which would hide errors in those paths."""
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("gamma"):
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            else:  # conv weights [out, in, *k]
                fan_in = p[0].numel()
                p.copy_(torch.randn(p.shape, generator=g) / fan_in ** 0.5)


def scale_tensors(z_dim):
    assert z_dim == 16, "the published mean/std have 16 entries"
    return (torch.tensor(LATENT_MEAN, dtype=torch.float32),
            torch.tensor(LATENT_STD, dtype=torch.float32))


class Recorder:
    """Forward hooks that collect each named module's output per chunk (concatenated on time)."""

    def __init__(self, model, names):
        self.outputs = {n: [] for n in names}
        modules = dict(model.named_modules())
        self.handles = [modules[n].register_forward_hook(self._hook(n)) for n in names]

    def _hook(self, name):
        def hook(_module, _inputs, output):
            self.outputs[name].append(output.detach().clone())
        return hook

    def tensors(self):
        for h in self.handles:
            h.remove()
        return {f"inter.{n}": torch.cat(v, 2).contiguous() for n, v in self.outputs.items() if v}


def stats_line(name, t):
    clamped = ((t <= -1) | (t >= 1)).float().mean().item()
    return f"{name}: shape={list(t.shape)} std={t.std().item():.4f} clamped_fraction={clamped:.4f}"


def save(path, tensors, kind, config):
    meta = {"kind": kind, "config": json.dumps(config), "generator": "tools/golden/wan_vae.py",
            "torch": torch.__version__}
    tensors = {k: v.detach().contiguous().to(torch.float32) for k, v in tensors.items()}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors)")


def official_files(out_dir):
    vae_mod = load("wan.modules.vae")
    config = dict(dim=4, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                  temperal_downsample=[False, True, True], dropout=0.0)
    torch.manual_seed(0)
    model = vae_mod.WanVAE_(**config).eval().requires_grad_(False)
    randomize_(model, seed=1)
    mean, std = scale_tensors(config["z_dim"])
    scale = [mean, 1.0 / std]  # exactly as WanVAE.__init__
    sd = model.state_dict()

    # decode: 3 latent frames of 4x6 -> 9 frames of 32x48
    z = torch.randn(1, 16, 3, 4, 6, generator=torch.Generator().manual_seed(2))
    dec_points = ["conv2", "decoder.conv1", "decoder.middle.1", "decoder.middle.2",
                  "decoder.upsamples.3", "decoder.upsamples.7", "decoder.upsamples.11", "decoder.head.2"]
    rec = Recorder(model, dec_points)
    with torch.no_grad():
        video = model.decode(z, scale).float().clamp_(-1, 1)  # WanVAE.decode
    inter = rec.tensors()
    print(stats_line("decode output", video), "|", stats_line("pre-clamp", inter["inter.decoder.head.2"]))
    params = {k: v for k, v in sd.items() if k.startswith(("decoder.", "conv2."))}
    save(os.path.join(out_dir, "wan_vae_decode.safetensors"),
         {**params, "input.z": z, "scale.mean": mean, "scale.std": std, "output": video, **inter},
         "wan.vae.decode", config)

    # encode: 9 frames of 32x48 -> 3 latent frames of 4x6
    x = torch.rand(1, 3, 9, 32, 48, generator=torch.Generator().manual_seed(3)) * 2 - 1
    enc_points = ["encoder.conv1", "encoder.downsamples.2", "encoder.downsamples.5",
                  "encoder.downsamples.8", "encoder.middle.1", "encoder.middle.2", "encoder.head.2", "conv1"]
    rec = Recorder(model, enc_points)
    with torch.no_grad():
        mu = model.encode(x, scale).float()  # WanVAE.encode
    inter = rec.tensors()
    print(stats_line("encode output", mu))
    params = {k: v for k, v in sd.items() if k.startswith(("encoder.", "conv1."))}
    save(os.path.join(out_dir, "wan_vae_encode.safetensors"),
         {**params, "input.video": x, "scale.mean": mean, "scale.std": std, "output": mu, **inter},
         "wan.vae.encode", config)


def diffusers_files(out_dir):
    from diffusers import AutoencoderKLWan
    # A different temporal pattern from the official files (temporal downsampling in the first two
    # levels, so the decoder's up3d blocks are the last two), batch 2 and odd latent sizes.
    torch.manual_seed(0)
    model = AutoencoderKLWan(base_dim=4, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2,
                             attn_scales=[], temperal_downsample=[True, True, False],
                             dropout=0.0).eval().requires_grad_(False)
    randomize_(model, seed=11)
    config = {k: v for k, v in dict(model.config).items() if not k.startswith("_")}
    config["_class_name"] = "AutoencoderKLWan"
    mean = torch.tensor(model.config.latents_mean, dtype=torch.float32)
    std = torch.tensor(model.config.latents_std, dtype=torch.float32)
    sd = model.state_dict()
    view = (1, model.config.z_dim, 1, 1, 1)

    # decode exactly as WanPipeline.__call__ does after denoising
    z = torch.randn(2, 16, 3, 3, 5, generator=torch.Generator().manual_seed(12))
    with torch.no_grad():
        latents = z / (1.0 / std.view(view)) + mean.view(view)
        video = model.decode(latents, return_dict=False)[0]  # clamps to [-1, 1]
    print(stats_line("diffusers decode output", video))
    params = {k: v for k, v in sd.items() if k.startswith(("decoder.", "post_quant_conv."))}
    save(os.path.join(out_dir, "wan_vae_diffusers_decode.safetensors"),
         {**params, "input.z": z, "scale.mean": mean, "scale.std": std, "output": video},
         "wan.vae.decode", config)

    # encode exactly as WanImageToVideoPipeline.prepare_latents (sample_mode="argmax")
    x = torch.rand(2, 3, 5, 24, 40, generator=torch.Generator().manual_seed(13)) * 2 - 1
    with torch.no_grad():
        mu = model.encode(x).latent_dist.mode()
        mu = (mu - mean.view(view)) * (1.0 / std.view(view))
    print(stats_line("diffusers encode output", mu))
    params = {k: v for k, v in sd.items() if k.startswith(("encoder.", "quant_conv."))}
    save(os.path.join(out_dir, "wan_vae_diffusers_encode.safetensors"),
         {**params, "input.video": x, "scale.mean": mean, "scale.std": std, "output": mu},
         "wan.vae.encode", config)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", default=os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden"))
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    torch.set_num_threads(2)
    official_files(args.out)
    diffusers_files(args.out)


if __name__ == "__main__":
    main()
