#!/usr/bin/env python3
"""Times the Wan 2.1 DiT step and VAE decode of vidax (PyPI `vidax`, JAX/Flax) on the CPU.

vidax is vidax-cpp's named peer. This script installs nothing: run it from a virtual environment
with `pip install vidax==0.1.0` (JAX CPU wheels come with it). Random weights of the real shapes
(normal * 0.02 in the chosen dtype; timing does not depend on the values), the same shapes and
text length (512) as `vidax bench`, CFG off (one forward per step). XLA picks its own thread
count (all cores of this 2-core machine); the process CPU time is reported next to the wall time.

  /work/vidaxenv/bin/python bench/peers/vidax_jax_wan.py --frames 9 --height 256 --width 256 \
      --precision bf16 --repeats 3 [--vae]

One JSON line per measurement. The first call of each jitted function (compilation) is reported
separately as `compile_seconds` and never counted as a step.
"""
import argparse
import json
import os
import resource
import time

import jax
import jax.numpy as jnp
import numpy as np

from vidax.core.rope3d import create_rope3d_freqs
from vidax.models.wan import WanDiT, WanVAEDecoder
from vidax.models.wan.wan2_1.configs import T2V_1_3B_CONFIG, T2V_14B_CONFIG

CONFIGS = {"wan2.1-t2v-1.3b": T2V_1_3B_CONFIG, "wan2.1-t2v-14b": T2V_14B_CONFIG}


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def peak_rss_bytes():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024


def random_params(module, dtype, *args, seed=0):
    """Random parameters of the module's real shapes without running its initialisers."""
    shapes = jax.eval_shape(lambda: module.init(jax.random.PRNGKey(0), *args))
    rng = np.random.default_rng(seed)

    def fill(s):
        a = (rng.standard_normal(s.shape, dtype=np.float32) * 0.02)
        return jnp.asarray(a, dtype=dtype)

    return jax.tree_util.tree_map(fill, shapes)


def timed(fn, *args):
    w0, c0 = time.perf_counter(), cpu_seconds()
    out = fn(*args)
    jax.block_until_ready(out)
    return out, time.perf_counter() - w0, cpu_seconds() - c0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="wan2.1-t2v-1.3b", choices=sorted(CONFIGS))
    ap.add_argument("--frames", type=int, default=9)
    ap.add_argument("--height", type=int, default=256)
    ap.add_argument("--width", type=int, default=256)
    ap.add_argument("--precision", default="bf16", choices=["bf16", "fp32"])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--steps", type=int, default=1, help="DiT steps per repeat (0: skip the DiT)")
    ap.add_argument("--vae", action="store_true", help="also time the VAE decode (fp32)")
    args = ap.parse_args()

    if (args.frames - 1) % 4 or args.height % 16 or args.width % 16:
        raise SystemExit("frames must be 4k+1 and height/width multiples of 16")
    cfg = dict(CONFIGS[args.model])
    dtype = jnp.bfloat16 if args.precision == "bf16" else jnp.float32
    T, H, W = (args.frames - 1) // 4 + 1, args.height // 8, args.width // 8
    tokens = T * (H // 2) * (W // 2)
    base = dict(engine="vidax (JAX) " + __import__("vidax").__version__, jax=jax.__version__,
                model=args.model, precision=args.precision, tokens=tokens,
                shape=f"{args.width}x{args.height}x{args.frames}", cpus=os.cpu_count())

    if args.steps > 0:
        model = WanDiT(**cfg, compute_dtype=dtype)
        head_dim = cfg["dim"] // cfg["num_heads"]
        freqs = create_rope3d_freqs(T, H // 2, W // 2, head_dim)
        rng = np.random.default_rng(1)
        latents = jnp.asarray(rng.standard_normal((1, T, H, W, cfg["in_dim"]), dtype=np.float32), dtype=dtype)
        context = jnp.asarray(rng.standard_normal((1, cfg["text_len"], cfg["text_dim"]), dtype=np.float32), dtype=dtype)
        t = jnp.asarray([999.0], dtype=jnp.float32)
        params = random_params(model, dtype, latents, t, freqs, context)
        step = jax.jit(lambda p, x, tt, c: model.apply(p, x, tt, freqs, c))
        _, w, c = timed(step, params, latents, t, context)
        print(json.dumps(dict(base, stage="dit_compile", compile_seconds=w, compile_cpu_seconds=c)), flush=True)
        walls, cpus = [], []
        for r in range(args.repeats):
            for s in range(args.steps):
                _, w, c = timed(step, params, latents, t, context)
                walls.append(w)
                cpus.append(c)
                print(json.dumps(dict(base, stage="dit_step", repeat=r, step=s, seconds=w, cpu_seconds=c,
                                      load=os.getloadavg()[0])), flush=True)
        print(json.dumps(dict(base, stage="dit_summary", step_seconds_min=min(walls),
                              step_seconds_median=float(np.median(walls)), step_cpu_seconds_min=min(cpus),
                              step_cpu_seconds_median=float(np.median(cpus)), peak_rss_bytes=peak_rss_bytes())),
              flush=True)
        del params, step

    if args.vae:
        vae = WanVAEDecoder()
        z = jnp.asarray(np.random.default_rng(2).standard_normal((1, T, H, W, 16), dtype=np.float32))
        vparams = random_params(vae, jnp.float32, z)
        decode = jax.jit(lambda p, zz: vae.apply(p, zz))
        out, w, c = timed(decode, vparams, z)  # compile + first run
        print(json.dumps(dict(base, stage="vae_compile_and_first", seconds=w, cpu_seconds=c,
                              out_shape=list(out.shape))), flush=True)
        _, w, c = timed(decode, vparams, z)
        print(json.dumps(dict(base, stage="vae_decode", seconds=w, cpu_seconds=c, load=os.getloadavg()[0],
                              peak_rss_bytes=peak_rss_bytes())), flush=True)


if __name__ == "__main__":
    main()
