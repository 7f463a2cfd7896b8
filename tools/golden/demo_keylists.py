"""Key lists (state_dict names, dtypes, shapes) of the reference Wan 2.1 modules
at the tiny sizes `vidax make-demo` writes (src/models/wan/presets.cpp,
preset wan2.1-tiny-demo), so tests/pipeline can check that the demo checkpoint
has exactly the official names and shapes.

Usage: WAN21_REPO=/work/ref/Wan2.1 python tools/golden/demo_keylists.py
Writes tests/pipeline/data/demo_{dit,vae,t5}.txt.
"""
import json
import os

import torch
from wan_reference import WAN21_REPO as REPO
from wan_reference import load

OUT = os.path.join(os.path.dirname(__file__), "..", "..", "tests", "pipeline", "data")

attention = load("wan.modules.attention")
model = load("wan.modules.model")
vae = load("wan.modules.vae")
t5 = load("wan.modules.t5")

# Keep in sync with wan2.1-tiny-demo in src/models/wan/presets.cpp.
DIT = dict(model_type="t2v", patch_size=(1, 2, 2), text_len=512, in_dim=16, dim=64, ffn_dim=128, freq_dim=64,
           text_dim=32, out_dim=16, num_heads=2, num_layers=2, window_size=(-1, -1), qk_norm=True,
           cross_attn_norm=True, eps=1e-6)
VAE = dict(dim=4, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
           temperal_downsample=[False, True, True])
T5 = dict(vocab=1000, dim=32, dim_attn=32, dim_ffn=64, num_heads=2, num_layers=2, num_buckets=32, shared_pos=False)


def write(name, module, config):
    path = os.path.join(OUT, name)
    with torch.device("meta"):
        m = module()
    with open(path, "w") as f:
        f.write(f"# {name}: reference state_dict at {json.dumps(config)}\n")
        f.write(f"# torch {torch.__version__}, Wan2.1 code at {REPO}\n")
        for k, v in m.state_dict().items():
            f.write(f"{k}\t{str(v.dtype).replace('torch.', '')}\t{list(v.shape)}\n".replace(" ", ""))
    print("wrote", path)


os.makedirs(OUT, exist_ok=True)
write("demo_dit.txt", lambda: model.WanModel(**DIT), DIT)
write("demo_vae.txt", lambda: vae.WanVAE_(**VAE), VAE)
write("demo_t5.txt", lambda: t5.T5Encoder(**T5, dropout=0.0), T5)
