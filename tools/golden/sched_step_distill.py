"""Golden file for kind sched.flow_step_distill (docs/lora.md): LightX2V's
WanStepDistillScheduler, the sampler of its Wan2.1 StepDistill-CfgDistill models
and LoRAs (ModelTC/LightX2V lightx2v/models/schedulers/wan/step_distill/scheduler.py,
settings of configs/distill/wan21/wan_t2v_distill_lora_4step_cfg.json), restated
here in torch because LightX2V itself needs CUDA to import:

  sigmas    = linspace(1, 0, 1001, float32)[:-1], shifted s*x / (1 + (s-1)*x) in float32
  picked    = sigmas[1000 - t] for t in denoising_step_list ([1000, 750, 500, 250])
  timesteps = picked * 1000 (float32)
  step i    x0 = x - sigma_i * v; unless last: x = (1 - sigma_{i+1}) * x0 + sigma_{i+1} * randn
            (the noise from a CPU generator seeded with generator_seed: the scheduler's
            own generator, as its earlier revisions draw it; the current one uses
            torch.randn_like, i.e. the global generator)

Tensors as sched_flow.py: input.latent, input.model_output.<i>, output.timesteps,
output.sigmas (with the final 0 appended), output.sample.<i>.

Usage: /work/venv-golden/bin/python tools/golden/sched_step_distill.py [out_dir]
"""
import json
import os
import sys

import torch
from safetensors.torch import save_file

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, "..", "..", "tests", "golden")
LATENT_SHAPE = (16, 2, 4, 6)


def make(steps_list, shift, seed):
    T = 1000
    g = torch.Generator().manual_seed(seed)
    latent = torch.randn(LATENT_SHAPE, generator=g, dtype=torch.float32)
    outputs = [torch.randn(LATENT_SHAPE, generator=g, dtype=torch.float32) for _ in steps_list]
    table = torch.linspace(1.0, 0.0, T + 1)[:-1]
    table = shift * table / (1 + (shift - 1) * table)
    idx = [T - t for t in steps_list]
    sigmas = table[idx]
    timesteps = sigmas * T
    noise_gen = torch.Generator().manual_seed(seed + 1)
    x, samples = latent, []
    for i in range(len(steps_list)):
        x0 = x.float() - sigmas[i].item() * outputs[i].float()
        if i < len(steps_list) - 1:
            s_next = sigmas[i + 1].item()
            noise = torch.randn(x0.shape, dtype=torch.float32, generator=noise_gen)
            x0 = (1 - s_next) * x0 + s_next * noise
        x = x0
        samples.append(x)
    config = {"num_inference_steps": len(steps_list), "shift": shift, "num_train_timesteps": T,
              "denoising_step_list": steps_list, "generator_seed": seed + 1}
    tensors = {"input.latent": latent, "output.timesteps": timesteps.contiguous(),
               "output.sigmas": torch.cat([sigmas, torch.zeros(1)]).contiguous()}
    for i in range(len(steps_list)):
        tensors[f"input.model_output.{i}"] = outputs[i]
        tensors[f"output.sample.{i}"] = samples[i].contiguous()
    return tensors, config


def main():
    for steps_list, shift, seed, name in [([1000, 750, 500, 250], 5.0, 31, "n4_s5"),
                                          ([1000, 937, 833, 625], 8.0, 33, "n4_s8_custom")]:
        tensors, config = make(steps_list, shift, seed)
        path = os.path.join(OUT, f"sched_flow_step_distill_{name}.safetensors")
        save_file(tensors, path, metadata={"kind": "sched.flow_step_distill", "config": json.dumps(config)})
        print("wrote", path, [round(t, 3) for t in tensors["output.timesteps"].tolist()])


if __name__ == "__main__":
    main()
