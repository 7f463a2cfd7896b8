#!/usr/bin/env python3
"""Times Wan 2.1 DiT steps and the VAE decode of PyTorch peers on the CPU (vidax-cpp's peers).

Peers (--impl):
  diffusers  diffusers' WanTransformer3DModel / AutoencoderKLWan
  official   the official WanModel (Wan-Video/Wan2.1 wan/modules/model.py, path from $WAN21_REPO,
             default /work/ref/Wan2.1); its CUDA-only flash_attention is replaced by torch's
             scaled_dot_product_attention in the input dtype (the only change; nothing is copied)

Random weights of the real shapes (no checkpoint), the same thread count, shapes and text length
as `vidax bench`; CFG off (one forward per step). Prints one JSON line per measurement with wall
and process CPU time (the machine this ran on is shared: CPU time is the comparable figure), the
step FLOPs counted as vidax bench counts them (linears + attentions; the cross-attention K/V of
the text are NOT in a vidax step but both peers recompute them every forward, which this script
reports separately as cross_kv_flops), and the 1-minute load average.

  /work/pyenv/bin/python bench/peers/diffusers_wan.py --impl diffusers --frames 9 --height 256 \
      --width 256 --threads 2 --precision bf16 --repeats 3
"""
import argparse
import json
import os
import resource
import sys
import time

import torch

from official_wan import import_official

CONFIGS = {
    "wan2.1-t2v-1.3b": dict(dim=1536, ffn=8960, heads=12, layers=30),
    "wan2.1-t2v-14b": dict(dim=5120, ffn=13824, heads=40, layers=40),
}


def step_flops(tokens, text_len, dim, ffn, layers, in_ch=16, out_ch=16, patch=4, freq=256):
    """vidax bench's count (src/models/wan/bench.cpp dit_step_flops): 2 FLOPs per multiply-add."""
    linear = layers * 2 * tokens * (6 * dim * dim + 2 * dim * ffn)
    linear += 2 * tokens * dim * patch * (in_ch + out_ch) + 2 * (freq * dim + dim * dim + 6 * dim * dim)
    attn = layers * 4 * tokens * tokens * dim + layers * 4 * tokens * text_len * dim
    return linear + attn


def load_avg():
    return os.getloadavg()[0]


def official_model_module():
    model = import_official("wan.modules.model")

    def sdpa_attention(q, k, v, q_lens=None, k_lens=None, window_size=(-1, -1), **kw):
        b, lq, n, d = q.shape
        mask = None
        if k_lens is not None:
            keep = torch.arange(k.shape[1])[None, :] < k_lens.view(-1, 1)
            mask = keep[:, None, None, :].expand(b, n, lq, k.shape[1])
        out = torch.nn.functional.scaled_dot_product_attention(
            q.transpose(1, 2), k.transpose(1, 2), v.transpose(1, 2), attn_mask=mask)
        return out.transpose(1, 2).contiguous()

    model.flash_attention = sdpa_attention
    return model


def build(impl, cfg, text_len):
    if impl == "diffusers":
        from diffusers import WanTransformer3DModel
        m = WanTransformer3DModel(num_attention_heads=cfg["heads"], attention_head_dim=cfg["dim"] // cfg["heads"],
                                  ffn_dim=cfg["ffn"], num_layers=cfg["layers"])
        return m.eval(), lambda x, t, ctx: m(x, t, ctx, return_dict=False)
    model = official_model_module()
    m = model.WanModel(model_type="t2v", dim=cfg["dim"], ffn_dim=cfg["ffn"], num_heads=cfg["heads"],
                       num_layers=cfg["layers"], text_len=text_len).eval()

    def run(x, t, ctx):
        lf, lh, lw = x.shape[2:]
        return m([x[0]], t, [ctx[0]], seq_len=lf * (lh // 2) * (lw // 2))
    return m, run


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--impl", default="diffusers", choices=["diffusers", "official"])
    p.add_argument("--model", default="wan2.1-t2v-1.3b", choices=sorted(CONFIGS))
    p.add_argument("--frames", type=int, default=9)
    p.add_argument("--height", type=int, default=256)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"],
                   help="bf16 = torch.autocast(cpu, bfloat16) around the forward, as the reference runs")
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--text-len", type=int, default=512)
    p.add_argument("--steps", type=int, default=1, help="DiT forwards per repeat (0: no DiT)")
    p.add_argument("--vae", action="store_true",
                   help="also time the VAE decode (fp32): diffusers' AutoencoderKLWan or the official WanVAE_")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    cfg = CONFIGS[a.model]
    lf, lh, lw = (a.frames - 1) // 4 + 1, a.height // 8, a.width // 8
    tokens = lf * (lh // 2) * (lw // 2)
    peer = (f"diffusers {__import__('diffusers').__version__}" if a.impl == "diffusers"
            else "official WanModel (sdpa attention)") + f" / torch {torch.__version__}"
    if a.steps > 0:
        model, run = build(a.impl, cfg, a.text_len)
        x = torch.randn(1, 16, lf, lh, lw)
        t = torch.tensor([999.0])
        ctx = torch.randn(1, a.text_len, 4096)
        flops = step_flops(tokens, a.text_len, cfg["dim"], cfg["ffn"], cfg["layers"])
        walls, cpus, loads = [], [], []
        with torch.inference_mode():
            with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.precision == "bf16"):
                run(x[:, :, :1, :2, :2], t, ctx)  # warm-up on one token
                for _ in range(a.repeats * a.steps):
                    w0, c0 = time.perf_counter(), time.process_time()
                    run(x, t, ctx)
                    walls.append(time.perf_counter() - w0)
                    cpus.append(time.process_time() - c0)
                    loads.append(load_avg())
                    print(f"[peer] step {len(walls)}: {walls[-1]:.2f} s wall, {cpus[-1]:.2f} s CPU, "
                          f"load {loads[-1]:.1f}", file=sys.stderr, flush=True)
        med = lambda v: sorted(v)[len(v) // 2]
        print(json.dumps({
            "peer": peer, "stage": "dit_step", "model": a.model, "precision": a.precision,
            "threads": a.threads, "shape": f"{a.width}x{a.height}x{a.frames}", "tokens": tokens,
            "step_seconds_min": min(walls), "step_seconds_median": med(walls),
            "step_cpu_seconds_min": min(cpus), "step_cpu_seconds_median": med(cpus),
            "step_flops": flops, "cross_kv_flops": cfg["layers"] * 2 * 2 * a.text_len * cfg["dim"] ** 2,
            "gflops_per_cpu_second": flops / min(cpus) / 1e9,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
            "load_average": loads,
        }), flush=True)
        del model, run
    if a.vae:
        z = torch.randn(1, 16, lf, lh, lw)
        if a.impl == "diffusers":
            from diffusers import AutoencoderKLWan
            vae = AutoencoderKLWan().eval()
            decode = lambda: vae.decode(z, return_dict=False)
            vae_peer = f"diffusers {__import__('diffusers').__version__}"
        else:
            # The official WanVAE_ with _video_vae's configuration (random weights: no checkpoint),
            # decoded as WanVAE.decode does in fp32 (scale = latent mean and 1 / std).
            vae_mod = import_official("wan.modules.vae")
            vae = vae_mod.WanVAE_(dim=96, z_dim=16, dim_mult=[1, 2, 4, 4], num_res_blocks=2, attn_scales=[],
                                  temperal_downsample=[False, True, True], dropout=0.0).eval()
            scale = [torch.zeros(16), torch.ones(16)]
            decode = lambda: vae.decode(z, scale)
            vae_peer = "official WanVAE_"
        with torch.inference_mode():
            w0, c0 = time.perf_counter(), time.process_time()
            decode()
            dw, dc = time.perf_counter() - w0, time.process_time() - c0
        print(json.dumps({
            "peer": f"{vae_peer} / torch {torch.__version__}", "stage": "vae_decode",
            "shape": f"{a.width}x{a.height}x{a.frames}", "threads": a.threads, "vae_seconds": dw,
            "vae_cpu_seconds": dc, "load_average": load_avg(),
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        }), flush=True)


if __name__ == "__main__":
    main()
