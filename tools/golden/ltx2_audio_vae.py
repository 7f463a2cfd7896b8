"""Golden files for the LTX-2 audio VAE (kinds ltx2.audio_vae.decode / .encode, docs/models/ltx2.md).

Runs the OFFICIAL ltx_core.model.audio_vae.audio_vae.AudioDecoder / AudioEncoder (Lightricks/LTX-2,
imported from $LTX2_CORE, default /work/ref/ltx2/packages/ltx-core/src), built exactly as the
checkpoint loader builds them from the `audio_vae` config dict of the checkpoint metadata
(model_configurator.AudioDecoderConfigurator / AudioEncoderConfigurator.from_metadata), in float32 on the CPU, with tiny widths
and seeded random weights. Each file holds:

  __metadata__.kind     ltx2.audio_vae.decode | ltx2.audio_vae.encode
  __metadata__.config   the `audio_vae` config dict (model.params.ddconfig, model.params.sampling_rate,
                        preprocessing.stft / .mel, variables: the configurator's keys)
  parameters            the module's state dict under its official names (conv_in.conv.weight,
                        up.1.upsample.conv.conv.bias, mid.attn_1.q.weight,
                        per_channel_statistics.std-of-means, ...)
  input.sample          the forward's argument: a normalized latent [B, z_channels, frames, latent mel bins]
  output                the forward's result: the mel spectrogram [B, out_ch, 4 frames - 3 (causal) or
                        4 frames, mel_bins]
  inter.<module path>   forward-hook outputs: conv_in, mid.block_2, the last resnet of each up level
                        (up.<level>.block.<num_res_blocks>), each up.<level>.upsample, conv_out
                        (encode: down.<level>.block.<num_res_blocks - 1>, down.<level>.downsample)
  encode files: input.spectrogram (a random "log-mel" [B, in_channels, time, mel bins]) -> output
                        (the normalized latent means)

  ltx2_audio_vae_decode.safetensors          the published structure (the configurator's defaults: pixel
                                             norm, causality_axis height, ch_mult (1, 2, 4), 2 res blocks,
                                             mid attention, attn_resolutions {8, 16, 32} at resolution 256
                                             = no attention in the up path), ch 8, z_channels 2, B = 1
  ltx2_audio_vae_decode_variants.safetensors group norm, causality_axis none, attention in the up path
                                             (attn_resolutions hit), mel_bins larger than decoded (the
                                             zero padding of _adjust_output_shape), B = 2
  ltx2_audio_vae_decode_width.safetensors    causality_axis width, no mid attention, mel_bins smaller
                                             than decoded (the crop), B = 2
  ltx2_audio_vae_encode.safetensors          the published encoder structure (as the decoder's file, double_z,
                                             in_channels 2), 17 x 16 -> 5 x 4, B = 1
  ltx2_audio_vae_encode_variants.safetensors group norm, causality none, attention in the down path,
                                             resamp_with_conv false (average pooling), double_z false
                                             (the chunk keeps ceil(z / 2) channels), B = 2
  ltx2_audio_vae_encode_width.safetensors    causality_axis width, attn_type none, B = 2

The per-channel statistics are drawn (mean N(0, 0.5), std U(0.5, 1.5)) so the un-normalisation
matters; they have ch entries and apply to the patchified latent (c f), so ch = z_channels x latent
mel bins. GroupNorm affine parameters are random too.

Usage: /work/venv-golden/bin/python tools/golden/ltx2_audio_vae.py [--out tests/golden/ltx2]
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.environ.get("LTX2_CORE", "/work/ref/ltx2/packages/ltx-core/src"))
from ltx_core.model.audio_vae.model_configurator import (  # noqa: E402
    AudioDecoderConfigurator,
    AudioEncoderConfigurator,
)


def audio_vae_config(ddconfig, mel_bins=None):
    cfg = {"model": {"params": {"ddconfig": ddconfig, "sampling_rate": 16000}},
           "preprocessing": {"stft": {"hop_length": 160, "causal": True}}}
    if mel_bins is not None:
        cfg["preprocessing"]["mel"] = {"n_mel_channels": mel_bins}
    return cfg


def make(path, config, batch, frames, seed, encode=False, mel=None):
    torch.manual_seed(seed)
    configurator = AudioEncoderConfigurator if encode else AudioDecoderConfigurator
    model = configurator.from_metadata({"config": {"audio_vae": config}}).eval()
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "norm" in name and name.endswith(".weight"):
                p.copy_(1.0 + 0.2 * torch.randn_like(p))
            elif "norm" in name and name.endswith(".bias"):
                p.copy_(0.2 * torch.randn_like(p))
        stats = model.per_channel_statistics
        stats.get_buffer("mean-of-means").copy_(0.5 * torch.randn(model.ch))
        stats.get_buffer("std-of-means").copy_(0.5 + torch.rand(model.ch))
    inter = {}
    names = ["conv_in", "mid.block_2", "conv_out"]
    for level in range(model.num_resolutions):
        if encode:
            names.append(f"down.{level}.block.{model.num_res_blocks - 1}")
            if level != model.num_resolutions - 1:
                names.append(f"down.{level}.downsample")
        else:
            names.append(f"up.{level}.block.{model.num_res_blocks}")
            if level != 0:
                names.append(f"up.{level}.upsample")
    for name in names:
        model.get_submodule(name).register_forward_hook(
            lambda _m, _i, out, name=name: inter.__setitem__("inter." + name, out.detach().clone()))
    if encode:
        x = torch.randn(batch, model.in_channels, frames, mel)
    else:
        x = torch.randn(batch, model.z_channels, frames, model.ch // model.z_channels)
    with torch.no_grad():
        y = model(x)
    tensors = {k: v.detach().contiguous().float() for k, v in model.state_dict().items()}
    tensors["input.spectrogram" if encode else "input.sample"] = x.contiguous()
    tensors["output"] = y.contiguous()
    tensors.update(inter)
    meta = {"kind": "ltx2.audio_vae.encode" if encode else "ltx2.audio_vae.decode", "config": json.dumps(config),
            "generator": "tools/golden/ltx2_audio_vae.py", "torch": torch.__version__}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors), input {tuple(x.shape)} "
          f"output {tuple(y.shape)} range [{y.min():.3f}, {y.max():.3f}]")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/ltx2")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    published = {"ch": 8, "z_channels": 2, "out_ch": 2, "ch_mult": [1, 2, 4], "num_res_blocks": 2,
                 "attn_resolutions": [8, 16, 32], "resolution": 256, "norm_type": "pixel",
                 "causality_axis": "height", "mel_bins": 16}
    make(os.path.join(args.out, "ltx2_audio_vae_decode.safetensors"), audio_vae_config(published), 1, 5, 0)
    variants = {"ch": 32, "z_channels": 4, "out_ch": 2, "ch_mult": [1, 1], "num_res_blocks": 1,
                "attn_resolutions": [16], "resolution": 16, "norm_type": "group", "causality_axis": None}
    make(os.path.join(args.out, "ltx2_audio_vae_decode_variants.safetensors"),
         audio_vae_config(variants, mel_bins=19), 2, 3, 1)
    width = {"ch": 8, "z_channels": 4, "out_ch": 2, "ch_mult": [1, 2], "num_res_blocks": 1,
             "resolution": 64, "norm_type": "pixel", "causality_axis": "width",
             "mid_block_add_attention": False}
    make(os.path.join(args.out, "ltx2_audio_vae_decode_width.safetensors"),
         audio_vae_config(width, mel_bins=3), 2, 4, 2)
    enc = {**published, "in_channels": 2, "double_z": True}
    make(os.path.join(args.out, "ltx2_audio_vae_encode.safetensors"), audio_vae_config(enc), 1, 17, 3,
         encode=True, mel=16)
    enc_variants = {"ch": 32, "z_channels": 8, "ch_mult": [1, 1], "num_res_blocks": 1, "attn_resolutions": [16],
                    "resolution": 16, "norm_type": "group", "causality_axis": None, "resamp_with_conv": False,
                    "double_z": False, "in_channels": 2}
    make(os.path.join(args.out, "ltx2_audio_vae_encode_variants.safetensors"), audio_vae_config(enc_variants),
         2, 9, 4, encode=True, mel=16)
    enc_width = {"ch": 8, "z_channels": 4, "ch_mult": [1, 2], "num_res_blocks": 1, "resolution": 64,
                 "norm_type": "pixel", "causality_axis": "width", "attn_type": "none", "in_channels": 2}
    make(os.path.join(args.out, "ltx2_audio_vae_encode_width.safetensors"), audio_vae_config(enc_width),
         2, 7, 5, encode=True, mel=4)


if __name__ == "__main__":
    main()
