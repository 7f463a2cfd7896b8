"""Key lists of the HunyuanVideo 1.5 DiT at the published size (diffusers' HunyuanVideo15Transformer3DModel
defaults: 54 double-stream blocks, width 2048, 16 heads of 128, 32 + 32 + 1 input channels, out 32,
Qwen2.5-VL's 3584-wide states, the ByT5 mapper, SigLIP's 1152-wide tokens, condition types), built on the
meta device (no memory) by the official HunyuanVideo_1_5_DiffusionTransformer with that config and by
diffusers' class with its defaults. Each: state_dict name -> shape.

Written to tests/hunyuan15/data/dit_keys_{original,diffusers}.json; tests/hunyuan15 checks the engine's
parameter specs and key maps against them.

Usage: HUNYUAN15_REPO=/work/ref/hunyuan15 python tools/golden/hunyuan15_keylists.py [OUT_DIR]
"""
import json
import os
import sys

import torch
from hunyuan15_dit import import_model

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "hunyuan15", "data")

# DiTConfig::published() in the official spelling (the other init args at their defaults).
PUBLISHED = dict(patch_size=[1, 1, 1], in_channels=32, out_channels=32, hidden_size=2048, heads_num=16,
                 mm_double_blocks_depth=54, mm_single_blocks_depth=0, rope_dim_list=[16, 56, 56],
                 text_states_dim=3584, glyph_byT5_v2=True, vision_projection="linear", vision_states_dim=1152,
                 use_cond_type_embedding=True)


def main():
    from diffusers import HunyuanVideo15Transformer3DModel
    mod = import_model()
    os.makedirs(OUT, exist_ok=True)
    with torch.device("meta"):
        official = mod.HunyuanVideo_1_5_DiffusionTransformer(**PUBLISHED)
        diffusers = HunyuanVideo15Transformer3DModel()
    for name, m in (("original", official), ("diffusers", diffusers)):
        keys = {k: list(v.shape) for k, v in m.state_dict().items()}
        path = os.path.join(OUT, f"dit_keys_{name}.json")
        with open(path, "w") as f:
            json.dump(keys, f, indent=0, sort_keys=True)
        print(f"wrote {path}: {len(keys)} keys, {sum(int(torch.Size(s).numel()) for s in keys.values())} parameters")


if __name__ == "__main__":
    main()
