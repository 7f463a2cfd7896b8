"""Golden files for kind sched.flow_match_discrete (docs/sampling.md): the official HunyuanVideo
sampler, FlowMatchDiscreteScheduler (Tencent/HunyuanVideo
hyvideo/diffusion/schedulers/scheduling_flow_match_discrete.py), run as hyvideo/inference.py builds
it (FlowMatchDiscreteScheduler(shift=flow_shift, reverse=flow_reverse, solver="euler"),
set_timesteps(N, n_tokens=...)) and as pipeline_hunyuan_video.py steps it
(scheduler.step(noise_pred, t, latents)), on a small latent with random stand-ins for the model
output at each step.

Config: the class's init args (num_train_timesteps, shift, reverse, solver, n_tokens) plus
num_inference_steps. Tensors as sched_flow.py: input.latent, input.model_output.<i>,
output.timesteps (float32), output.sigmas (float32, N + 1), output.sample.<i>.

Usage: /work/venv-golden/bin/python tools/golden/sched_flow_match_discrete.py [out_dir]
  (HUNYUAN_REPO=/work/ref/hunyuan by default)
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hunyuan_reference import load  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "golden")
LATENT_SHAPE = (16, 2, 4, 6)


def make(steps, shift, reverse, seed):
    m = load("hyvideo.diffusion.schedulers.scheduling_flow_match_discrete")
    s = m.FlowMatchDiscreteScheduler(shift=shift, reverse=reverse, solver="euler")
    s.set_timesteps(steps, device="cpu", n_tokens=None)
    g = torch.Generator().manual_seed(seed)
    latent = torch.randn(LATENT_SHAPE, generator=g, dtype=torch.float32)
    outputs = [torch.randn(LATENT_SHAPE, generator=g, dtype=torch.float32) for _ in range(steps)]
    tensors = {"input.latent": latent, "output.timesteps": s.timesteps.clone().contiguous(),
               "output.sigmas": s.sigmas.clone().float().contiguous()}
    x = latent
    for i, t in enumerate(s.timesteps):
        x = s.step(outputs[i], t, x, return_dict=False)[0]
        tensors[f"input.model_output.{i}"] = outputs[i]
        tensors[f"output.sample.{i}"] = x.clone().contiguous()
    config = dict(s.config)
    config = {k: v for k, v in config.items() if not k.startswith("_")}
    config["num_inference_steps"] = steps
    return tensors, config


def main():
    for steps, shift, reverse, seed, name in [(50, 7.0, True, 49, "n50_s7"),
                                              (10, 7.0, True, 41, "n10_s7"),
                                              (6, 5.3, True, 43, "n6_s5p3"),
                                              (5, 17.0, True, 45, "n5_s17"),
                                              (4, 7.0, False, 47, "n4_s7_noreverse")]:
        tensors, config = make(steps, shift, reverse, seed)
        path = os.path.join(OUT, f"sched_flow_match_discrete_{name}.safetensors")
        save_file(tensors, path, metadata={"kind": "sched.flow_match_discrete", "config": json.dumps(config)})
        print("wrote", path, config, [round(t, 3) for t in tensors["output.timesteps"].tolist()])


if __name__ == "__main__":
    main()
