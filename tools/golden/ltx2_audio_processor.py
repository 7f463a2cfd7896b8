"""Golden files for the LTX-2 audio front end (kind ltx2.audio_processor, docs/models/ltx2.md).

Runs the OFFICIAL ltx_core.model.audio_vae.ops.AudioProcessor.waveform_to_mel (Lightricks/LTX-2,
imported from $LTX2_CORE, default /work/ref/ltx2/packages/ltx-core/src) in float32 on the CPU:
torchaudio.functional.resample when the waveform's rate differs from target_sample_rate, then
torchaudio's MelSpectrogram (periodic Hann window, center + reflect padding, power 1, slaney mel
scale and norm), log(clamp(., 1e-5)), [B, C, T, n_mels]. torchaudio (2.11.1 against torch 2.15 in
the golden venv) is called for real here: its MelSpectrogram and resample run (checked when this
script was written); nothing of it is re-implemented in this script.

Each file: __metadata__.kind, __metadata__.config (AudioProcessor's init args: target_sample_rate,
mel_bins, mel_hop_length, n_fft), input.audio.waveform [B, C, L] (F32), input.audio.sampling_rate
(one I64: the Audio's rate), output (the mel), inter.resampled (the waveform at the target rate),
inter.mel_transform.mel_scale.fb (the module's slaney filterbank buffer [n_freqs, n_mels], computed
by torchaudio's melscale_fbanks).

  ltx2_audio_processor.safetensors            16 kHz in, no resampling, n_fft 64, hop 16, 16 mels, B = 1
  ltx2_audio_processor_resample.safetensors   22.05 -> 16 kHz (gcd 50: 441 -> 320 phases), n_fft 128,
                                              hop 32, 64 mels, B = 2
  ltx2_audio_processor_upsample.safetensors   8 -> 16 kHz, n_fft 32, hop 8, 8 mels, B = 1, mono
  ltx2_audio_processor_published.safetensors  the published front end (16 kHz, 64 mels, hop 160,
                                              n_fft 1024) on 0.4 s of 44.1 kHz stereo (441 -> 160
                                              phases, a 475-tap kernel)

Usage: /work/venv-golden/bin/python tools/golden/ltx2_audio_processor.py [--out tests/golden/ltx2]
"""
import argparse
import json
import os
import sys

import torch
from safetensors.torch import save_file

sys.path.insert(0, os.environ.get("LTX2_CORE", "/work/ref/ltx2/packages/ltx-core/src"))
from ltx_core.model.audio_vae.ops import AudioProcessor  # noqa: E402
from ltx_core.types import Audio  # noqa: E402


def make(path, config, batch, channels, samples, rate, seed):
    torch.manual_seed(seed)
    proc = AudioProcessor(**config).eval()
    t = torch.arange(samples, dtype=torch.float32) / rate
    # A few tones plus noise: a spectrum with structure, values well above the 1e-5 floor.
    wave = 0.3 * torch.randn(batch, channels, samples)
    for f0, a in ((440.0, 0.5), (1234.0, 0.3), (3100.0, 0.2)):
        wave += a * torch.sin(2 * torch.pi * f0 * t)
    audio = Audio(waveform=wave, sampling_rate=rate)
    with torch.no_grad():
        mel = proc.waveform_to_mel(audio)
        resampled = proc.resample_audio(audio).waveform
    tensors = {
        "input.audio.waveform": wave.contiguous(),
        "input.audio.sampling_rate": torch.tensor([rate], dtype=torch.int64),
        "output": mel.contiguous(),
        "inter.resampled": resampled.clone().contiguous(),
        "inter.mel_transform.mel_scale.fb": proc.mel_transform.mel_scale.fb.contiguous(),
    }
    meta = {"kind": "ltx2.audio_processor", "config": json.dumps(config),
            "generator": "tools/golden/ltx2_audio_processor.py", "torch": torch.__version__}
    save_file(tensors, path, metadata=meta)
    print(f"wrote {path} ({os.path.getsize(path)} bytes), mel {tuple(mel.shape)} range [{mel.min():.3f}, "
          f"{mel.max():.3f}], resampled {tuple(resampled.shape)}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default="tests/golden/ltx2")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    make(os.path.join(args.out, "ltx2_audio_processor.safetensors"),
         {"target_sample_rate": 16000, "mel_bins": 16, "mel_hop_length": 16, "n_fft": 64}, 1, 2, 400, 16000, 0)
    make(os.path.join(args.out, "ltx2_audio_processor_resample.safetensors"),
         {"target_sample_rate": 16000, "mel_bins": 64, "mel_hop_length": 32, "n_fft": 128}, 2, 2, 1000, 22050, 1)
    make(os.path.join(args.out, "ltx2_audio_processor_upsample.safetensors"),
         {"target_sample_rate": 16000, "mel_bins": 8, "mel_hop_length": 8, "n_fft": 32}, 1, 1, 150, 8000, 2)
    make(os.path.join(args.out, "ltx2_audio_processor_published.safetensors"),
         {"target_sample_rate": 16000, "mel_bins": 64, "mel_hop_length": 160, "n_fft": 1024}, 1, 2, 17640, 44100, 3)


if __name__ == "__main__":
    main()
