"""Golden files for the LTX-2 video VAE (kinds ltx2.vae.decode / ltx2.vae.encode, docs/models/ltx2.md).

Runs the OFFICIAL ltx_core.model.video_vae classes (Lightricks/LTX-2, imported from $LTX2_CORE,
default /work/ref/ltx2/packages/ltx-core/src), built exactly as the checkpoint loader builds them
from the `vae` config dict of the checkpoint metadata (model_configurator's
VideoDecoderConfigurator / VideoEncoderConfigurator), in float32 on the CPU, with tiny widths and
seeded random weights. Each file holds:

  __metadata__.kind     ltx2.vae.decode | ltx2.vae.encode
  __metadata__.config   the `vae` config dict (the configurator's keys)
  parameters            the module's state dict under its official names (conv_in.conv.weight,
                        up_blocks.1.conv.conv.weight, per_channel_statistics.std-of-means, ...)
  input.sample          the forward's argument (decode: a normalized latent; encode: a video in [-1, 1])
  output                the forward's result (decode: the video, not clamped; encode: the normalized
                        latent means)
  inter.<module path>   forward-hook outputs (conv_in, each up/down block, conv_out)

  ltx2_vae_decode.safetensors          the published LTX-2 decoder's block kinds (res_x, compress_all
                                       residual x2), reflect padding, non-causal, B = 1
  ltx2_vae_decode_variants.safetensors compress_time / compress_space (plain d2s), res_x_y, attn,
                                       causal, zeros padding, B = 2
  ltx2_vae_decode_timestep.safetensors timestep_conditioning + inject_noise, the pipeline's call: default
                                       decode_timestep, noise from torch.Generator().manual_seed(
                                       __metadata__.generator_seed)
  ltx2_vae_decode_timestep_b2.safetensors  an explicit input.timestep [B], B = 2
  ltx2_vae_tiled_decode.safetensors    ConvVideoDecoder.tiled_decode with a TileSizeConfig
                                       (__metadata__.tiling: {axis: [tile_size, overlap]}), output only
  ltx2_vae_tiled_decode_weighted.safetensors  the same for the conditioned decoder, masks that are not
                                       complementary (the weights path)
  ltx2_vae_decode_groupnorm.safetensors norm_layer group_norm (32 groups, 32 channels: one res_x), replicate padding
  ltx2_vae_encode.safetensors          the published LTX-2 encoder's block kinds (res_x,
                                       compress_space_res, compress_time_res, compress_all_res),
                                       latent_log_var uniform, B = 1
  ltx2_vae_tiled_encode.safetensors    VideoEncoder.tiled_encode with a TileSizeConfig (__metadata__.tiling)
  ltx2_vae_encode_variants.safetensors compress_time / compress_space / compress_all /
                                       compress_all_x_y (strided convs), res_x_y, attn,
                                       latent_log_var per_channel, reflect padding, B = 2

  tests/ltx2/data/video_vae_keys.json  the published structure's state dict names and shapes per half
                                       (PUBLISHED, checked against diffusers' AutoencoderKLLTX2Video)

The per-channel statistics are drawn (mean N(0, 0.5), std U(0.5, 1.5)) so the (un)normalisation
matters; norms' affine parameters, attention gains and all biases are random too.

Usage: /work/venv-golden/bin/python tools/golden/ltx2_video_vae.py [--out tests/golden/ltx2]
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.environ.get("LTX2_CORE", "/work/ref/ltx2/packages/ltx-core/src"))
from ltx_core.model.video_vae.model_configurator import (  # noqa: E402
    VideoDecoderConfigurator,
    VideoEncoderConfigurator,
)
from ltx_core.tiling import DimensionSizeConfig, TileSizeConfig, masks_are_complementary  # noqa: E402

DECODE = {
    "_class_name": "CausalVideoAutoencoder",
    "dims": 3,
    "latent_channels": 8,
    "out_channels": 3,
    "patch_size": 4,
    "norm_layer": "pixel_norm",
    "causal_decoder": False,
    "timestep_conditioning": False,
    "spatial_padding_mode": "reflect",
    "decoder_base_channels": 4,
    "decoder_blocks": [
        ["res_x", {"num_layers": 1, "inject_noise": False}],
        ["compress_all", {"residual": True, "multiplier": 2}],
        ["res_x", {"num_layers": 2, "inject_noise": False}],
        ["compress_all", {"residual": True, "multiplier": 2}],
        ["res_x", {"num_layers": 1, "inject_noise": False}],
    ],
}

DECODE_VARIANTS = {
    **DECODE,
    "patch_size": 2,
    "causal_decoder": True,
    "spatial_padding_mode": "zeros",
    "decoder_blocks": [
        ["res_x_y", {"multiplier": 2}],
        ["compress_time", {"multiplier": 2}],
        ["attn", {}],
        ["compress_space", {}],
        ["res_x", 1],
    ],
}

# The conditioned decoder (the configurator's default timestep_conditioning: true, as LTX-Video 0.9.x
# checkpoints use it): decode-time noise, timestep embeddings and adaLN tables, per-resnet noise.
DECODE_TIMESTEP = {
    **DECODE,
    "timestep_conditioning": True,
    "decoder_blocks": [
        ["res_x", {"num_layers": 1, "inject_noise": True}],
        ["compress_all", {"residual": True, "multiplier": 2}],
        ["res_x", {"num_layers": 2, "inject_noise": True}],
    ],
}

DECODE_TIMESTEP_B2 = {
    **DECODE_TIMESTEP,
    "decoder_blocks": [["res_x", 1], ["compress_all", {"residual": True, "multiplier": 2}], ["res_x", 1]],
}

DECODE_GROUPNORM = {
    **DECODE,
    "latent_channels": 4,
    "patch_size": 2,
    "norm_layer": "group_norm",
    "spatial_padding_mode": "replicate",
    "decoder_base_channels": 32,
    "decoder_blocks": [["res_x", 1]],
}

ENCODE = {
    "_class_name": "CausalVideoAutoencoder",
    "dims": 3,
    "in_channels": 3,
    "latent_channels": 4,
    "patch_size": 4,
    "norm_layer": "pixel_norm",
    "latent_log_var": "uniform",
    "encoder_spatial_padding_mode": "zeros",
    "encoder_blocks": [
        ["res_x", {"num_layers": 1}],
        ["compress_space_res", {"multiplier": 2}],
        ["res_x", {"num_layers": 1}],
        ["compress_time_res", {"multiplier": 2}],
        ["res_x", {"num_layers": 1}],
        ["compress_all_res", {"multiplier": 2}],
        ["res_x", {"num_layers": 1}],
    ],
}

ENCODE_VARIANTS = {
    **ENCODE,
    "patch_size": 2,
    "latent_log_var": "per_channel",
    "encoder_spatial_padding_mode": "reflect",
    "encoder_blocks": [
        ["compress_space", 1],
        ["res_x_y", {"multiplier": 2}],
        ["compress_time", 1],
        ["attn", {}],
        ["compress_all", 1],
        ["compress_all_x_y", {"multiplier": 2}],
        ["res_x", 1],
    ],
}


# The published LTX-2 video VAE's `vae` config as this script takes it (the block lists of the
# LTX-Video 0.9.5+ layout that diffusers' AutoencoderKLLTX2Video defaults describe: encoder
# layers_per_block (4, 6, 6, 2, 2), spatial / temporal / 2x spatiotemporal downsampling; decoder
# 4 x 5 resnets, 3 residual spatiotemporal upsamplers; no timestep conditioning, no noise).
# key_list() checks it against diffusers: converted with diffusers' own convert_ltx2_vae_to_diffusers,
# its state dict must be AutoencoderKLLTX2Video()'s, name for name and shape for shape.
PUBLISHED = {
    "_class_name": "CausalVideoAutoencoder",
    "dims": 3,
    "in_channels": 3,
    "out_channels": 3,
    "latent_channels": 128,
    "patch_size": 4,
    "norm_layer": "pixel_norm",
    "latent_log_var": "uniform",
    "causal_decoder": False,
    "timestep_conditioning": False,
    "spatial_padding_mode": "reflect",
    "encoder_spatial_padding_mode": "zeros",
    "decoder_base_channels": 128,
    "encoder_blocks": [
        ["res_x", {"num_layers": 4}],
        ["compress_space_res", {"multiplier": 2}],
        ["res_x", {"num_layers": 6}],
        ["compress_time_res", {"multiplier": 2}],
        ["res_x", {"num_layers": 6}],
        ["compress_all_res", {"multiplier": 2}],
        ["res_x", {"num_layers": 2}],
        ["compress_all_res", {"multiplier": 2}],
        ["res_x", {"num_layers": 2}],
    ],
    "decoder_blocks": [
        ["res_x", {"num_layers": 5, "inject_noise": False}],
        ["compress_all", {"residual": True, "multiplier": 2}],
        ["res_x", {"num_layers": 5, "inject_noise": False}],
        ["compress_all", {"residual": True, "multiplier": 2}],
        ["res_x", {"num_layers": 5, "inject_noise": False}],
        ["compress_all", {"residual": True, "multiplier": 2}],
        ["res_x", {"num_layers": 5, "inject_noise": False}],
    ],
}


def key_list(path):
    """The published structure's state dict names and shapes (official classes on the meta device),
    after checking them against diffusers' AutoencoderKLLTX2Video through diffusers' converter."""
    from diffusers import AutoencoderKLLTX2Video
    from diffusers.loaders.single_file_utils import convert_ltx2_vae_to_diffusers

    with torch.device("meta"):
        dec = VideoDecoderConfigurator.from_metadata({"config": {"vae": PUBLISHED}})
        enc = VideoEncoderConfigurator.from_metadata({"config": {"vae": PUBLISHED}})
        ref = AutoencoderKLLTX2Video()
    keys = {"decoder": {k: list(v.shape) for k, v in dec.state_dict().items()},
            "encoder": {k: list(v.shape) for k, v in enc.state_dict().items()}}
    bundled = {}
    for half, sd in (("decoder", dec.state_dict()), ("encoder", enc.state_dict())):
        for k, v in sd.items():
            bundled["vae." + k if k.startswith("per_channel_statistics.") else f"vae.{half}.{k}"] = v
    converted = {k: list(v.shape) for k, v in convert_ltx2_vae_to_diffusers(bundled).items()}
    want = {k: list(v.shape) for k, v in ref.state_dict().items()}
    if converted != want:
        missing = sorted(set(want) - set(converted))[:5]
        extra = sorted(set(converted) - set(want))[:5]
        raise SystemExit(f"PUBLISHED does not convert to AutoencoderKLLTX2Video(): missing {missing}, extra {extra}")
    with open(path, "w") as f:
        json.dump({"config": PUBLISHED, **keys}, f, indent=0, sort_keys=True)
        f.write("\n")
    n = sum(len(v) for v in keys.values())
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {n} keys; matches diffusers' AutoencoderKLLTX2Video)")


def randomize(model, gen):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "scale_shift_table" in name or "per_channel_scale" in name:  # zeros / torch.empty at init
                p.copy_(0.2 * torch.randn(p.shape, generator=gen))
            elif name.endswith("bias"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif "norm" in name or name.endswith("gamma"):  # group norms' affine, attention gains
                p.copy_(1.0 + 0.2 * torch.randn(p.shape, generator=gen))
        stats = model.per_channel_statistics
        c = stats.get_buffer("std-of-means").shape[0]
        stats.get_buffer("mean-of-means").copy_(0.5 * torch.randn(c, generator=gen))
        stats.get_buffer("std-of-means").copy_(0.5 + torch.rand(c, generator=gen))


def hooks(model, names, store):
    for name in names:
        module = model.get_submodule(name)
        module.register_forward_hook(lambda _m, _i, out, name=name: store.__setitem__("inter." + name, out.detach()))


def write(path, kind, config, model, sample, output, inter, extra_meta=None):
    tensors = {k: v.detach().contiguous().float() for k, v in model.state_dict().items()}
    tensors["input.sample"] = sample.contiguous()
    tensors["output"] = output.detach().contiguous()
    tensors.update({k: v.contiguous() for k, v in inter.items()})
    meta = {"kind": kind, "config": json.dumps(config), "generator": "tools/golden/ltx2_video_vae.py",
            "torch": torch.__version__, **(extra_meta or {})}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors), "
          f"{tuple(sample.shape)} -> {tuple(output.shape)} range [{output.min():.3f}, {output.max():.3f}]")


def make_decode(path, config, latent_shape, seed, timestep=None, generator_seed=None):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1000)
    model = VideoDecoderConfigurator.from_metadata({"config": {"vae": config}}).eval()
    randomize(model, gen)
    inter = {}
    hooks(model, ["conv_in"] + [f"up_blocks.{i}" for i in range(len(model.up_blocks))] + ["conv_out"], inter)
    sample = torch.randn(latent_shape, generator=gen)
    extra, meta = {}, {}
    if timestep is not None:
        extra["input.timestep"] = torch.tensor(timestep, dtype=torch.float32)
    noise_gen = None
    if generator_seed is not None:
        noise_gen = torch.Generator().manual_seed(generator_seed)
        meta["generator_seed"] = str(generator_seed)
    with torch.no_grad():
        output = model(sample, timestep=extra.get("input.timestep"), generator=noise_gen)
    inter.update(extra)
    write(path, "ltx2.vae.decode", config, model, sample, output, inter, meta)


def make_tiled_decode(path, config, latent_shape, seed, tiling, generator_seed=None):
    """ConvVideoDecoder.tiled_decode(latent, TileSizeConfig, generator): the chunks it yields, joined."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1000)
    model = VideoDecoderConfigurator.from_metadata({"config": {"vae": config}}).eval()
    randomize(model, gen)
    sample = torch.randn(latent_shape, generator=gen)
    size = {axis: DimensionSizeConfig(tile_size=t, overlap=o) for axis, (t, o) in tiling.items()}
    noise_gen = None if generator_seed is None else torch.Generator().manual_seed(generator_seed)
    with torch.no_grad():
        chunks = list(model.tiled_decode(sample, TileSizeConfig(**size), generator=noise_gen))
    output = torch.cat(chunks, dim=2)
    meta = {"tiling": json.dumps(tiling)}
    if generator_seed is not None:
        meta["generator_seed"] = str(generator_seed)
    tiles = model._prepare_tiles(sample, TileSizeConfig(**size))
    full = (sample.shape[0], 3, (sample.shape[2] - 1) * model.video_downscale_factors.time + 1,
            sample.shape[3] * model.video_downscale_factors.height, sample.shape[4] * model.video_downscale_factors.width)
    print(f"  {len(tiles)} tiles, complementary {masks_are_complementary(tiles, full)}, "
          f"{len(chunks)} chunks of {[c.shape[2] for c in chunks]} frames")
    write(path, "ltx2.vae.decode", config, model, sample, output, {}, meta)


def make_tiled_encode(path, config, video_shape, seed, tiling):
    """VideoEncoder.tiled_encode(video, TileSizeConfig)."""
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1000)
    model = VideoEncoderConfigurator.from_metadata({"config": {"vae": config}}).eval()
    randomize(model, gen)
    sample = torch.rand(video_shape, generator=gen) * 2 - 1
    size = {axis: DimensionSizeConfig(tile_size=t, overlap=o) for axis, (t, o) in tiling.items()}
    with torch.no_grad():
        output = model.tiled_encode(sample, TileSizeConfig(**size))
    write(path, "ltx2.vae.encode", config, model, sample, output, {}, {"tiling": json.dumps(tiling)})


def make_encode(path, config, video_shape, seed):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed + 1000)
    model = VideoEncoderConfigurator.from_metadata({"config": {"vae": config}}).eval()
    randomize(model, gen)
    inter = {}
    hooks(model, ["conv_in"] + [f"down_blocks.{i}" for i in range(len(model.down_blocks))] + ["conv_out"], inter)
    sample = torch.rand(video_shape, generator=gen) * 2 - 1
    with torch.no_grad():
        output = model(sample)
    write(path, "ltx2.vae.encode", config, model, sample, output, inter)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/ltx2")
    ap.add_argument("--keys", default="tests/ltx2/data/video_vae_keys.json")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    os.makedirs(os.path.dirname(args.keys), exist_ok=True)
    key_list(args.keys)
    out = lambda name: os.path.join(args.out, name)  # noqa: E731
    # 3 latent frames of 3 x 2 -> 9 frames of 48 x 32 (two spatio-temporal x2 steps, patch 4).
    make_decode(out("ltx2_vae_decode.safetensors"), DECODE, (1, 8, 3, 3, 2), 0)
    # 3 latent frames of 2 x 3 -> 5 frames of 8 x 12 (time x2, space x2, patch 2).
    make_decode(out("ltx2_vae_decode_variants.safetensors"), DECODE_VARIANTS, (2, 8, 3, 2, 3), 1)
    # The pipeline's call: forward(sample, generator=seeded) with the default decode_timestep 0.05;
    # the noise (decode-time, then each resnet's spatial noise) drawn from torch.Generator().manual_seed(7).
    make_decode(out("ltx2_vae_decode_timestep.safetensors"), DECODE_TIMESTEP, (1, 8, 2, 2, 3), 5, generator_seed=7)
    # An explicit per-sample timestep, B = 2, decode-time noise only.
    make_decode(out("ltx2_vae_decode_timestep_b2.safetensors"), DECODE_TIMESTEP_B2, (2, 8, 2, 3, 2), 6,
                timestep=[0.05, 0.3], generator_seed=11)
    # Tiled (TileSizeConfig, pixel / frame units): 4 latent frames in 2 causal temporal tiles (12 frames,
    # overlap 4), 4 latent rows in 3 tiles (32 px, overlap 16), width untiled; complementary masks.
    make_tiled_decode(out("ltx2_vae_tiled_decode.safetensors"), DECODE, (1, 8, 4, 4, 2), 8,
                      {"frames": [12, 4], "height": [32, 16], "width": [0, 0]})
    # The conditioned decoder tiled, noise drawn per tile from one generator; 6 latent rows in 3 tiles
    # of 4 overlapping by 3 (ramps that overlap: masks not complementary, so the weights divide).
    make_tiled_decode(out("ltx2_vae_tiled_decode_weighted.safetensors"), DECODE_TIMESTEP, (1, 8, 4, 6, 3), 9,
                      {"frames": [6, 2], "height": [32, 24], "width": [0, 0]}, generator_seed=13)
    make_decode(out("ltx2_vae_decode_groupnorm.safetensors"), DECODE_GROUPNORM, (1, 4, 2, 3, 2), 2)  # 2 latent frames -> 2 frames of 6 x 4
    # 9 frames of 32 x 48 -> 3 latent frames of 2 x 3 (space x2, time x2, all x2, patch 4).
    make_encode(out("ltx2_vae_encode.safetensors"), ENCODE, (1, 3, 9, 32, 48), 3)
    # 9 frames of 32 x 48 -> 2 latent frames of 2 x 3 (space, time, all, all; patch 2).
    make_encode(out("ltx2_vae_encode_variants.safetensors"), ENCODE_VARIANTS, (2, 3, 9, 32, 48), 4)
    # Tiled encode (the reference's minimum overlaps: 16 frames, 64 px), 2 latent channels: 25 frames
    # (7 latent frames) in frames tiles of 20 overlapping by 16 (3 causal tiles, the last starting at
    # frame 4), 96 px (6 latent columns) in width tiles of 80 by 64.
    make_tiled_encode(out("ltx2_vae_tiled_encode.safetensors"), {**ENCODE, "latent_channels": 2}, (1, 3, 25, 16, 96), 10,
                      {"frames": [20, 16], "height": [0, 0], "width": [80, 64]})


if __name__ == "__main__":
    main()
