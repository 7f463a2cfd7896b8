#!/usr/bin/env python3
"""Golden files for the HunyuanVideo 1.5 VAE (kinds hunyuan1.5.vae.decode / hunyuan1.5.vae.encode,
docs/parity.md).

Runs the official AutoencoderKLConv3D (hyvideo/models/autoencoders/hunyuanvideo_15_vae.py of
Tencent-Hunyuan/HunyuanVideo-1.5 60783e7, imported from $HUNYUAN15_REPO) in float32 on the CPU, on
tiny random configurations with the published structure: five levels, spatial halvings in the
first four (16x), temporal halvings in levels 2 and 3 (4x), the downsamplers' space/time ->
channel shuffles with their averaged shortcuts, the upsamplers' channel -> space/time shuffles with
their duplicated shortcuts, the encoder's averaged output shortcut and the decoder's repeated input
shortcut, the RMS norms, the mid-block attention with its frame-causal mask. Writes, under
tests/golden/hunyuan15/:

  hy15_vae_decode.safetensors        decoder.*, input.z [1, 4, 3, 2, 2] -> output [1, 3, 9, 32, 32]
  hy15_vae_encode.safetensors        encoder.*, input.x [1, 3, 9, 32, 32] -> output, output.mean, output.logvar
  hy15_vae_nomatch_decode.safetensors   MATCH_OFF: downsample/upsample_match_channel false (the
  hy15_vae_nomatch_encode.safetensors   resnets' 1x1 nin_shortcut convs appear), 1 frame <-> 1 frame
  hy15_vae_tiled_decode.safetensors  TILED, spatial tiling as the pipeline sets it
  hy15_vae_tiled_encode.safetensors  (set_tile_sample_min_size(32, 0.5); __metadata__.tiling etc.)
  hy15_vae_diffusers_decode.safetensors   diffusers' AutoencoderKLHunyuanVideo15 (its state_dict
  hy15_vae_diffusers_encode.safetensors   names and config) with the decode / encode files' weights
                                          renamed; its outputs equal the official ones (checked here)
and the published structure's key lists (names and shapes, meta tensors):
tests/hunyuan/data/hy15_vae_keys.json (official) and hy15_vae_diffusers_keys.json (diffusers).

The official forward, raw (the pipeline's latent scaling and [0, 1] mapping are not applied):
decode: output = vae.decode(z).sample; inter.<module> the outputs of the decoder's modules.
encode: input.x in [-1, 1]; posterior = vae.encode(x).latent_dist: output = posterior.mode(),
output.mean / output.logvar its DiagonalGaussianDistribution parameters (logvar clamped to
[-30, 20]); inter.encoder holds the moments [mean; logvar].

Tiled files: the reference's spatial_tiled_decode / spatial_tiled_encode (temporal tiling raises
in the reference: "not supported for this VAE"), after set_tile_sample_min_size(32, 0.5) (the
pipeline calls it with (256, 0.125) or (128, 0.25); 32 / 0.5 is the smallest tile whose latent
overlap is whole, as the reference asserts). decode: latent tiles of 32 / 16 = 2 stepping by
int(2 * 0.5) = 1, blended over int(32 * 0.5) = 16 pixels, cropped to 16; a [1, 4, 2, 3, 4] latent
(3 x 4 tiles) -> [1, 3, 5, 48, 64]. encode: pixel tiles of 32 stepping by 16, blended over 1
latent pixel, cropped to 1; 5 frames of 48 x 64 (3 x 4 tiles). The untiled result differs (the
script prints by how much).

Weights are random (seeded, conv weights at half the unit-gain scale); norms' gammas and biases
non-zero so every parameter matters.

Usage: HUNYUAN15_REPO=/work/ref/hunyuan15 python tools/golden/hunyuan15_vae.py [OUT_DIR]
"""
import json
import logging
import os
import re
import sys
import types

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hunyuan_reference
hunyuan_reference.HUNYUAN_REPO = os.environ.get("HUNYUAN15_REPO", "/work/ref/hunyuan15")

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
REFERENCE = "Tencent-Hunyuan/HunyuanVideo-1.5 60783e7 hyvideo/models/autoencoders/hunyuanvideo_15_vae.py"
DIFFUSERS_REFERENCE = "diffusers models/autoencoders/autoencoder_kl_hunyuanvideo15.py"

# AutoencoderKLConv3D's init args (the published vae/config.json's fields), tiny widths.
CONFIG = dict(in_channels=3, out_channels=3, latent_channels=4, block_out_channels=[4, 4, 8, 8, 8],
              layers_per_block=1, ffactor_spatial=16, ffactor_temporal=4, sample_size=64, sample_tsize=16,
              scaling_factor=1.03682, shift_factor=None, downsample_match_channel=True,
              upsample_match_channel=True)
MATCH_OFF = dict(CONFIG, block_out_channels=[4, 8, 8, 8, 8], layers_per_block=2,
                 downsample_match_channel=False, upsample_match_channel=False)
TILED = CONFIG
# The published VAE's structure (diffusers' AutoencoderKLHunyuanVideo15 defaults, the 1.5 checkpoint's
# vae/config.json values for these fields), for the key lists only.
PUBLISHED = dict(CONFIG, latent_channels=32, block_out_channels=[128, 256, 512, 1024, 1024], layers_per_block=2)
TILE_SIZE, TILE_OVERLAP = 32, 0.5


def import_vae():
    if "loguru" not in sys.modules:  # imported, unused by the VAE
        stub = types.ModuleType("loguru")
        stub.logger = logging.getLogger("hunyuanvideo-1.5")
        sys.modules["loguru"] = stub
    return hunyuan_reference.load("hyvideo.models.autoencoders.hunyuanvideo_15_vae")


def randomize_(model, seed):
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in sorted(model.named_parameters()):
            if name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=g))
            elif name.endswith("gamma"):  # RMS_norm scales [C, 1, 1, 1]
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=g))
            else:  # conv weights [out, in, *k], half the unit-gain scale: the resnets, samplers and
                # shortcuts add up, and at unit gain the decoder's activations reach ~40, where fp32
                # rounding alone differs by more than 1e-5
                p.copy_(0.5 * torch.randn(p.shape, generator=g) / p[0].numel() ** 0.5)


def record(model, names, store):
    handles = []
    for name in names:
        def hook(_m, _inp, out, name=name):
            store["inter." + name] = out.detach().float().contiguous().clone()
        handles.append(model.get_submodule(name).register_forward_hook(hook))
    return handles


def save(path, tensors, kind, config, reference=REFERENCE, **extra):
    meta = {**{k: str(v) for k, v in extra.items()}, "kind": kind, "config": json.dumps(config),
            "reference": reference, "generator": "tools/golden/hunyuan15_vae.py", "torch": torch.__version__}
    tensors = {k: v.detach().to(torch.float32).contiguous().clone() for k, v in tensors.items()}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors)")


def half(sd, prefix):
    return {k: v for k, v in sd.items() if k.startswith(prefix)}


# Module outputs up to half the video's resolution (the full-resolution ones would make the files
# large; the output covers them).
def decoder_points(cfg):
    n = len(cfg["block_out_channels"])
    pts = ["decoder.conv_in", "decoder.mid.block_1", "decoder.mid.attn_1", "decoder.mid.block_2"]
    for i in range(n - 1):
        pts.append(f"decoder.up.{i}.block.{cfg['layers_per_block']}")
        if i < n - 2:
            pts.append(f"decoder.up.{i}.upsample")
    return pts


def encoder_points(cfg):
    n = len(cfg["block_out_channels"])
    pts = ["encoder.down.0.downsample"]
    for i in range(1, n):
        pts.append(f"encoder.down.{i}.block.{cfg['layers_per_block'] - 1}")
        if i < n - 1:
            pts.append(f"encoder.down.{i}.downsample")
    return pts + ["encoder.mid.block_1", "encoder.mid.attn_1", "encoder.mid.block_2", "encoder.conv_out", "encoder"]


def build(mod, cfg, seed):
    torch.manual_seed(0)
    vae = mod.AutoencoderKLConv3D(**cfg).eval().requires_grad_(False)
    randomize_(vae, seed)
    return vae


def pair(mod, out, name, cfg, seed, z_shape, x_shape):
    vae = build(mod, cfg, seed)
    sd = vae.state_dict()
    z = torch.randn(*z_shape, generator=torch.Generator().manual_seed(seed + 1))
    inter = {}
    hs = record(vae, decoder_points(cfg), inter)
    with torch.no_grad():
        video = vae.decode(z).sample
    for h in hs:
        h.remove()
    print(f"{name} decode: {list(z.shape)} -> {list(video.shape)} std {video.std().item():.4f}")
    save(os.path.join(out, f"{name}_decode.safetensors"), {**half(sd, "decoder."), "input.z": z, "output": video,
                                                            **inter}, "hunyuan1.5.vae.decode", cfg)

    x = torch.rand(*x_shape, generator=torch.Generator().manual_seed(seed + 2)) * 2 - 1
    inter = {}
    hs = record(vae, encoder_points(cfg), inter)
    with torch.no_grad():
        post = vae.encode(x).latent_dist
    for h in hs:
        h.remove()
    print(f"{name} encode: {list(x.shape)} -> {list(post.mode().shape)} std {post.mode().std().item():.4f}")
    save(os.path.join(out, f"{name}_encode.safetensors"),
         {**half(sd, "encoder."), "input.x": x, "output": post.mode(), "output.mean": post.mean,
          "output.logvar": post.logvar, **inter}, "hunyuan1.5.vae.encode", cfg)
    return vae, z, video, x, post.mode()


def tiled(mod, out):
    vae = build(mod, TILED, 61)
    vae.set_tile_sample_min_size(TILE_SIZE, TILE_OVERLAP)
    sd = vae.state_dict()
    meta = dict(tiling="spatial", tile_sample_size=TILE_SIZE, tile_overlap_factor=TILE_OVERLAP)
    z = torch.randn(1, 4, 2, 3, 4, generator=torch.Generator().manual_seed(62))
    x = torch.rand(1, 3, 5, 48, 64, generator=torch.Generator().manual_seed(63)) * 2 - 1
    with torch.no_grad():
        untiled = vae.decode(z).sample
        untiled_latent = vae.encode(x).latent_dist.mode()
        vae.enable_spatial_tiling()
        video = vae.decode(z).sample
        post = vae.encode(x).latent_dist
    assert video.shape == untiled.shape == (1, 3, 5, 48, 64), video.shape
    d = (video - untiled).abs().max().item()
    rel = ((video - untiled).norm() / untiled.norm()).item()
    print(f"tiled decode: {list(video.shape)}, |tiled - untiled| max {d:.4f} rel L2 {rel:.4f}")
    save(os.path.join(out, "hy15_vae_tiled_decode.safetensors"),
         {**half(sd, "decoder."), "input.z": z, "output": video}, "hunyuan1.5.vae.decode", TILED, **meta)
    latent = post.mode()
    assert latent.shape == untiled_latent.shape == (1, 4, 2, 3, 4), latent.shape
    d = (latent - untiled_latent).abs().max().item()
    rel = ((latent - untiled_latent).norm() / untiled_latent.norm()).item()
    print(f"tiled encode: {list(latent.shape)}, |tiled - untiled| max {d:.4f} rel L2 {rel:.4f}")
    save(os.path.join(out, "hy15_vae_tiled_encode.safetensors"),
         {**half(sd, "encoder."), "input.x": x, "output": latent, "output.mean": post.mean,
          "output.logvar": post.logvar}, "hunyuan1.5.vae.encode", TILED, **meta)


# official -> diffusers state_dict names (written from the two module trees; the C++ table in
# src/models/hunyuan15/vae_keys.cpp is checked against the file this makes, not against this).
RENAMES = [
    (r"^(encoder|decoder)\.mid\.block_1\.", r"\1.mid_block.resnets.0."),
    (r"^(encoder|decoder)\.mid\.block_2\.", r"\1.mid_block.resnets.1."),
    (r"^(encoder|decoder)\.mid\.attn_1\.(q|k|v)\.", r"\1.mid_block.attentions.0.to_\2."),
    (r"^(encoder|decoder)\.mid\.attn_1\.", r"\1.mid_block.attentions.0."),
    (r"^encoder\.down\.(\d+)\.block\.(\d+)\.", r"encoder.down_blocks.\1.resnets.\2."),
    (r"^encoder\.down\.(\d+)\.downsample\.", r"encoder.down_blocks.\1.downsamplers.0."),
    (r"^decoder\.up\.(\d+)\.block\.(\d+)\.", r"decoder.up_blocks.\1.resnets.\2."),
    (r"^decoder\.up\.(\d+)\.upsample\.", r"decoder.up_blocks.\1.upsamplers.0."),
    (r"\.nin_shortcut\.", r".conv_shortcut."),
]


def to_diffusers(name):
    for pat, rep in RENAMES:
        name = re.sub(pat, rep, name)
    return name


def diffusers_case(out, official, z, expected, x, expected_latent):
    from diffusers import AutoencoderKLHunyuanVideo15
    cfg = dict(in_channels=CONFIG["in_channels"], out_channels=CONFIG["out_channels"],
               latent_channels=CONFIG["latent_channels"], block_out_channels=CONFIG["block_out_channels"],
               layers_per_block=CONFIG["layers_per_block"], spatial_compression_ratio=CONFIG["ffactor_spatial"],
               temporal_compression_ratio=CONFIG["ffactor_temporal"],
               downsample_match_channel=CONFIG["downsample_match_channel"],
               upsample_match_channel=CONFIG["upsample_match_channel"], scaling_factor=CONFIG["scaling_factor"])
    dvae = AutoencoderKLHunyuanVideo15(**cfg).eval().requires_grad_(False)
    sd = {to_diffusers(k): v for k, v in official.state_dict().items()}
    dvae.load_state_dict(sd, strict=True)
    with torch.no_grad():
        video = dvae.decode(z).sample
    d = (video - expected).abs().max().item()
    print(f"diffusers decode: max |diffusers - official| {d:.3g}")
    assert d < 1e-5, d
    with torch.no_grad():
        post = dvae.encode(x).latent_dist
    d = (post.mode() - expected_latent).abs().max().item()
    print(f"diffusers encode: max |diffusers - official| {d:.3g}")
    assert d < 1e-5, d
    dsd = dvae.state_dict()
    dcfg = {"_class_name": "AutoencoderKLHunyuanVideo15", **cfg}
    save(os.path.join(out, "hy15_vae_diffusers_decode.safetensors"),
         {**half(dsd, "decoder."), "input.z": z, "output": video}, "hunyuan1.5.vae.decode", dcfg,
         reference=DIFFUSERS_REFERENCE)
    save(os.path.join(out, "hy15_vae_diffusers_encode.safetensors"),
         {**half(dsd, "encoder."), "input.x": x, "output": post.mode(), "output.mean": post.mean,
          "output.logvar": post.logvar}, "hunyuan1.5.vae.encode", dcfg, reference=DIFFUSERS_REFERENCE)


def key_lists(mod, data):
    """The published VAE's state_dict names and shapes, official and diffusers (meta tensors)."""
    from diffusers import AutoencoderKLHunyuanVideo15
    os.makedirs(data, exist_ok=True)
    with torch.device("meta"):
        official = mod.AutoencoderKLConv3D(**PUBLISHED)
        diffusers = AutoencoderKLHunyuanVideo15()  # its defaults are the published VAE
    for name, model in (("hy15_vae_keys.json", official), ("hy15_vae_diffusers_keys.json", diffusers)):
        keys = {k: list(v.shape) for k, v in model.state_dict().items()}
        path = os.path.join(data, name)
        with open(path, "w") as f:
            json.dump(keys, f, indent=0, sort_keys=True)
        print(f"wrote {path} ({len(keys)} keys)")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "tests", "golden", "hunyuan15")
    os.makedirs(out, exist_ok=True)
    torch.set_num_threads(2)
    mod = import_vae()
    key_lists(mod, os.path.join(ROOT, "tests", "hunyuan", "data"))
    vae, z, video, x, latent = pair(mod, out, "hy15_vae", CONFIG, 51, (1, 4, 3, 2, 2), (1, 3, 9, 32, 32))
    pair(mod, out, "hy15_vae_nomatch", MATCH_OFF, 71, (1, 4, 1, 2, 2), (1, 3, 1, 32, 32))
    tiled(mod, out)
    diffusers_case(out, vae, z, video, x, latent)


if __name__ == "__main__":
    main()
