"""Reference tables for the HunyuanVideo 3-D RoPE builder (src/models/hunyuan/rope.h): the official
get_nd_rotary_pos_embed (hyvideo/modules/posemb_layers.py, Tencent/HunyuanVideo fa14b00) with
use_real=True and theta 256, as hyvideo/inference.py get_rotary_pos_embed calls it, on the published
rope_dim_list [16, 56, 56] and on the tiny goldens' [4, 6, 6]; and diffusers'
HunyuanVideoRotaryPosEmbed on the same grid, which must agree.

Written to tests/hunyuan/data/rope_tables.safetensors: cos.<dims>.<T>x<H>x<W> and sin.<...> [N, head_dim].

Usage: HUNYUAN_REPO=/work/ref/hunyuan python tools/golden/hunyuan_rope.py [OUT_DIR]
"""
import os
import sys

import torch
from safetensors.torch import save_file
from hunyuan_reference import load

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "hunyuan", "data")


def main():
    from diffusers.models.transformers.transformer_hunyuan_video import HunyuanVideoRotaryPosEmbed
    posemb = load("hyvideo.modules.posemb_layers")
    os.makedirs(OUT, exist_ok=True)
    tensors = {}
    for dims, grid in (([16, 56, 56], [3, 6, 10]), ([16, 56, 56], [1, 2, 3]), ([4, 6, 6], [5, 3, 7])):
        cos, sin = posemb.get_nd_rotary_pos_embed(dims, grid, theta=256, use_real=True, theta_rescale_factor=1)
        rope = HunyuanVideoRotaryPosEmbed(patch_size=1, patch_size_t=1, rope_dim=dims, theta=256.0)
        dcos, dsin = rope(torch.zeros(1, 1, *grid))
        assert torch.equal(cos, dcos) and torch.equal(sin, dsin), "diffusers' tables differ from the official"
        key = "x".join(map(str, dims)) + "." + "x".join(map(str, grid))
        tensors["cos." + key] = cos.float().contiguous()
        tensors["sin." + key] = sin.float().contiguous()
    path = os.path.join(OUT, "rope_tables.safetensors")
    save_file(tensors, path, metadata={"reference": "Tencent/HunyuanVideo fa14b00 get_nd_rotary_pos_embed"})
    print("wrote", path, {k: list(v.shape) for k, v in tensors.items()})


if __name__ == "__main__":
    main()
