// The LTX-2.3 vocoder (ltx_core.model.audio_vae.vocoder.VocoderWithBWE): the base AMP1 Vocoder
// (mel -> waveform at input_sampling_rate), then the bandwidth extension: the waveform padded to a
// multiple of hop_length, its causal log-mel (MelSTFT: an STFT as a strided conv with the
// checkpoint's DFT x window bases, left padding n_fft - hop, the checkpoint's mel filterbank,
// log(clamp(., 1e-5))), a second AMP1 Vocoder (no final activation) on that mel predicting a
// residual, plus the waveform upsampled by out / in through UpSample1d's hann-windowed sinc (built
// here: not in the state dict), clamped to [-1, 1] and cut to L * out / in samples.
// Chosen, as VocoderConfigurator.from_metadata chooses it, by a "bwe" key in the vocoder config.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor.h"
#include "models/ltx2/vocoder.h"
#include "nn/params.h"

namespace vidax::ltx2 {

// The checkpoint metadata's config.vocoder when it holds "bwe" (LTX-2.3): {"vocoder": {...},
// "bwe": {...}}, read as the configurator reads it. Both generators must be AMP1 / snakebeta /
// stereo (check_config_value); the configurator sets apply_final_activation (true for the base,
// false for the BWE: a contradicting value in the dict is an error here, the reference ignores
// it) and both output_sampling_rate values (from "bwe"). "bwe" also holds input_sampling_rate,
// output_sampling_rate, hop_length, n_fft, num_mels (required) and win_size (must equal n_fft: the
// reference uses n_fft as the window length). Other unknown keys are errors.
struct VocoderBweConfig {
  VocoderConfig vocoder, bwe;
  int64_t input_sampling_rate = 16000, output_sampling_rate = 48000;
  int64_t hop_length = 80, n_fft = 512, num_mels = 64;

  static bool is_bwe(const nlohmann::json& j) { return j.is_object() && j.contains("bwe"); }
  static VocoderBweConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
  int64_t ratio() const { return output_sampling_rate / input_sampling_rate; }  // the skip's upsampling
  int64_t n_freqs() const { return n_fft / 2 + 1; }
};

// Intermediates: "vocoder" (the base waveform [B, 2, L]), "mel" (the BWE generator's input
// [B, 2, frames, num_mels]), "residual", "skip" ([B, 2, frames * hop * ratio]).
using VocoderBweTap = std::function<void(const std::string& name, const Tensor& value)>;

class VocoderWithBwe {
 public:
  // Parameters under prefix + the official names: vocoder.*, bwe_generator.*,
  // mel_stft.stft_fn.forward_basis [2F, 1, n_fft], mel_stft.stft_fn.inverse_basis (taken for
  // strictness; the forward never reads it), mel_stft.mel_basis [num_mels, F]; fp32 compute.
  VocoderWithBwe(VocoderBweConfig cfg, nn::ParamSource& params, const std::string& prefix = "");
  // mel [B, 2, T, 64] F32 -> waveform [B, 2, L * out / in], L = T * prod(vocoder.upsample_rates).
  Tensor forward(const Tensor& mel, const VocoderBweTap& tap = {}) const;
  const VocoderBweConfig& config() const { return cfg_; }

 private:
  VocoderBweConfig cfg_;
  Vocoder vocoder_, bwe_generator_;
  Tensor forward_basis_;  // [2F, 1, n_fft] F32
  Tensor mel_basis_;      // [num_mels, F] F32
  Tensor resampler_;      // UpSample1d(ratio, "hann").filter [1, 1, 14 ratio + 1]
};

}  // namespace vidax::ltx2
