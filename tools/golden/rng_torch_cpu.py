"""Golden file for kind `rng.torch_cpu` (DESIGN.md par. 4): torch.manual_seed(seed);
torch.randn(shape, dtype=dtype) on the CPU, for the sizes that exercise every path
of torch's CPU normal kernel (numel < 16: double Box-Muller with a cached spare;
numel >= 16: 16-blocks with the redrawn tail; float64 / float16 / bfloat16), plus
consecutive draws on one seed (generator state carried over).

Tensor names:
  output.randn.<seed>.<AxBxC>.<dtype>          fresh manual_seed(seed), one randn
  output.randn_seq.<seed>.<i>.<AxBxC>.<dtype>  manual_seed(seed) once, then call i
                                               (0-based) of the sequence listed in
                                               config["sequences"][<seed>]
bf16 and f16 results are stored as F32 (exact).

Usage: python tools/golden/rng_torch_cpu.py [out.safetensors]
       ATEN_CPU_CAPABILITY=default ... --kernel default   (the scalar libm kernel)
Runs under torch 2.15 (/work/pyenv, requirements.txt) and torch 1.13.1 (its own
env, requirements-torch113.txt), e.g.
  /work/torch113env/bin/python tools/golden/rng_torch_cpu.py tests/golden/rng_torch_cpu_v1_13.safetensors \
      --extra-seed 3 --extra-seed 9
  ATEN_CPU_CAPABILITY=default /work/torch113env/bin/python tools/golden/rng_torch_cpu.py \
      tests/golden/rng_torch_cpu_v1_13_default.safetensors --kernel default --extra-seed 3 --extra-seed 9
config["torch_version"] records the torch that made the file.
"""
import argparse
import json
import os

import torch
from safetensors.torch import save_file

DTYPES = {"float32": torch.float32, "float64": torch.float64,
          "float16": torch.float16, "bfloat16": torch.bfloat16}
SHAPES = [(1,), (7,), (15,), (16,), (17,), (31,), (100,), (1001,), (2, 3), (4, 4), (2, 3, 5),
          (16, 3, 6, 10), (16, 2, 4, 6)]
SEEDS = [0, 42, 2**32 + 5, 2**63 - 1]
# Consecutive calls on one seed: shapes and dtypes chosen to cross the paths
# (a small call leaves a spare normal cached, a large one keeps it, the next
# small call uses it first).
SEQUENCES = {
    42: [((5,), "float32"), ((33,), "float32"), ((3,), "float32"), ((17,), "float64"),
         ((2, 9), "bfloat16"), ((1,), "float64"), ((16, 2, 4, 6), "float32")],
    7: [((16, 3, 6, 10), "float32"), ((16, 3, 6, 10), "float32")],
}


def cpu_capability():
    """The CPU kernel build torch dispatches to: "DEFAULT", "AVX2", "AVX512", ..."""
    cpu = getattr(torch.backends, "cpu", None)
    if cpu is not None and hasattr(cpu, "get_cpu_capability"):
        return cpu.get_cpu_capability()
    # torch < 2.0 has no torch.backends.cpu; its build report names the capability
    # ("CPU capability usage: AVX2", "NO AVX" for ATEN_CPU_CAPABILITY=default).
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage:" in line:
            cap = line.split(":", 1)[1].strip()
            return "DEFAULT" if cap == "NO AVX" else cap
    raise SystemExit("cannot tell which CPU capability torch runs with")


def shape_name(shape):
    return "x".join(str(s) for s in shape)


def main():
    ap = argparse.ArgumentParser()
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("out", nargs="?", default=os.path.join(here, "../../tests/golden/rng_torch_cpu.safetensors"))
    ap.add_argument("--kernel", default="avx2", choices=["avx2", "default"],
                    help="which torch CPU kernel build this run used (set ATEN_CPU_CAPABILITY=default for 'default')")
    ap.add_argument("--extra-seed", type=int, action="append", default=[],
                    help="seed added to SEEDS for this file (the v1_13 files add 3 and 9: their small float64 "
                         "draws differ between 1.13's log(1 - u) and 2.15's log1p(-u), which SEEDS' draws do not)")
    args = ap.parse_args()
    seeds = SEEDS + [s for s in args.extra_seed if s not in SEEDS]
    cap = cpu_capability()
    if (args.kernel == "default") != (cap == "DEFAULT"):
        raise SystemExit(f"--kernel {args.kernel} but torch runs with CPU capability {cap}")

    tensors = {}
    for seed in seeds:
        for shape in SHAPES:
            for dname, dt in DTYPES.items():
                torch.manual_seed(seed)
                x = torch.randn(shape, dtype=dt)
                store = x.float() if dt in (torch.float16, torch.bfloat16) else x
                tensors[f"output.randn.{seed}.{shape_name(shape)}.{dname}"] = store.contiguous()
    for seed, seq in SEQUENCES.items():
        torch.manual_seed(seed)
        for i, (shape, dname) in enumerate(seq):
            x = torch.randn(shape, dtype=DTYPES[dname])
            store = x.float() if x.dtype in (torch.float16, torch.bfloat16) else x
            tensors[f"output.randn_seq.{seed}.{i}.{shape_name(shape)}.{dname}"] = store.contiguous()

    version = torch.__version__.split("+")[0]
    config = {"torch_version": version, "cpu_kernel": args.kernel, "cpu_capability": cap, "seeds": seeds,
              "sequences": {str(s): [[list(sh), d] for sh, d in seq] for s, seq in SEQUENCES.items()}}
    save_file(tensors, args.out, metadata={"kind": "rng.torch_cpu", "config": json.dumps(config)})
    print(f"wrote {len(tensors)} tensors to {args.out} (torch {torch.__version__}, capability {cap})")


if __name__ == "__main__":
    main()
