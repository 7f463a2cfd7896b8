"""Golden files for the flow-matching samplers (kinds sched.flow_unipc,
sched.flow_dpmpp, sched.flow_euler; DESIGN.md par. 4), made by running the
reference schedulers on a small latent with random stand-ins for the model
output at each step:

  sched.flow_unipc  Wan2.1 FlowUniPCMultistepScheduler, built as wan/text2video.py
                    does (shift=1 at construction, set_timesteps(N, shift=S))
  sched.flow_dpmpp  Wan2.1 FlowDPMSolverMultistepScheduler with
                    retrieve_timesteps(sigmas=get_sampling_sigmas(N, S))
  sched.flow_euler  diffusers FlowMatchEulerDiscreteScheduler(shift=S).set_timesteps(N)
                    (optionally stochastic_sampling with a seeded CPU generator)

Tensors: input.latent [16,F,H,W], input.model_output.<i>, output.timesteps,
output.sigmas, output.sample.<i> (the sample after step i). Each step is called
the way the reference pipeline calls it (Wan: unsqueeze(0) of the latent).

Usage: WAN21_REPO=/work/ref/Wan2.1 python tools/golden/sched_flow.py [out_dir]
"""
import json
import math
import os
import sys

import torch
from safetensors.torch import save_file
from wan_reference import load

LATENT_SHAPE = (16, 2, 4, 6)


def run(scheduler, timesteps, latent, outputs, wan_layout, generator=None):
    samples = []
    x = latent
    for i, t in enumerate(timesteps):
        v = outputs[i]
        if wan_layout:  # text2video.py: step(noise_pred.unsqueeze(0), t, latents[0].unsqueeze(0))
            x = scheduler.step(v.unsqueeze(0), t, x.unsqueeze(0), return_dict=False, generator=generator)[0].squeeze(0)
        elif generator is not None:
            x = scheduler.step(v, t, x, return_dict=False, generator=generator)[0]
        else:
            x = scheduler.step(v, t, x, return_dict=False)[0]
        samples.append(x.clone())
    return samples


def make_case(kind, steps, shift, seed, **extra):
    g = torch.Generator().manual_seed(seed)
    latent = torch.randn(LATENT_SHAPE, generator=g, dtype=torch.float32)
    outputs = [torch.randn(LATENT_SHAPE, generator=g, dtype=torch.float32) for _ in range(steps)]
    T = 1000
    step_generator = None
    if kind == "sched.flow_unipc":
        m = load("wan.utils.fm_solvers_unipc")
        s = m.FlowUniPCMultistepScheduler(num_train_timesteps=T, shift=1, use_dynamic_shifting=False, **extra)
        s.set_timesteps(steps, device="cpu", shift=shift)
        timesteps = s.timesteps
        config = dict(s.config)
        wan_layout = True
    elif kind == "sched.flow_unipc_diffusers":
        # diffusers' WanPipeline sampler: UniPCMultistepScheduler with flow sigmas; the
        # pipeline calls set_begin_index(0) and steps the batched latent directly.
        from diffusers import UniPCMultistepScheduler
        s = UniPCMultistepScheduler(num_train_timesteps=T, prediction_type="flow_prediction",
                                    use_flow_sigmas=True, flow_shift=shift)
        s.set_timesteps(steps, device="cpu")
        s.set_begin_index(0)
        timesteps = s.timesteps
        config = dict(s.config)
        latent, outputs = latent.unsqueeze(0), [o.unsqueeze(0) for o in outputs]
        wan_layout = False
        kind = "sched.flow_unipc"
    elif kind == "sched.flow_dpmpp":
        m = load("wan.utils.fm_solvers")
        s = m.FlowDPMSolverMultistepScheduler(num_train_timesteps=T, shift=1, use_dynamic_shifting=False, **extra)
        timesteps, _ = m.retrieve_timesteps(s, device="cpu", sigmas=m.get_sampling_sigmas(steps, shift))
        config = dict(s.config)
        wan_layout = True
    elif kind == "sched.flow_euler":
        from diffusers import FlowMatchEulerDiscreteScheduler
        s = FlowMatchEulerDiscreteScheduler(num_train_timesteps=T, shift=shift, **extra)
        s.set_timesteps(steps, device="cpu")
        timesteps = s.timesteps
        config = dict(s.config)
        wan_layout = False
        if extra.get("stochastic_sampling"):
            config["generator_seed"] = seed + 1
            step_generator = torch.Generator().manual_seed(seed + 1)
    else:
        raise ValueError(kind)
    sigmas = s.sigmas.clone()
    samples = run(s, timesteps, latent, outputs, wan_layout, step_generator)

    # Strict JSON: non-finite floats (lambda_min_clipped = -inf) are written as strings.
    config = {k: (str(v) if isinstance(v, float) and not math.isfinite(v) else v)
              for k, v in config.items() if not k.startswith("_") and k != "solver_p"}
    config.update(num_inference_steps=steps, shift=shift, num_train_timesteps=T)
    tensors = {"input.latent": latent, "output.timesteps": timesteps.contiguous(), "output.sigmas": sigmas}
    for i in range(steps):
        tensors[f"input.model_output.{i}"] = outputs[i]
        tensors[f"output.sample.{i}"] = samples[i].contiguous()
    return tensors, config, kind


CASES = [
    ("sched.flow_unipc", 10, 5.0, 1, {}),
    ("sched.flow_unipc", 5, 3.0, 2, {}),
    ("sched.flow_unipc", 50, 5.0, 3, {}),
    # non-default solver options (constructor arguments of the official schedulers)
    ("sched.flow_unipc", 8, 5.0, 11, {"disable_corrector": [0, 3]}),
    ("sched.flow_unipc", 6, 3.0, 12, {"solver_order": 1}),
    ("sched.flow_dpmpp", 6, 3.0, 13, {"solver_order": 1}),
    ("sched.flow_unipc_diffusers", 10, 3.0, 9, {}),
    ("sched.flow_unipc_diffusers", 5, 5.0, 10, {}),
    ("sched.flow_dpmpp", 10, 5.0, 4, {}),
    ("sched.flow_dpmpp", 5, 3.0, 5, {}),
    ("sched.flow_euler", 10, 5.0, 6, {}),
    ("sched.flow_euler", 5, 3.0, 7, {}),
    ("sched.flow_euler", 5, 3.0, 8, {"stochastic_sampling": True}),
]


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(here, "../../tests/golden")
    for kind, steps, shift, seed, extra in CASES:
        tensors, config, file_kind = make_case(kind, steps, shift, seed, **extra)
        name = f"sched_{kind.split('.')[1]}_n{steps}_s{shift:g}" + "".join(
            {"stochastic_sampling": "_stochastic", "disable_corrector": "_nocorr", "solver_order": "_order1"}[k]
            for k in extra)
        path = os.path.join(out_dir, name + ".safetensors")
        save_file(tensors, path, metadata={"kind": file_kind, "config": json.dumps(config, default=str, allow_nan=False)})
        print(f"wrote {path}: {len(tensors)} tensors, timesteps {tensors['output.timesteps'][:6].tolist()}...")


if __name__ == "__main__":
    main()
