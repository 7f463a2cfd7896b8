#!/usr/bin/env python3
"""Writes random-weight Wan 2.1 files of the real shapes for timing peers that need files on disk
(stable-diffusion.cpp): no checkpoint can be downloaded on the benchmark machine, and timing does
not depend on the values.

  /work/pyenv/bin/python bench/peers/make_random_wan_files.py --out /work/peers/weights [--dtype f16|bf16]

Writes, in the publishers' own key layouts:
  wan2.1_t2v_1.3B_<dtype>.safetensors  the DiT, official `WanModel` state_dict names (the layout of
                                       Comfy-Org's repackaged files), names and shapes taken from the
                                       official code ($WAN21_REPO, default /work/ref/Wan2.1) on the
                                       meta device
  wan_2.1_vae.safetensors              the VAE (`WanVAE_` names), fp32
  umt5_tiny_<dtype>.safetensors        a ONE-layer UMT5 encoder with d_model 4096 (HF T5 names), so
                                       the text encoder costs nothing and fits in memory; only its
                                       output width (4096) matters to the DiT step being timed
Values: normal * 0.02 (norm weights 1).
"""
import argparse
import os

import torch
from safetensors.torch import save_file

from official_wan import import_official



def official_modules():
    return import_official("wan.modules.model"), import_official("wan.modules.vae")


def randomize(shapes, dtype, gen):
    out = {}
    for name, shape in shapes.items():
        if "norm" in name and name.endswith(".weight") or name.endswith(".gamma"):
            out[name] = torch.ones(shape, dtype=dtype)
        else:
            out[name] = (torch.randn(shape, generator=gen) * 0.02).to(dtype)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--dtype", default="f16", choices=["f16", "bf16"])
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    dtype = torch.float16 if args.dtype == "f16" else torch.bfloat16
    gen = torch.Generator().manual_seed(0)
    model, vae = official_modules()

    with torch.device("meta"):
        dit = model.WanModel(model_type="t2v", patch_size=(1, 2, 2), text_len=512, in_dim=16, dim=1536,
                             ffn_dim=8960, freq_dim=256, text_dim=4096, out_dim=16, num_heads=12, num_layers=30,
                             window_size=(-1, -1), qk_norm=True, cross_attn_norm=True, eps=1e-6)
        shapes = {k: tuple(v.shape) for k, v in dit.state_dict().items()}
    save_file(randomize(shapes, dtype, gen), os.path.join(args.out, f"wan2.1_t2v_1.3B_{args.dtype}.safetensors"))

    vae_path = os.path.join(args.out, "wan_2.1_vae.safetensors")
    if not os.path.exists(vae_path):
        with torch.device("meta"):
            v = vae.WanVAE_(dim=96, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                            temperal_downsample=[False, True, True], dropout=0.0)
            vshapes = {k: tuple(t.shape) for k, t in v.state_dict().items()}
        save_file(randomize(vshapes, torch.float32, gen), vae_path)

    d, inner, ff, vocab, buckets, heads = 4096, 4096, 64, 64, 32, 64
    t5 = {
        "shared.weight": (vocab, d),
        "encoder.block.0.layer.0.SelfAttention.q.weight": (inner, d),
        "encoder.block.0.layer.0.SelfAttention.k.weight": (inner, d),
        "encoder.block.0.layer.0.SelfAttention.v.weight": (inner, d),
        "encoder.block.0.layer.0.SelfAttention.o.weight": (d, inner),
        "encoder.block.0.layer.0.SelfAttention.relative_attention_bias.weight": (buckets, heads),
        "encoder.block.0.layer.0.layer_norm.weight": (d,),
        "encoder.block.0.layer.1.DenseReluDense.wi_0.weight": (ff, d),
        "encoder.block.0.layer.1.DenseReluDense.wi_1.weight": (ff, d),
        "encoder.block.0.layer.1.DenseReluDense.wo.weight": (d, ff),
        "encoder.block.0.layer.1.layer_norm.weight": (d,),
        "encoder.final_layer_norm.weight": (d,),
    }
    save_file(randomize(t5, dtype, gen), os.path.join(args.out, f"umt5_tiny_{args.dtype}.safetensors"))
    print("wrote", sorted(os.listdir(args.out)))


if __name__ == "__main__":
    main()
