"""The bf16 GEMM y = x W^T + b of the DiT shapes in a peer framework, timed like
bench_kernels' gemm-bf16 rows (weights made once, 2 warm-up calls, best of --reps,
process CPU time on one thread or wall clock), so the two can be run side by side:

  OMP_NUM_THREADS=1 build/bench/bench_kernels --only gemm-bf16 --clock cpu --reps 5
  /work/pyenv/bin/python bench/peers/gemm_peer.py --impl torch --threads 1 --clock cpu --reps 5
  /work/vidaxenv/bin/python bench/peers/gemm_peer.py --impl jax --clock cpu --reps 5

torch: torch.nn.functional.linear on bf16 CPU tensors (oneDNN's matmul inside torch).
jax: a jitted x @ W.T + b on bf16 arrays (XLA's CPU dot), what vidax runs; set
XLA_FLAGS=--xla_cpu_multi_thread_eigen=false with --clock cpu for one thread."""
import argparse
import time

# The shapes of bench_kernels' default gemm-bf16 rows (Wan 2.1 1.3B and 14B).
SHAPES = [
    ("1.3B qkvo, 768 tok", 768, 1536, 1536),
    ("1.3B qkvo, 3120 tok", 3120, 1536, 1536),
    ("1.3B qkvo, 7800 tok", 7800, 1536, 1536),
    ("1.3B ffn up", 3120, 1536, 8960),
    ("1.3B ffn down", 3120, 8960, 1536),
    ("14B ffn up, 768 tok", 768, 5120, 13824),
    ("14B ffn down, 768 tok", 768, 13824, 5120),
]


def torch_linear(threads):
    import torch
    torch.set_num_threads(threads)
    print(f"torch {torch.__version__}, {threads} thread(s), cpu capability "
          f"{torch.backends.cpu.get_cpu_capability()}, mkldnn {torch.backends.mkldnn.is_available()}")

    def make(M, K, N):
        g = torch.Generator().manual_seed(0)
        x = torch.randn(M, K, generator=g).bfloat16()
        w = (torch.randn(N, K, generator=g) * K ** -0.5).bfloat16()
        b = torch.randn(N, generator=g).bfloat16()
        return lambda: torch.nn.functional.linear(x, w, b)
    return make


def jax_linear():
    import jax
    import jax.numpy as jnp
    print(f"jax {jax.__version__} on {jax.devices()[0].platform}")
    f = jax.jit(lambda x, w, b: x @ w.T + b)

    def make(M, K, N):
        k1, k2, k3 = jax.random.split(jax.random.PRNGKey(0), 3)
        x = jax.random.normal(k1, (M, K), jnp.bfloat16)
        w = (jax.random.normal(k2, (N, K), jnp.float32) * K ** -0.5).astype(jnp.bfloat16)
        b = jax.random.normal(k3, (N,), jnp.bfloat16)
        return lambda: f(x, w, b).block_until_ready()
    return make


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--impl", choices=["torch", "jax"], required=True)
    ap.add_argument("--threads", type=int, default=1, help="torch intra-op threads")
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--clock", choices=["cpu", "wall"], default="cpu",
                    help="cpu: the process's CPU time (meant for one thread), as bench_kernels --clock cpu")
    args = ap.parse_args()
    if args.reps < 1:
        ap.error("--reps must be at least 1")
    clock = time.process_time if args.clock == "cpu" else time.perf_counter
    make = torch_linear(args.threads) if args.impl == "torch" else jax_linear()
    print(f"{'GEMM y = x W^T + b':<26}{'M':>7}{'K':>7}{'N':>7}{'GFLOP/s':>11}")
    for name, M, K, N in SHAPES:
        run = make(M, K, N)
        run()
        run()
        best = float("inf")
        for _ in range(args.reps):
            t0 = clock()
            run()
            best = min(best, clock() - t0)
        print(f"{name:<26}{M:>7}{K:>7}{N:>7}{2.0 * M * K * N / best / 1e9:>11.1f}", flush=True)


if __name__ == "__main__":
    main()
