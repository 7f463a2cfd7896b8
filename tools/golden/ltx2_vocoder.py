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

The LTX-2.3 vocoder, VocoderWithBWE, built by the official VocoderConfigurator.from_metadata from
a nested {"vocoder": {...}, "bwe": {...}} config (the checkpoint metadata's config.vocoder, keys as
the published LTX-2.3 checkpoint spells them: stereo, apply_final_activation false and win_size in
"bwe"; both generators AMP1 / snakebeta, as the configurator requires), __metadata__.config = that
dict:

  ltx2_vocoder_bwe.safetensors      16 -> 48 kHz (x3 skip), hop 4, n_fft 64, B = 1, T = 5 (the
                                    base waveform, 30 samples, is padded to 32 for the mel)
  ltx2_vocoder_bwe_b2.safetensors   16 -> 32 kHz (x2), hop 6, n_fft 32, clamp (not tanh) in the
                                    base vocoder, B = 2, T = 4 (no padding)

MelSTFT's buffers are zeros in the module (the checkpoint carries them), so the script fills them
as trained ones look: stft_fn.forward_basis = the n_fft-point DFT's real rows then its imaginary
rows, each times a periodic Hann window; mel_basis = torchaudio's slaney melscale_fbanks
(transposed to [n_mels, n_freqs]); inverse_basis (read by nothing in the forward) random. All
three are rounded to bf16 and stored as BF16, as the checkpoint stores them. The resampler's
hann-sinc filter is not in the state dict (persistent=False): the engine builds it.
inter.vocoder (the base waveform), inter.mel (the BWE's log-mel input [B, 2, frames, 64]),
inter.residual, inter.skip are the forward's intermediates, recomputed here with the module's own
pieces in the forward's order.

Usage: /work/venv-golden/bin/python tools/golden/ltx2_vocoder.py [--out tests/golden/ltx2]
"""
import argparse
import json
import math
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.environ.get("LTX2_CORE", "/work/ref/ltx2/packages/ltx-core/src"))
from ltx_core.model.audio_vae.model_configurator import VocoderConfigurator  # noqa: E402
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
    scale_params(model)
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


def scale_params(model):
    with torch.no_grad():
        for name, p in model.named_parameters():
            if name.endswith(".alpha") or name.endswith(".beta"):
                p.copy_(0.5 * torch.randn_like(p))
            else:
                p.mul_(1.5)


def fill_mel_stft(mel_stft, n_fft, sample_rate, n_mels):
    import torchaudio

    n_freqs = n_fft // 2 + 1
    n = torch.arange(n_fft, dtype=torch.float64)
    k = torch.arange(n_freqs, dtype=torch.float64)
    angle = 2 * math.pi * torch.outer(k, n) / n_fft
    window = torch.hann_window(n_fft, dtype=torch.float64)
    basis = torch.cat([torch.cos(angle) * window, -torch.sin(angle) * window], 0)  # [2F, n_fft]
    fb = torchaudio.functional.melscale_fbanks(n_freqs, 0.0, sample_rate / 2.0, n_mels, sample_rate,
                                               norm="slaney", mel_scale="slaney")  # [F, M]
    bf = lambda t: t.to(torch.bfloat16).float()  # noqa: E731
    with torch.no_grad():
        mel_stft.stft_fn.forward_basis.copy_(bf(basis).view(2 * n_freqs, 1, n_fft))
        mel_stft.stft_fn.inverse_basis.copy_(bf(0.1 * torch.randn(2 * n_freqs, 1, n_fft)))
        mel_stft.mel_basis.copy_(bf(fb.T.contiguous()))


def make_bwe(path, config, batch, frames, seed):
    torch.manual_seed(seed)
    model = VocoderConfigurator.from_metadata({"config": {"vocoder": config}}).eval()
    scale_params(model)
    with torch.no_grad():  # a residual of the skip's size, so that the final clamp is not everywhere
        model.bwe_generator.conv_post.weight.mul_(0.05)
    bwe = config["bwe"]
    fill_mel_stft(model.mel_stft, bwe["n_fft"], bwe["input_sampling_rate"], bwe["num_mels"])
    x = torch.randn(batch, 2, frames, 64)
    with torch.no_grad():
        y = model(x)
        # The forward's intermediates, by its own steps (VocoderWithBWE.forward).
        wav = model.vocoder(x)
        rem = wav.shape[-1] % model.hop_length
        padded = torch.nn.functional.pad(wav, (0, model.hop_length - rem)) if rem else wav
        mel = model._compute_mel(padded).transpose(2, 3)
        residual = model.bwe_generator(mel)
        skip = model.resampler(padded)
        assert torch.equal(torch.clamp(residual + skip, -1, 1)[..., : y.shape[-1]], y)
    tensors = {}
    for k, v in model.state_dict().items():
        v = v.detach().contiguous()
        tensors[k] = v.to(torch.bfloat16) if k.startswith("mel_stft.") else v.float()
    assert not any(k.startswith("resampler.") for k in tensors)
    tensors["input.x"] = x.contiguous()
    tensors["output"] = y.contiguous()
    for name, t in (("vocoder", wav), ("mel", mel), ("residual", residual), ("skip", skip)):
        tensors["inter." + name] = t.contiguous()
    meta = {"kind": "ltx2.vocoder", "config": json.dumps(config), "generator": "tools/golden/ltx2_vocoder.py",
            "torch": torch.__version__}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes, {len(tensors)} tensors), output {tuple(y.shape)} "
          f"range [{y.min():.3f}, {y.max():.3f}], mel range [{mel.min():.3f}, {mel.max():.3f}]")


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
    gen = {**amp, "stereo": True}
    del gen["output_sampling_rate"]  # the configurator sets both generators' rates from "bwe"
    bwe = {"vocoder": gen,
           "bwe": {**gen, "upsample_rates": [3, 4], "upsample_kernel_sizes": [5, 8], "upsample_initial_channel": 8,
                   "apply_final_activation": False, "input_sampling_rate": 16000, "output_sampling_rate": 48000,
                   "hop_length": 4, "n_fft": 64, "win_size": 64, "num_mels": 64}}
    make_bwe(os.path.join(args.out, "ltx2_vocoder_bwe.safetensors"), bwe, 1, 5, 4)
    bwe2 = {"vocoder": {**gen, "use_tanh_at_final": False},
            "bwe": {**bwe["bwe"], "upsample_rates": [4, 3], "upsample_kernel_sizes": [8, 5],
                    "resblock_kernel_sizes": [3], "resblock_dilation_sizes": [[1, 3, 5]],
                    "output_sampling_rate": 32000, "hop_length": 6, "n_fft": 32, "win_size": 32}}
    make_bwe(os.path.join(args.out, "ltx2_vocoder_bwe_b2.safetensors"), bwe2, 2, 4, 5)


if __name__ == "__main__":
    main()
