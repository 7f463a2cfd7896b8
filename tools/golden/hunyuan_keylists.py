"""Key lists of the HunyuanVideo 1.0 DiT at the published size (HYVideo-T/2-cfgdistill: 20 double + 40
single blocks, width 3072, 24 heads, in/out 16, guidance_in; text_states_dim 4096, text_states_dim_2
768), built on the meta device (no memory) by the official HYVideoDiffusionTransformer and by diffusers'
HunyuanVideoTransformer3DModel with its default config (the same model). Each: state_dict name -> shape.

Written to tests/hunyuan/data/dit_keys_{original,diffusers}.json; tests/hunyuan checks the engine's
parameter specs and its diffusers key map against them.

Usage: HUNYUAN_REPO=/work/ref/hunyuan python tools/golden/hunyuan_keylists.py [OUT_DIR]
"""
import json
import os
import sys
import types

import torch
from hunyuan_reference import load

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "hunyuan", "data")


def main():
    from diffusers import HunyuanVideoTransformer3DModel
    models = load("hyvideo.modules.models")
    os.makedirs(OUT, exist_ok=True)
    args = types.SimpleNamespace(text_states_dim=4096, text_states_dim_2=768)
    with torch.device("meta"):
        official = models.HYVideoDiffusionTransformer(args, in_channels=16, out_channels=16,
                                                      **models.HUNYUAN_VIDEO_CONFIG["HYVideo-T/2-cfgdistill"])
        diffusers = HunyuanVideoTransformer3DModel()
    for name, m in (("original", official), ("diffusers", diffusers)):
        keys = {k: list(v.shape) for k, v in m.state_dict().items()}
        path = os.path.join(OUT, f"dit_keys_{name}.json")
        with open(path, "w") as f:
            json.dump(keys, f, indent=0, sort_keys=True)
        print(f"wrote {path}: {len(keys)} keys, {sum(int(torch.Size(s).numel()) for s in keys.values())} parameters")


if __name__ == "__main__":
    main()
