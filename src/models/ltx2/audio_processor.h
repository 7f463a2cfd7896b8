// The LTX-2 audio front end (ltx_core.model.audio_vae.ops.AudioProcessor): a waveform [B, C, L]
// at any sample rate -> the log-mel spectrogram [B, C, frames, mel_bins] the audio VAE's encoder
// takes. resample_audio: torchaudio.functional.resample (sinc_interp_hann, width 6, rolloff 0.99)
// when the rate differs from target_sample_rate; then torchaudio's MelSpectrogram(n_fft,
// win_length = n_fft, hop mel_hop_length, f 0 .. rate / 2, periodic Hann window, center with
// reflect padding, power 1, slaney mel scale and norm) and log(clamp(., 1e-5)), permuted to
// [B, C, frames, mel_bins]; frames = 1 + L' / hop. The STFT runs as a strided conv with the
// windowed DFT bases (audio_dsp.h: the same code as VocoderWithBWE's MelSTFT), fp32.
#pragma once
#include <nlohmann/json.hpp>

#include "core/tensor.h"

namespace vidax::ltx2 {

// AudioProcessor.__init__'s arguments (all required, as there); unknown keys are errors.
struct AudioProcessorConfig {
  int64_t target_sample_rate = 16000;
  int64_t mel_bins = 64;
  int64_t mel_hop_length = 160;
  int64_t n_fft = 1024;

  static AudioProcessorConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
};

class AudioProcessor {
 public:
  explicit AudioProcessor(AudioProcessorConfig cfg);  // builds the DFT bases and the mel filterbank
  // waveform [B, C, L] F32 at sampling_rate -> [B, C, L'] at target_sample_rate (itself when equal).
  Tensor resample_audio(const Tensor& waveform, int64_t sampling_rate) const;
  // waveform [B, C, L] F32 at sampling_rate -> log-mel [B, C, 1 + L' / hop, mel_bins] F32.
  Tensor waveform_to_mel(const Tensor& waveform, int64_t sampling_rate) const;
  const AudioProcessorConfig& config() const { return cfg_; }
  const Tensor& mel_filterbank() const { return mel_basis_; }  // [mel_bins, n_fft / 2 + 1]

 private:
  AudioProcessorConfig cfg_;
  Tensor bases_;      // [2F, 1, n_fft]: the periodic-Hann DFT, F = n_fft / 2 + 1
  Tensor mel_basis_;  // [mel_bins, F]: torchaudio's slaney filterbank, transposed
};

// Kind ltx2.audio_processor (docs/parity.md): config = AudioProcessor's init args;
// input.audio.waveform [B, C, L], input.audio.sampling_rate (one integer) -> output (the mel),
// inter.resampled (the waveform at the target rate), inter.mel_transform.mel_scale.fb (the
// filterbank [n_freqs, mel_bins], the reference module's buffer). fp32 only.
void register_audio_processor_parity_kind();

}  // namespace vidax::ltx2
