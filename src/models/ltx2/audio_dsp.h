// The LTX-2 audio path's signal processing, one copy for the vocoder, its bandwidth extension
// (VocoderWithBWE) and the waveform -> mel front end (AudioProcessor):
// - 1-D convolutions (Conv1d, ConvTranspose1d) through the backend's conv2d over a unit axis;
// - an STFT magnitude as a strided conv with DFT x window bases ([2F, 1, n_fft]: the real rows,
//   then the imaginary rows), the log-mel projection log(clamp(mel_basis @ |X|, 1e-5));
// - the filters the reference builds in code: torch.stft's periodic-Hann DFT, torchaudio's slaney
//   mel filterbank, UpSample1d's hann-windowed sinc (window_type "hann") and torchaudio's
//   sinc_interp_hann resampling kernel. The filterbank and the sinc filters are computed in
//   float32 in the reference's op order (torch computes them in float32; libm may differ from
//   torch's vector functions by an ulp); the DFT bases, which torch.stft never forms (it runs an
//   FFT), in double from the float32 window, rounded once.
#pragma once
#include <cstdint>
#include <optional>

#include "core/tensor.h"

namespace vidax::ltx2::dsp {

// x [N, C, L], w [O, C, k]: zero padding lo / hi, then a conv with the given dilation or stride.
Tensor conv1d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, int64_t dilation, int64_t lo,
              int64_t hi, int64_t stride = 1);
// ConvTranspose1d(stride s, padding p) with `w` already the equivalent conv's weight
// (as_conv_weight): length (T - 1) s - 2p + k.
Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, int64_t s, int64_t p);
// A ConvTranspose1d weight [C_in, C_out, k] -> the conv weight [C_out, C_in, k], taps reversed, F32.
Tensor as_conv_weight(const Tensor& wt);

// |STFT| of y [N, L] (already padded as the caller's reference pads) with bases [2F, 1, n_fft]
// (F32) at stride hop: sqrt(re^2 + im^2), [N, F, (L - n_fft) / hop + 1].
Tensor stft_magnitude(const Tensor& y, const Tensor& bases, int64_t hop);
// log(clamp(mel_basis @ magnitude, min = 1e-5)): mel_basis [M, F] (F32), magnitude [N, F, T] -> [N, M, T].
Tensor log_mel(const Tensor& magnitude, const Tensor& mel_basis);
// Reflect padding of the last dim of x [N, L] by p on both sides (torch's "reflect": the edge sample
// is not repeated); p < L as torch requires.
Tensor reflect_pad(const Tensor& x, int64_t p);

// torch.stft(window = torch.hann_window(n_fft), onesided) as conv bases [2 (n_fft / 2 + 1), 1, n_fft]:
// row f = cos(2 pi f n / n_fft) w[n], row F + f = -sin(...) w[n].
Tensor hann_dft_bases(int64_t n_fft);
// torchaudio.functional.melscale_fbanks(n_freqs, f_min, f_max, n_mels, sample_rate, norm="slaney",
// mel_scale="slaney"), transposed: [n_mels, n_freqs] F32.
Tensor slaney_mel_filterbank(int64_t n_freqs, double f_min, double f_max, int64_t n_mels, int64_t sample_rate);

// UpSample1d(ratio, window_type="hann") (vocoder.py, VocoderWithBWE's resampler): the filter
// [1, 1, 2 * 7 * ratio + 1] as the reference's buffer (rolloff 0.99, lowpass width 6).
Tensor hann_sinc_upsample_filter(int64_t ratio);
// UpSample1d(ratio, "hann").forward on x [N, C, L] with that filter: replicate pad 7, ratio x a
// depthwise transposed conv (stride ratio), crop -> [N, C, L * ratio].
Tensor hann_sinc_upsample(const Tensor& x, const Tensor& filter, int64_t ratio);

// torchaudio.functional.resample(x, orig, new) with its defaults (sinc_interp_hann, lowpass width 6,
// rolloff 0.99) on x [N, L] F32: the kernel built in float32 as torchaudio builds it for a float32
// waveform, zero padding, a strided polyphase conv -> [N, ceil(new * L / orig)]. orig == new returns x.
Tensor sinc_resample(const Tensor& x, int64_t orig_freq, int64_t new_freq);

}  // namespace vidax::ltx2::dsp
