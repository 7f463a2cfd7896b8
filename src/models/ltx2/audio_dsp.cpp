// The LTX-2 audio path's signal processing (audio_dsp.h). The filters are computed on the host in
// float32, one torch op at a time in the reference's order, and handed to the backend as tensors.
#include "models/ltx2/audio_dsp.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <vector>

#include "backend/ops.h"
#include "core/error.h"

namespace vidax::ltx2::dsp {

namespace {

constexpr float kPi = static_cast<float>(M_PI);  // math.pi as a float32 scalar operand

// torch.linspace(start, end, steps) in float32: start + step i for the first half, end - step
// (steps - 1 - i) for the rest (ATen's linspace kernel).
std::vector<float> linspace_f32(double start_d, double end_d, int64_t steps) {
  const float start = static_cast<float>(start_d), end = static_cast<float>(end_d);
  std::vector<float> v(static_cast<size_t>(steps));
  if (steps == 1) {
    v[0] = start;
    return v;
  }
  const float step = (end - start) / static_cast<float>(steps - 1);
  const int64_t halfway = steps / 2;
  for (int64_t i = 0; i < steps; ++i)
    v[i] = i < halfway ? start + step * static_cast<float>(i) : end - step * static_cast<float>(steps - i - 1);
  return v;
}

// torchaudio's _hz_to_mel (slaney), on a Python float.
double hz_to_mel_slaney(double freq) {
  const double f_sp = 200.0 / 3, min_log_hz = 1000.0, min_log_mel = min_log_hz / f_sp;
  const double logstep = std::log(6.4) / 27.0;
  return freq >= min_log_hz ? min_log_mel + std::log(freq / min_log_hz) / logstep : freq / f_sp;
}

}  // namespace

Tensor conv1d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, int64_t dilation, int64_t lo,
              int64_t hi, int64_t stride) {
  const int64_t n = x.size(0), c = x.size(1), k = w.size(2);
  const int64_t padded = x.size(2) + lo + hi;
  const int64_t out_len = padded - dilation * (k - 1);
  VIDAX_CHECK(out_len >= 1, "ltx2 conv1d: a conv of kernel " << k << " dilation " << dilation << " over "
                                                            << x.size(2) << " samples (+" << lo + hi
                                                            << " padding) has no output");
  VIDAX_CHECK(stride == 1 || dilation == 1, "ltx2 conv1d: a conv with both stride and dilation");
  if (dilation == 1) {
    const Tensor xp = ops::pad(x, {lo, hi}).view({n, c, 1, padded});
    const Tensor y = ops::conv2d(xp, w.reshape({w.size(0), c, 1, k}), bias, {1, stride}, {0, 0});
    return y.squeeze(2);
  }
  // y[m * d + r] = sum_j w[j] x[(m + j) * d + r]: a conv along the rows of x viewed as [M, d].
  const int64_t rows = (padded + dilation - 1) / dilation;
  const Tensor xp = ops::pad(x, {lo, hi + rows * dilation - padded}).view({n, c, rows, dilation});
  const Tensor y = ops::conv2d(xp, w.reshape({w.size(0), c, k, 1}), bias, {1, 1}, {0, 0});
  return y.contiguous().view({n, w.size(0), (rows - k + 1) * dilation}).slice(2, 0, out_len);
}

// s - 1 zeros after each sample (the last's dropped), k - 1 - p zeros on both sides, a conv.
Tensor conv_transpose1d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, int64_t s, int64_t p) {
  const int64_t n = x.size(0), c = x.size(1), t = x.size(2), k = w.size(2);
  const Tensor stuffed = ops::pad(x.unsqueeze(3), {0, s - 1}).view({n, c, t * s});
  return conv1d(stuffed.slice(2, 0, (t - 1) * s + 1), w, bias, 1, k - 1 - p, k - 1 - p);
}

Tensor as_conv_weight(const Tensor& wt) {
  const Tensor w = wt.to(DType::F32).transpose(0, 1);
  std::vector<Tensor> taps;
  for (int64_t j = w.size(2) - 1; j >= 0; --j) taps.push_back(w.slice(2, j, j + 1));
  return ops::concat(taps, 2).contiguous();
}

Tensor stft_magnitude(const Tensor& y, const Tensor& bases, int64_t hop) {
  VIDAX_CHECK(y.dim() == 2, "ltx2 stft: the waveform must be [N, L], found " << shape_str(y.shape()));
  VIDAX_CHECK(bases.dim() == 3 && bases.size(1) == 1 && bases.size(0) % 2 == 0,
              "ltx2 stft: the bases must be [2F, 1, n_fft], found " << shape_str(bases.shape()));
  const int64_t n = y.size(0), len = y.size(1), n_fft = bases.size(2), f = bases.size(0) / 2;
  VIDAX_CHECK(hop >= 1 && len >= n_fft, "ltx2 stft: " << len << " samples for an n_fft of " << n_fft << " (hop " << hop
                                                      << ")");
  const Tensor spec = ops::conv2d(y.contiguous().view({n, 1, 1, len}), bases.reshape({2 * f, 1, 1, n_fft}),
                                  std::nullopt, {1, hop}, {0, 0})
                          .squeeze(2);  // [N, 2F, T]
  const Tensor re = spec.slice(1, 0, f), im = spec.slice(1, f, 2 * f);
  return ops::sqrt(ops::add(ops::mul(re, re), ops::mul(im, im)));
}

Tensor log_mel(const Tensor& magnitude, const Tensor& mel_basis) {
  VIDAX_CHECK(mel_basis.dim() == 2 && magnitude.dim() == 3 && mel_basis.size(1) == magnitude.size(1),
              "ltx2 log-mel: mel basis " << shape_str(mel_basis.shape()) << " against a magnitude "
                                         << shape_str(magnitude.shape()));
  const Tensor mel = ops::matmul(mel_basis.unsqueeze(0), magnitude);
  return ops::log(ops::clamp(mel, 1e-5, std::numeric_limits<double>::infinity()));
}

Tensor reflect_pad(const Tensor& x, int64_t p) {
  VIDAX_CHECK(x.dim() == 2, "ltx2 reflect pad: expected [N, L], found " << shape_str(x.shape()));
  const int64_t len = x.size(1);
  VIDAX_CHECK(p >= 0 && p < len, "ltx2 reflect pad: padding " << p << " must be below the length " << len
                                                              << " (torch's reflect padding rule)");
  std::vector<int64_t> ids(static_cast<size_t>(len + 2 * p));
  for (int64_t j = 0; j < len + 2 * p; ++j) {
    const int64_t s = j - p;
    ids[j] = s < 0 ? -s : (s >= len ? 2 * (len - 1) - s : s);
  }
  // A row gather over [L, N]: one op for both sides.
  const Tensor table = x.transpose(0, 1).contiguous();
  const Tensor out = ops::embedding(Tensor::from_i64(ids, {len + 2 * p}), table);
  return out.transpose(0, 1).contiguous();
}

Tensor hann_dft_bases(int64_t n_fft) {
  VIDAX_CHECK(n_fft >= 2, "ltx2 stft: n_fft " << n_fft);
  const int64_t f = n_fft / 2 + 1;
  // torch.hann_window(n_fft) (periodic), float32: cos(n * (2 pi / n_fft)) * -0.5 + 0.5.
  std::vector<float> window(static_cast<size_t>(n_fft));
  const float step = static_cast<float>(2.0 * M_PI / static_cast<double>(n_fft));
  for (int64_t i = 0; i < n_fft; ++i) window[i] = std::cos(static_cast<float>(i) * step) * -0.5f + 0.5f;
  std::vector<float> b(static_cast<size_t>(2 * f * n_fft));
  for (int64_t k = 0; k < f; ++k)
    for (int64_t i = 0; i < n_fft; ++i) {
      const double angle = 2.0 * M_PI * static_cast<double>((k * i) % n_fft) / static_cast<double>(n_fft);
      b[k * n_fft + i] = static_cast<float>(std::cos(angle) * window[i]);
      b[(f + k) * n_fft + i] = static_cast<float>(-std::sin(angle) * window[i]);
    }
  return Tensor::from_f32(b, {2 * f, 1, n_fft});
}

Tensor slaney_mel_filterbank(int64_t n_freqs, double f_min, double f_max, int64_t n_mels, int64_t sample_rate) {
  VIDAX_CHECK(n_freqs >= 2 && n_mels >= 1 && sample_rate >= 1 && f_max > f_min,
              "ltx2 mel filterbank: n_freqs " << n_freqs << ", n_mels " << n_mels << ", sample rate " << sample_rate
                                              << ", f " << f_min << ".." << f_max);
  const std::vector<float> all_freqs = linspace_f32(0.0, static_cast<double>(sample_rate / 2), n_freqs);
  std::vector<float> f_pts = linspace_f32(hz_to_mel_slaney(f_min), hz_to_mel_slaney(f_max), n_mels + 2);
  // _mel_to_hz (slaney) on the float32 tensor: f_sp * m, the log part 1000 exp(logstep (m - 15)).
  const float f_sp = static_cast<float>(200.0 / 3), logstep = static_cast<float>(std::log(6.4) / 27.0);
  for (float& m : f_pts) m = m >= 15.0f ? 1000.0f * std::exp(logstep * (m - 15.0f)) : 0.0f + f_sp * m;
  std::vector<float> fb(static_cast<size_t>(n_mels * n_freqs));
  for (int64_t j = 0; j < n_mels; ++j) {
    const float down_diff = f_pts[j + 1] - f_pts[j], up_diff = f_pts[j + 2] - f_pts[j + 1];
    const float enorm = 2.0f / (f_pts[j + 2] - f_pts[j]);
    for (int64_t i = 0; i < n_freqs; ++i) {
      const float down = (-(f_pts[j] - all_freqs[i])) / down_diff;
      const float up = (f_pts[j + 2] - all_freqs[i]) / up_diff;
      fb[j * n_freqs + i] = std::max(0.0f, std::min(down, up)) * enorm;
    }
  }
  return Tensor::from_f32(fb, {n_mels, n_freqs});
}

namespace {
constexpr int64_t kLowpassWidth = 6;  // UpSample1d "hann" and torchaudio's resample default
constexpr double kRolloff = 0.99;
int64_t hann_width() { return static_cast<int64_t>(std::ceil(kLowpassWidth / kRolloff)); }  // 7
}  // namespace

Tensor hann_sinc_upsample_filter(int64_t ratio) {
  VIDAX_CHECK(ratio >= 1, "ltx2 hann-sinc upsample: ratio " << ratio);
  const int64_t width = hann_width(), k = 2 * width * ratio + 1;
  const float rolloff = static_cast<float>(kRolloff), lw = static_cast<float>(kLowpassWidth);
  std::vector<float> f(static_cast<size_t>(k));
  for (int64_t i = 0; i < k; ++i) {
    // time = (arange(k) / ratio - width) * rolloff; window = cos(clamp(time) pi / 6 / 2)^2;
    // filter = sinc(time) * window * rolloff / ratio (torch.sinc: sin(pi x) / (pi x), 1 at 0).
    const float t = (static_cast<float>(i) / static_cast<float>(ratio) - static_cast<float>(width)) * rolloff;
    const float tc = std::clamp(t, -lw, lw);
    const float c = std::cos(tc * kPi / lw / 2.0f);
    const float window = c * c;
    const float pt = kPi * t;
    const float sinc = t == 0.0f ? 1.0f : std::sin(pt) / pt;
    f[i] = sinc * window * rolloff / static_cast<float>(ratio);
  }
  return Tensor::from_f32(f, {1, 1, k});
}

Tensor hann_sinc_upsample(const Tensor& x, const Tensor& filter, int64_t ratio) {
  VIDAX_CHECK(x.dim() == 3, "ltx2 hann-sinc upsample: expected [N, C, L], found " << shape_str(x.shape()));
  const int64_t n = x.size(0), c = x.size(1), len = x.size(2), width = hann_width();
  const int64_t k = filter.size(2);
  const int64_t pad_left = 2 * width * ratio, pad_right = k - ratio;
  // The filter is shared by every channel (depthwise): the channels run as one-channel signals.
  Tensor u = ops::pad(x.reshape({n * c, 1, len}), {width, width}, ops::PadMode::Replicate);
  u = conv_transpose1d(u, as_conv_weight(filter), std::nullopt, ratio, 0);
  u = ops::scale(u, static_cast<double>(ratio));
  return u.slice(2, pad_left, u.size(2) - pad_right).contiguous().view({n, c, len * ratio});
}

Tensor sinc_resample(const Tensor& x, int64_t orig_freq, int64_t new_freq) {
  VIDAX_CHECK(orig_freq >= 1 && new_freq >= 1, "ltx2 resample: sample rates " << orig_freq << " -> " << new_freq);
  VIDAX_CHECK(x.dim() == 2 && x.dtype() == DType::F32,
              "ltx2 resample: expected an F32 [N, L] waveform, found " << x.str());
  if (orig_freq == new_freq) return x;
  const int64_t g = std::gcd(orig_freq, new_freq);
  const int64_t orig = orig_freq / g, nw = new_freq / g;
  const double base_freq = static_cast<double>(std::min(orig, nw)) * kRolloff;
  const int64_t width = static_cast<int64_t>(std::ceil(kLowpassWidth * static_cast<double>(orig) / base_freq));
  const int64_t k = 2 * width + orig;
  const float base_f = static_cast<float>(base_freq), lw = static_cast<float>(kLowpassWidth);
  const float scale = static_cast<float>(base_freq / static_cast<double>(orig));
  std::vector<float> kern(static_cast<size_t>(nw * k));
  for (int64_t j = 0; j < nw; ++j)
    for (int64_t i = 0; i < k; ++i) {
      // idx = arange(-width, width + orig) / orig; t = arange(0, -new, -1) / new + idx, * base_freq,
      // clamped to +-6; window = cos(t pi / 6 / 2)^2; t *= pi; sin(t) / t (1 at 0) * (window * scale).
      const float idx = static_cast<float>(i - width) / static_cast<float>(orig);
      float t = static_cast<float>(-j) / static_cast<float>(nw) + idx;
      t = std::clamp(t * base_f, -lw, lw);
      const float c = std::cos(t * kPi / lw / 2.0f);
      const float window = c * c;
      t = t * kPi;
      const float s = t == 0.0f ? 1.0f : std::sin(t) / t;
      kern[j * k + i] = s * (window * scale);
    }
  const Tensor kernel = Tensor::from_f32(kern, {nw, 1, k});
  const int64_t n = x.size(0), len = x.size(1);
  const Tensor y = conv1d(x.reshape({n, 1, len}), kernel, std::nullopt, 1, width, width + orig, orig);  // [N, new, T]
  const Tensor flat = y.transpose(1, 2).contiguous().view({n, y.size(2) * nw});
  // target_length = ceil(torch.as_tensor(new * L / orig)): the Python float rounded to float32 first.
  const float target = static_cast<float>(static_cast<double>(nw * len) / static_cast<double>(orig));
  const int64_t keep = std::min(flat.size(1), static_cast<int64_t>(std::ceil(target)));
  return flat.slice(1, 0, keep).contiguous();
}

}  // namespace vidax::ltx2::dsp
