"""Golden files for kind sched.ltx2 (docs/sampling.md): the official LTX-2
scheduler, ltx_core.components.schedulers.LTX2Scheduler().execute(...) from
Lightricks/LTX-2 (run with PYTHONPATH=<LTX-2>/packages/ltx-core/src), for several
step counts, token counts (through a latent of that many tokens, or the default
4096 without one) and options; plus one EulerDiffusionStep
(ltx_core.components.diffusion_steps) over those sigmas on a small tensor.

sched_ltx2_schedules.safetensors: config {"cases": [{execute arguments, "tokens"}...]},
  output.sigmas.<i> = execute(**case) (float32).
sched_ltx2_euler.safetensors: config {"schedule": case}, input.sample,
  input.denoised.<i>, output.sample.<i> = EulerDiffusionStep().step(x, denoised_i, sigmas, i).

Usage: PYTHONPATH=/work/ref/ltx2/packages/ltx-core/src /work/venv-golden/bin/python tools/golden/sched_ltx2.py [out_dir]
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file

from ltx_core.components.diffusion_steps import EulerDiffusionStep
from ltx_core.components.schedulers import LTX2Scheduler

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "golden")

# tokens None: no latent passed (default_number_of_tokens); else a [1, 128, tokens, 1, 1] latent.
CASES = [
    {"steps": 40},
    {"steps": 30},
    {"steps": 2},
    {"steps": 8, "tokens": 1536},           # 2 x 24 x 32: a small stage-1 latent
    {"steps": 20, "tokens": 6144},
    {"steps": 25, "tokens": 768, "max_shift": 1.5, "base_shift": 0.5},
    {"steps": 12, "terminal": 0.05},
    {"steps": 10, "stretch": False},
    {"steps": 1, "stretch": False},
    {"steps": 16, "tokens": 4096, "default_number_of_tokens": 1024},  # the latent wins
    {"steps": 9, "default_number_of_tokens": 2048},
]


def run(case):
    args = dict(case)
    tokens = args.pop("tokens", None)
    latent = None if tokens is None else torch.zeros(1, 128, tokens, 1, 1)
    return LTX2Scheduler().execute(latent=latent, **args)


def main():
    tensors, cases = {}, []
    for i, case in enumerate(CASES):
        sig = run(case)
        assert sig.dtype == torch.float32 and sig.numel() == case["steps"] + 1
        tensors[f"output.sigmas.{i}"] = sig.contiguous()
        cases.append(case)
        print(case, [round(v, 6) for v in sig.tolist()[:4]], "...")
    path = os.path.join(OUT, "sched_ltx2_schedules.safetensors")
    save_file(tensors, path, metadata={"kind": "sched.ltx2", "config": json.dumps({"cases": cases})})
    print("wrote", path)

    case = {"steps": 6, "tokens": 1536}
    sigmas = run(case)
    g = torch.Generator().manual_seed(41)
    x = torch.randn((16, 2, 3, 4), generator=g, dtype=torch.float32)
    t = {"input.sample": x.clone(), "output.sigmas": sigmas.contiguous()}
    step = EulerDiffusionStep()
    for i in range(case["steps"]):
        denoised = torch.randn(x.shape, generator=g, dtype=torch.float32)
        x = step.step(x, denoised, sigmas, i)
        t[f"input.denoised.{i}"] = denoised
        t[f"output.sample.{i}"] = x.contiguous()
    path = os.path.join(OUT, "sched_ltx2_euler.safetensors")
    save_file(t, path, metadata={"kind": "sched.ltx2_euler", "config": json.dumps({"schedule": case})})
    print("wrote", path)


if __name__ == "__main__":
    main()
