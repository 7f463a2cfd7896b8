"""Golden files for the LTX-2 vocoder (kind ltx2.vocoder, docs/models/ltx2.md).

Runs the OFFICIAL ltx_core.model.audio_vae.vocoder.Vocoder (Lightricks/LTX-2, imported from
$LTX2_CORE, default /work/ref/ltx2/packages/ltx-core/src) in float32 on the CPU with a tiny
config (16 initial channels, two upsample stages, two resblock kernels) and seeded random
weights, on a short stereo mel input [B, 2, T, 64] (conv_pre takes 128 = 2 x 64 channels).
Each file holds the module's state dict under its official names, input.x (the forward's
argument), output (the waveform [B, 2, T * prod(upsample_rates)]), __metadata__.kind and
__metadata__.config (the Vocoder init args).

  ltx2_vocoder_tiny.safetensors     resblock "1", tanh at the end, bias in conv_post, B = 1
  ltx2_vocoder_clamp_b2.safetensors resblock "1", clamp at the end, no conv_post bias, B = 2
  ltx2_vocoder_amp_snakebeta.safetensors  resblock "AMP1" (BigVGAN v2, LTX-2.3), activation snakebeta
  ltx2_vocoder_amp_snake.safetensors      resblock "AMP1", activation snake, apply_final_activation false

The AMP1 files also hold the kaiser-sinc filter buffers (persistent in the state dict); the Snake
log-scale alpha / beta are drawn N(0, 0.5) (their init is 0).

Usage: /work/venv-golden/bin/python tools/golden/ltx2_vocoder.py [--out tests/golden/ltx2]
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.environ.get("LTX2_CORE", "/work/ref/ltx2/packages/ltx-core/src"))
from ltx_core.model.audio_vae.vocoder import Vocoder  # noqa: E402

BASE = {
    "resblock_kernel_sizes": [3, 5],
    "upsample_rates": [2, 3],
    "upsample_kernel_sizes": [4, 7],
    "resblock_dilation_sizes": [[1, 3, 5], [1, 2, 4]],
    "upsample_initial_channel": 16,
    "resblock": "1",
    "output_sampling_rate": 24000,
}


def make(path, config, batch, frames, seed):
    torch.manual_seed(seed)
    model = Vocoder(**config).eval()
    # Scale the default (small) init up so the residual branches and the final tanh are not trivial.
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".alpha") or name.endswith(".beta"):
                p.copy_(0.5 * torch.randn_like(p))
            else:
                p.mul_(1.5)
    x = torch.randn(batch, 2, frames, 64)
    with torch.no_grad():
        y = model(x)
    tensors = {k: v.detach().contiguous().float() for k, v in model.state_dict().items()}
    tensors["input.x"] = x.contiguous()
    tensors["output"] = y.contiguous()
    meta = {"kind": "ltx2.vocoder", "config": json.dumps(config), "generator": "tools/golden/ltx2_vocoder.py",
            "torch": torch.__version__}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors), output {tuple(y.shape)} "
          f"range [{y.min():.3f}, {y.max():.3f}]")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/ltx2")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    make(os.path.join(args.out, "ltx2_vocoder_tiny.safetensors"), BASE, 1, 6, 0)
    make(os.path.join(args.out, "ltx2_vocoder_clamp_b2.safetensors"),
         {**BASE, "use_tanh_at_final": False, "use_bias_at_final": False}, 2, 5, 1)
    amp = {**BASE, "resblock": "AMP1", "activation": "snakebeta"}
    make(os.path.join(args.out, "ltx2_vocoder_amp_snakebeta.safetensors"), amp, 1, 6, 2)
    make(os.path.join(args.out, "ltx2_vocoder_amp_snake.safetensors"),
         {**amp, "activation": "snake", "apply_final_activation": False}, 2, 4, 3)


if __name__ == "__main__":
    main()
