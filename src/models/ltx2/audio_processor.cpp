// The LTX-2 audio front end (audio_processor.h) and its parity kind.
#include "models/ltx2/audio_processor.h"

#include <algorithm>
#include <mutex>
#include <string>
#include <vector>

#include "core/error.h"
#include "models/ltx2/audio_dsp.h"
#include "parity/parity.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

using Json = nlohmann::json;

AudioProcessorConfig AudioProcessorConfig::from_json(const Json& j) {
  VIDAX_CHECK(j.is_object(), "LTX-2 audio processor config: expected a JSON object, found " << j.dump());
  static const std::vector<std::string> known{"target_sample_rate", "mel_bins", "mel_hop_length", "n_fft"};
  for (const auto& [key, v] : j.items())
    VIDAX_CHECK(std::find(known.begin(), known.end(), key) != known.end(),
                "LTX-2 audio processor config: unknown key '" << key << "' (AudioProcessor's init args: "
                                                              << "target_sample_rate, mel_bins, mel_hop_length, n_fft)");
  AudioProcessorConfig c;
  c.target_sample_rate = translate::required<int64_t>(j, "target_sample_rate");
  c.mel_bins = translate::required<int64_t>(j, "mel_bins");
  c.mel_hop_length = translate::required<int64_t>(j, "mel_hop_length");
  c.n_fft = translate::required<int64_t>(j, "n_fft");
  VIDAX_CHECK(c.target_sample_rate >= 1 && c.mel_bins >= 1 && c.mel_hop_length >= 1 && c.n_fft >= 2,
              "LTX-2 audio processor config: target_sample_rate " << c.target_sample_rate << ", mel_bins " << c.mel_bins
                                                                  << ", mel_hop_length " << c.mel_hop_length << ", n_fft "
                                                                  << c.n_fft << " (all positive, n_fft >= 2)");
  return c;
}

Json AudioProcessorConfig::to_json() const {
  return Json{{"target_sample_rate", target_sample_rate},
              {"mel_bins", mel_bins},
              {"mel_hop_length", mel_hop_length},
              {"n_fft", n_fft}};
}

AudioProcessor::AudioProcessor(AudioProcessorConfig cfg) : cfg_(cfg) {
  bases_ = dsp::hann_dft_bases(cfg_.n_fft);
  mel_basis_ = dsp::slaney_mel_filterbank(cfg_.n_fft / 2 + 1, 0.0, static_cast<double>(cfg_.target_sample_rate) / 2.0,
                                          cfg_.mel_bins, cfg_.target_sample_rate);
}

namespace {
void check_waveform(const Tensor& w, int64_t rate) {
  VIDAX_CHECK(w.dim() == 3 && w.dtype() == DType::F32,
              "ltx2 audio processor: the waveform must be F32 [B, C, samples], found " << w.str());
  VIDAX_CHECK(w.size(2) >= 1, "ltx2 audio processor: the waveform has no samples");
  VIDAX_CHECK(rate >= 1, "ltx2 audio processor: sampling rate " << rate);
}
}  // namespace

Tensor AudioProcessor::resample_audio(const Tensor& waveform, int64_t sampling_rate) const {
  check_waveform(waveform, sampling_rate);
  if (sampling_rate == cfg_.target_sample_rate) return waveform;
  const int64_t b = waveform.size(0), c = waveform.size(1);
  const Tensor y = dsp::sinc_resample(waveform.reshape({b * c, waveform.size(2)}), sampling_rate,
                                      cfg_.target_sample_rate);
  return y.view({b, c, y.size(1)});
}

Tensor AudioProcessor::waveform_to_mel(const Tensor& waveform, int64_t sampling_rate) const {
  const Tensor w = resample_audio(waveform, sampling_rate);
  const int64_t b = w.size(0), c = w.size(1), len = w.size(2);
  // center=True: reflect padding of n_fft / 2 on both sides (torch.stft), then the frames.
  VIDAX_CHECK(cfg_.n_fft / 2 < len, "ltx2 audio processor: " << len << " samples at " << cfg_.target_sample_rate
                                                             << " Hz are too few for n_fft " << cfg_.n_fft
                                                             << " (the reflect padding needs more than n_fft / 2)");
  const Tensor padded = dsp::reflect_pad(w.reshape({b * c, len}), cfg_.n_fft / 2);
  const Tensor lm = dsp::log_mel(dsp::stft_magnitude(padded, bases_, cfg_.mel_hop_length), mel_basis_);
  return lm.view({b, c, cfg_.mel_bins, lm.size(2)}).transpose(2, 3).contiguous();
}

namespace {

parity::Produced run_audio_processor(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.precision.empty() || opt.precision == "fp32",
              "ltx2.audio_processor parity: only fp32 is supported, found '" << opt.precision << "'");
  VIDAX_CHECK(opt.mesh.empty() && opt.loras.empty() && opt.quantize.empty() && (opt.device.empty() || opt.device == "cpu"),
              "ltx2.audio_processor parity: --mesh, --lora, --quantize and --device are not supported");
  const AudioProcessor proc(AudioProcessorConfig::from_json(g.config));
  const Tensor rate_t = g.input("audio.sampling_rate");
  VIDAX_CHECK(rate_t.numel() == 1 && (rate_t.dtype() == DType::I64 || rate_t.dtype() == DType::I32),
              g.path << ": input.audio.sampling_rate must be one integer, found " << rate_t.str());
  const int64_t rate = static_cast<int64_t>(rate_t.to_f64_vector()[0]);
  const Tensor wave = g.input("audio.waveform");
  return {{"output", proc.waveform_to_mel(wave, rate)},
          {"inter.resampled", proc.resample_audio(wave, rate)},
          {"inter.mel_transform.mel_scale.fb", proc.mel_filterbank().transpose(0, 1).contiguous()}};
}

}  // namespace

void register_audio_processor_parity_kind() {
  static std::once_flag once;
  std::call_once(once, [] { parity::register_kind("ltx2.audio_processor", run_audio_processor); });
}

}  // namespace vidax::ltx2
