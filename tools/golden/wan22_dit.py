#!/usr/bin/env python3
"""Golden files for the Wan 2.2 DiT (kind wan.dit, model_type ti2v, per-token timesteps).

Runs the official WanModel of Wan-Video/Wan2.2 (wan/modules/model.py, from $WAN22_REPO; its
flash_attention replaced by the fp32 CPU attention of wan_dit.py) on tiny random configurations:

  tests/golden/wan22_dit_ti2v_tiny.safetensors  B = 1, input.t [1, L]: the first latent frame's
                                                tokens at t = 0 (textimage2video.py's i2v: mask2's
                                                first frame zero, temp_ts = mask2[0][0][:, ::2, ::2] * t)
  tests/golden/wan22_dit_ti2v_b2.safetensors    B = 2, input.t [2, L]: one sample image-conditioned,
                                                one all at its t (t2v's per-token form)
  tests/golden/wan22_dit_ti2v_t1d.safetensors   B = 1, input.t [1] (WanModel expands it per token)

inter.* = outputs of time_embedding ([B, L, dim]), time_projection ([B, L, 6 dim]), text_embedding,
blocks.<i>, head.head (as "head"), patch_embedding (B = 1).

Usage: WAN22_REPO=/path/to/Wan2.2 python tools/golden/wan22_dit.py [out_dir]
"""
import json
import os
import sys

import torch

import wan_reference

wan_reference.use_wan22()
import wan_dit  # noqa: E402  (its helpers; load() now reads Wan 2.2)

OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..", "..", "tests", "golden")

TINY = dict(model_type="ti2v", patch_size=[1, 2, 2], text_len=16, in_dim=6, dim=48, ffn_dim=96, freq_dim=32,
            text_dim=40, out_dim=6, num_heads=2, num_layers=2, window_size=[-1, -1], qk_norm=True,
            cross_attn_norm=True, eps=1e-6)


def per_token_t(x_shape, patch, t, image):
    """temp_ts of textimage2video.py for one sample: mask2 (ones; first latent frame zero when an
    image conditions it), [:, ::2, ::2] (the patch grid), times t, flattened in token order."""
    c, f, h, w = x_shape
    mask2 = torch.ones(x_shape)
    if image:
        mask2[:, 0] = 0
    return (mask2[0][:, ::patch[1], ::patch[2]] * torch.tensor([t])).flatten()


def golden(model_mod, name, cfg, x_shape, ctx_lens, t_rows, seed):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = model_mod.WanModel(**cfg).eval()
    wan_dit.randomize(model, gen)
    batch = len(ctx_lens)
    xs = [torch.randn(x_shape, generator=gen) for _ in range(batch)]
    ctxs = [torch.randn(n, cfg["text_dim"], generator=gen) for n in ctx_lens]
    t = t_rows
    pt, ph, pw = cfg["patch_size"]
    seq_len = (x_shape[1] // pt) * (x_shape[2] // ph) * (x_shape[3] // pw)
    inter = {}
    hooks = ["time_embedding", "time_projection", "text_embedding", "head.head"] + \
        [f"blocks.{i}" for i in range(cfg["num_layers"])]
    if batch == 1:
        hooks.append("patch_embedding")
    wan_dit.add_hooks(model, hooks, inter)
    with torch.no_grad():
        out = model(xs, t=t, context=ctxs, seq_len=seq_len)
    tensors = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    if batch == 1:
        tensors.update({"input.x": xs[0], "input.context": ctxs[0], "output": out[0]})
    else:
        tensors.update({"input.x": torch.stack(xs), "input.context": torch.stack(ctxs), "output": torch.stack(out)})
    tensors["input.t"] = t
    for k, v in inter.items():
        tensors["inter." + ("head" if k == "head.head" else k)] = v
    wan_dit.save(os.path.join(OUT, name), tensors,
                 {"kind": "wan.dit", "config": json.dumps(cfg), "generator": "tools/golden/wan22_dit.py"})


def main():
    torch.set_num_threads(2)
    model_mod = wan_dit.import_wan_model()
    x_shape = [6, 3, 4, 6]  # latent grid 3 x 2 x 3 = 18 tokens
    p = TINY["patch_size"]
    golden(model_mod, "wan22_dit_ti2v_tiny.safetensors", TINY, x_shape, [5],
           per_token_t(x_shape, p, 700.0, image=True).unsqueeze(0), seed=31)
    golden(model_mod, "wan22_dit_ti2v_b2.safetensors", dict(TINY, num_layers=1, qk_norm=False), x_shape, [7, 7],
           torch.stack([per_token_t(x_shape, p, 937.0, image=True), per_token_t(x_shape, p, 3.0, image=False)]),
           seed=32)
    golden(model_mod, "wan22_dit_ti2v_t1d.safetensors", dict(TINY, num_layers=1), x_shape, [4],
           torch.tensor([500.0]), seed=33)


if __name__ == "__main__":
    main()
