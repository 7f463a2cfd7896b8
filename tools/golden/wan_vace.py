"""Golden files for Wan VACE (Wan 2.1 wan/modules/vace_model.py, wan/vace.py), run by the
official code in float32 on the CPU.

Kind `wan.dit`, model_type 'vace' (VaceWanModel: the Wan DiT plus vace_blocks at vace_layers,
whose hints are added to those main blocks' outputs times vace_context_scale):
  wan_dit_vace_tiny.safetensors     dim 48, 2 heads, 3 layers, vace_layers [0, 1], vace_in_dim 12,
                                    B = 1, input.vace_context [C_vace,F,H,W], input.vace_context_scale [1] = 0.75
  wan_dit_vace_default_b2.safetensors
                                    vace_layers/vace_in_dim left out (the class defaults: every second
                                    layer, in_dim), qk_norm off, batch 2, no input.vace_context_scale (1.0)
  wan_dit_vace_diffusers_tiny.safetensors
                                    diffusers' WanVACETransformer3DModel (its names and config), its per-layer
                                    control_hidden_states_scale all 0.6 (input.vace_context_scale), the hints as
                                    inter.vace_blocks.<j>.proj_out

Inputs are named after VaceWanModel.forward's arguments: input.x, input.t, input.context,
input.vace_context, input.vace_context_scale. inter.* are module outputs (forward hooks):
the main blocks' blocks.<i> (after the hint is added), vace_blocks.<j>.after_proj (hint j),
vace_blocks.<j> (the carried c of vace block j: the hook takes the first of (c, c_skip)),
vace_patch_embedding (B = 1 only) and those of wan_dit.py.

As wan_dit.py: flash_attention is replaced by an fp32 softmax attention, no autocast, random
weights (VaceWanAttentionBlock zero-inits before_proj/after_proj: randomized here so they matter).

Usage: WAN21_REPO=/work/ref/wan21 python tools/golden/wan_vace.py [OUT_DIR]
"""
import json
import os
import sys

import torch
from wan_dit import add_hooks, fp32_attention, randomize, save
from wan_reference import load

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "golden")


def import_vace_model():
    model = load("wan.modules.model")
    model.flash_attention = fp32_attention  # WanAttentionBlock's attention calls this global
    return load("wan.modules.vace_model")


def vace_dit_golden(vace_model, path, cfg, x_shape, ctx_lens, t_values, seed, scale=None):
    torch.manual_seed(seed)
    gen = torch.Generator().manual_seed(seed)
    model = vace_model.VaceWanModel(**cfg).eval()
    randomize(model, gen)
    batch = len(t_values)
    vace_in = model.vace_in_dim
    xs = [torch.randn(x_shape, generator=gen) for _ in range(batch)]
    cs = [torch.randn([vace_in] + list(x_shape[1:]), generator=gen) for _ in range(batch)]
    ctxs = [torch.randn(n, cfg["text_dim"], generator=gen) for n in ctx_lens]
    t = torch.tensor(t_values, dtype=torch.float32)
    pt, ph, pw = model.patch_size
    seq_len = (x_shape[1] // pt) * (x_shape[2] // ph) * (x_shape[3] // pw)
    hooks = ["time_embedding", "time_projection", "text_embedding", "head.head"]
    hooks += [f"blocks.{i}" for i in range(model.num_layers)]
    hooks += [f"vace_blocks.{j}" for j in range(len(model.vace_layers))]
    hooks += [f"vace_blocks.{j}.after_proj" for j in range(len(model.vace_layers))]
    if batch == 1:
        hooks += ["patch_embedding", "vace_patch_embedding"]  # called once per sample
    inter = {}
    add_hooks(model, hooks, inter)
    kwargs = {} if scale is None else {"vace_context_scale": scale}
    with torch.no_grad():
        out = model(xs, t=t, vace_context=cs, context=ctxs, seq_len=seq_len, **kwargs)
    tensors = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    stack = (lambda v: v[0]) if batch == 1 else torch.stack
    tensors["input.x"] = stack(xs)
    tensors["input.vace_context"] = stack(cs)
    tensors["input.context"] = stack(ctxs)
    tensors["input.t"] = t
    if scale is not None:
        tensors["input.vace_context_scale"] = torch.tensor([scale], dtype=torch.float32)
    tensors["output"] = stack(out)
    for k, v in inter.items():
        tensors["inter." + ("head" if k == "head.head" else k)] = v
    save(path, tensors, {"kind": "wan.dit", "config": json.dumps(cfg)})


def diffusers_vace_golden(path, cfg, x_shape, ctx_len, t_value, seed, scale):
    """diffusers' WanVACETransformer3DModel (its names and config), one scale per vace layer, all `scale`;
    the prompt zero-padded to 512 rows as WanVACEPipeline does."""
    from diffusers import WanVACETransformer3DModel
    gen = torch.Generator().manual_seed(seed)
    model = WanVACETransformer3DModel(**cfg).eval()
    randomize(model, gen)
    x = torch.randn([1] + list(x_shape), generator=gen)
    c = torch.randn([1, cfg["vace_in_channels"]] + list(x_shape[1:]), generator=gen)
    ctx = torch.randn(1, ctx_len, cfg["text_dim"], generator=gen)
    ctx_padded = torch.cat([ctx, ctx.new_zeros(1, 512 - ctx_len, cfg["text_dim"])], dim=1)
    t = torch.tensor([t_value], dtype=torch.float32)
    n = len(cfg["vace_layers"])
    hooks = ["condition_embedder.time_embedder", "condition_embedder.time_proj", "proj_out"]
    hooks += [f"blocks.{i}" for i in range(cfg["num_layers"])] + [f"vace_blocks.{j}.proj_out" for j in range(n)]
    inter = {}
    add_hooks(model, hooks, inter)
    with torch.no_grad():
        out = model(hidden_states=x, timestep=t, encoder_hidden_states=ctx_padded, control_hidden_states=c,
                    control_hidden_states_scale=torch.full([n], scale), return_dict=False)[0]
    tensors = {k: v.detach().contiguous() for k, v in model.state_dict().items()}
    tensors.update({"input.x": x, "input.t": t, "input.context": ctx, "input.vace_context": c,
                    "input.vace_context_scale": torch.tensor([scale], dtype=torch.float32), "output": out})
    tensors.update({"inter." + k: v for k, v in inter.items()})
    save(path, tensors, {"kind": "wan.dit", "config": json.dumps(dict(model.config))})


def main():
    torch.set_num_threads(2)
    vace_model = import_vace_model()
    os.makedirs(OUT, exist_ok=True)
    tiny = dict(model_type="vace", patch_size=[1, 2, 2], text_len=16, in_dim=4, dim=48, ffn_dim=64, freq_dim=32,
                text_dim=40, out_dim=4, num_heads=2, num_layers=3, window_size=[-1, -1], qk_norm=True,
                cross_attn_norm=True, eps=1e-6, vace_layers=[0, 1], vace_in_dim=12)
    vace_dit_golden(vace_model, os.path.join(OUT, "wan_dit_vace_tiny.safetensors"), tiny,
                    x_shape=[4, 3, 4, 6], ctx_lens=[5], t_values=[999.0], seed=11, scale=0.75)
    b2 = dict(tiny, num_layers=3, qk_norm=False, dim=32, ffn_dim=64, num_heads=2, in_dim=3, out_dim=3)
    del b2["vace_layers"], b2["vace_in_dim"]
    vace_dit_golden(vace_model, os.path.join(OUT, "wan_dit_vace_default_b2.safetensors"), b2,
                    x_shape=[3, 2, 4, 4], ctx_lens=[6, 6], t_values=[700.0, 41.0], seed=12)
    dcfg = dict(patch_size=[1, 2, 2], num_attention_heads=2, attention_head_dim=24, in_channels=4, out_channels=4,
                text_dim=40, freq_dim=32, ffn_dim=64, num_layers=3, cross_attn_norm=True,
                qk_norm="rms_norm_across_heads", eps=1e-6, rope_max_seq_len=1024, vace_layers=[0, 2],
                vace_in_channels=12)
    diffusers_vace_golden(os.path.join(OUT, "wan_dit_vace_diffusers_tiny.safetensors"), dcfg, x_shape=[4, 2, 4, 6],
                          ctx_len=5, t_value=500.0, seed=13, scale=0.6)


if __name__ == "__main__":
    main()
