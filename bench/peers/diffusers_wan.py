#!/usr/bin/env python3
"""Times diffusers' Wan 2.1 DiT step and VAE decode on the CPU (a vidax-cpp peer).

Random weights of the real shapes (no checkpoint), the same thread count,
shapes and text length as `vidax bench`. Prints one JSON line per measurement.

  /work/pyenv/bin/python bench/peers/diffusers_wan.py --frames 9 --height 256 --width 256 \
      --threads 2 --precision fp32 --repeats 2
"""
import argparse
import json
import resource
import time

import torch
from diffusers import AutoencoderKLWan, WanTransformer3DModel

CONFIGS = {
    "wan2.1-t2v-1.3b": dict(num_attention_heads=12, attention_head_dim=128, ffn_dim=8960, num_layers=30),
    "wan2.1-t2v-14b": dict(num_attention_heads=40, attention_head_dim=128, ffn_dim=13824, num_layers=40),
}


def dit_flops(tokens, text_len, dim, ffn, layers, in_ch=16, patch=4):
    """Matmul + attention FLOPs of one DiT forward (2 per multiply-add)."""
    per_block = (
        2 * tokens * dim * dim * 4  # self-attn q, k, v, o
        + 2 * 2 * tokens * tokens * dim  # scores + weighted sum
        + 2 * tokens * dim * dim * 2  # cross-attn q, o
        + 2 * text_len * dim * dim * 2  # cross-attn k, v
        + 2 * 2 * tokens * text_len * dim  # cross scores + sum
        + 2 * tokens * dim * ffn * 2  # FFN
    )
    return layers * per_block + 2 * tokens * dim * in_ch * patch * 2


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--model", default="wan2.1-t2v-1.3b", choices=sorted(CONFIGS))
    p.add_argument("--frames", type=int, default=9)
    p.add_argument("--height", type=int, default=256)
    p.add_argument("--width", type=int, default=256)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--precision", default="fp32", choices=["fp32", "bf16"])
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--text-len", type=int, default=512)
    p.add_argument("--vae", action="store_true", help="also time the VAE decode")
    a = p.parse_args()
    torch.set_num_threads(a.threads)
    torch.manual_seed(0)
    cfg = CONFIGS[a.model]
    with torch.device("cpu"):
        model = WanTransformer3DModel(**cfg).eval()
    lf, lh, lw = (a.frames - 1) // 4 + 1, a.height // 8, a.width // 8
    x = torch.randn(1, 16, lf, lh, lw)
    t = torch.tensor([999.0])
    ctx = torch.randn(1, a.text_len, 4096)
    tokens = lf * (lh // 2) * (lw // 2)
    dim = cfg["num_attention_heads"] * cfg["attention_head_dim"]
    flops = dit_flops(tokens, a.text_len, dim, cfg["ffn_dim"], cfg["num_layers"])
    times = []
    with torch.inference_mode():
        for _ in range(a.repeats):
            t0 = time.perf_counter()
            if a.precision == "bf16":
                with torch.autocast("cpu", dtype=torch.bfloat16):
                    model(x, t, ctx, return_dict=False)
            else:
                model(x, t, ctx, return_dict=False)
            times.append(time.perf_counter() - t0)
    times.sort()
    print(json.dumps({
        "peer": f"diffusers {__import__('diffusers').__version__} / torch {torch.__version__}",
        "stage": "dit_step", "model": a.model, "precision": a.precision, "threads": a.threads,
        "shape": f"{a.width}x{a.height}x{a.frames}", "tokens": tokens,
        "step_seconds_min": times[0], "step_seconds_median": times[len(times) // 2],
        "step_flops": flops, "gflops": flops / times[0] / 1e9,
        "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
    }), flush=True)
    if a.vae:
        del model
        vae = AutoencoderKLWan().eval()
        z = torch.randn(1, 16, lf, lh, lw)
        with torch.inference_mode():
            t0 = time.perf_counter()
            vae.decode(z, return_dict=False)
            dt = time.perf_counter() - t0
        print(json.dumps({
            "peer": f"diffusers {__import__('diffusers').__version__}", "stage": "vae_decode",
            "shape": f"{a.width}x{a.height}x{a.frames}", "threads": a.threads, "vae_seconds": dt,
            "peak_rss_bytes": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024,
        }), flush=True)


if __name__ == "__main__":
    main()
