"""Golden file (kind `sched.torch_scalar_math`) for the float32 scalar math the
samplers' coefficients use: torch.log / torch.exp / torch.expm1 on float32 CPU
tensors (torch's x86 kernels: MKL VML for log and exp, SLEEF for expm1).
Inputs are kept where the outputs are finite (the parity comparison rejects
non-finite values).

Tensors: input.log / output.log, input.exp / output.exp, input.expm1 / output.expm1.
Each output is computed both on the whole vector and element by element as
0-dim tensors (how the schedulers call them); the script checks they agree.

Usage: python tools/golden/sched_torch_math.py [out.safetensors]
"""
import json
import os
import sys

import numpy as np
import torch
from safetensors.torch import save_file


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "../../tests/golden/sched_torch_scalar_math.safetensors")
    rs = np.random.RandomState(0)
    n = 6000
    inputs = {
        # log: sigmas and 1 - sigma in (0, 1], log-uniform down to 1e-7, plus a wider range
        "log": np.concatenate([rs.uniform(0, 1, n), 10 ** rs.uniform(-7, 0, n), 10 ** rs.uniform(-30, 30, n // 2),
                               [1.0, 0.5, 0.75, 1.5, 1e-38, 3.4e38]]),
        # exp / expm1: -h and hh in the solvers, negative and small; plus both tails
        "exp": np.concatenate([rs.uniform(-6, 0, n), rs.uniform(-1e-3, 1e-3, n // 2), rs.uniform(-120, 88, n // 2),
                               [0.0, -0.0, 1.0, -1.0]]),
        "expm1": np.concatenate([rs.uniform(-6, 0, n), rs.uniform(-1e-3, 1e-3, n // 2), rs.uniform(-20, 88, n // 2),
                                 [0.0, -0.0, 1e-8, -1e-8]]),
    }
    tensors = {}
    for name, x in inputs.items():
        x = torch.from_numpy(x.astype(np.float32))
        fn = getattr(torch, name)
        whole = fn(x)
        scalars = torch.stack([fn(v) for v in x])  # 0-dim calls
        assert torch.equal(whole, scalars), name
        assert torch.isfinite(scalars).all(), name
        tensors[f"input.{name}"] = x
        tensors[f"output.{name}"] = scalars
    config = {"torch_version": torch.__version__.split("+")[0], "cpu_capability": torch.backends.cpu.get_cpu_capability()}
    save_file(tensors, out, metadata={"kind": "sched.torch_scalar_math", "config": json.dumps(config)})
    print(f"wrote {out}")


if __name__ == "__main__":
    main()
