// VocoderWithBWE (vocoder_bwe.h): the config as VocoderConfigurator reads it and the forward in
// the reference's order, with the STFT / mel / resampling pieces of audio_dsp.h.
#include "models/ltx2/vocoder_bwe.h"

#include <algorithm>

#include "backend/ops.h"
#include "core/error.h"
#include "models/ltx2/audio_dsp.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

using Json = nlohmann::json;

namespace {

// One generator's dict: the configurator's fixed-value checks, the keys it sets itself, then the
// Vocoder init args (VocoderConfig::from_json: unknown keys are errors).
VocoderConfig generator_from_json(Json j, const char* name, bool final_activation, int64_t output_rate) {
  VIDAX_CHECK(j.is_object(), "LTX-2.3 vocoder config: '" << name << "' must be an object, found " << j.dump());
  auto expect = [&](const char* key, const Json& want) {
    VIDAX_CHECK(j.contains(key) && j[key] == want, "LTX-2.3 vocoder config: " << name << "." << key << " is "
                                                                               << (j.contains(key) ? j[key].dump() : "missing")
                                                                               << ", expected " << want.dump()
                                                                               << " (VocoderConfigurator's check)");
  };
  expect("resblock", "AMP1");
  expect("stereo", true);
  expect("activation", "snakebeta");
  j.erase("stereo");
  if (j.contains("apply_final_activation")) {
    VIDAX_CHECK(j["apply_final_activation"] == final_activation,
                "LTX-2.3 vocoder config: " << name << ".apply_final_activation is " << j["apply_final_activation"].dump()
                                           << ", but the configurator always builds this generator with "
                                           << (final_activation ? "true" : "false"));
    j.erase("apply_final_activation");
  }
  j.erase("output_sampling_rate");  // set from "bwe" by the configurator
  VocoderConfig c = VocoderConfig::from_json(j);
  c.apply_final_activation = final_activation;
  c.output_sampling_rate = output_rate;
  return c;
}

int64_t product(const std::vector<int64_t>& v) {
  int64_t p = 1;
  for (int64_t x : v) p *= x;
  return p;
}

}  // namespace

VocoderBweConfig VocoderBweConfig::from_json(const Json& j) {
  VIDAX_CHECK(is_bwe(j), "LTX-2.3 vocoder config: expected {\"vocoder\": {...}, \"bwe\": {...}}, found " << j.dump());
  for (const auto& [key, v] : j.items())
    VIDAX_CHECK(key == "vocoder" || key == "bwe",
                "LTX-2.3 vocoder config: unknown key '" << key << "' (VocoderWithBWE's config has vocoder and bwe)");
  Json bwe = j.at("bwe");
  VIDAX_CHECK(bwe.is_object(), "LTX-2.3 vocoder config: 'bwe' must be an object, found " << bwe.dump());
  VocoderBweConfig c;
  c.input_sampling_rate = translate::required<int64_t>(bwe, "input_sampling_rate");
  c.output_sampling_rate = translate::required<int64_t>(bwe, "output_sampling_rate");
  c.hop_length = translate::required<int64_t>(bwe, "hop_length");
  c.n_fft = translate::required<int64_t>(bwe, "n_fft");
  c.num_mels = translate::required<int64_t>(bwe, "num_mels");
  if (bwe.contains("win_size"))
    VIDAX_CHECK(bwe["win_size"] == c.n_fft, "LTX-2.3 vocoder config: bwe.win_size " << bwe["win_size"].dump()
                                                                                    << " differs from n_fft " << c.n_fft
                                                                                    << " (the reference's window length is n_fft)");
  for (const char* key : {"input_sampling_rate", "output_sampling_rate", "hop_length", "n_fft", "num_mels", "win_size"})
    bwe.erase(key);
  c.vocoder = generator_from_json(j.value("vocoder", Json::object()), "vocoder", true, c.input_sampling_rate);
  c.bwe = generator_from_json(bwe, "bwe", false, c.output_sampling_rate);

  VIDAX_CHECK(c.input_sampling_rate >= 1 && c.output_sampling_rate >= c.input_sampling_rate,
              "LTX-2.3 vocoder config: sampling rates " << c.input_sampling_rate << " -> " << c.output_sampling_rate
                                                        << " (the BWE upsamples)");
  VIDAX_CHECK(c.hop_length >= 1 && c.n_fft >= 2, "LTX-2.3 vocoder config: hop_length " << c.hop_length << ", n_fft "
                                                                                       << c.n_fft);
  // The BWE generator's conv_pre takes 128 = 2 x 64 channels, the stereo mel it is fed.
  VIDAX_CHECK(c.num_mels == 64, "LTX-2.3 vocoder config: num_mels " << c.num_mels
                                                                    << " (the BWE generator takes a stereo 64-bin mel)");
  // residual (frames x prod(rates)) and skip (frames x hop x ratio) must be one length (the
  // reference asserts it in its forward).
  VIDAX_CHECK(product(c.bwe.upsample_rates) == c.hop_length * c.ratio(),
              "LTX-2.3 vocoder config: the BWE generator upsamples x" << product(c.bwe.upsample_rates)
                                                                      << ", but hop_length x (output / input rate) is "
                                                                      << c.hop_length * c.ratio());
  return c;
}

Json VocoderBweConfig::to_json() const {
  auto gen = [](const VocoderConfig& g) {
    Json d = g.to_json();
    d.erase("output_sampling_rate");
    d["stereo"] = true;
    return d;
  };
  Json bwe_j = gen(bwe);
  bwe_j.update(Json{{"input_sampling_rate", input_sampling_rate},
                    {"output_sampling_rate", output_sampling_rate},
                    {"hop_length", hop_length},
                    {"n_fft", n_fft},
                    {"win_size", n_fft},
                    {"num_mels", num_mels}});
  Json voc_j = gen(vocoder);
  voc_j.erase("apply_final_activation");
  return Json{{"vocoder", voc_j}, {"bwe", bwe_j}};
}

VocoderWithBwe::VocoderWithBwe(VocoderBweConfig cfg, nn::ParamSource& p, const std::string& prefix)
    : cfg_(std::move(cfg)),
      vocoder_(cfg_.vocoder, p, prefix + "vocoder."),
      bwe_generator_(cfg_.bwe, p, prefix + "bwe_generator.") {
  const int64_t f = cfg_.n_freqs();
  // MelSTFT's buffers are zeros in the module and come from the checkpoint (bf16 there): taken.
  forward_basis_ = p.take(prefix + "mel_stft.stft_fn.forward_basis", {2 * f, 1, cfg_.n_fft}).to(DType::F32).contiguous();
  p.take(prefix + "mel_stft.stft_fn.inverse_basis", {2 * f, 1, cfg_.n_fft});  // the inverse STFT: unused here
  mel_basis_ = p.take(prefix + "mel_stft.mel_basis", {cfg_.num_mels, f}).to(DType::F32).contiguous();
  resampler_ = dsp::hann_sinc_upsample_filter(cfg_.ratio());  // persistent=False: built, as the reference does
}

Tensor VocoderWithBwe::forward(const Tensor& mel, const VocoderBweTap& tap) const {
  Tensor x = vocoder_.forward(mel);  // [B, 2, L]; checks the input
  if (tap) tap("vocoder", x);
  const int64_t b = x.size(0), c = x.size(1), len = x.size(2);
  const int64_t out_len = len * cfg_.output_sampling_rate / cfg_.input_sampling_rate;
  const int64_t hop = cfg_.hop_length;
  if (len % hop != 0) x = ops::pad(x, {0, hop - len % hop});  // whole mel frames
  const int64_t padded = x.size(2);

  // _compute_mel: each channel's causal STFT (left padding only: no lookahead), the mel projection.
  const Tensor flat = ops::pad(x.reshape({b * c, padded}), {std::max<int64_t>(0, cfg_.n_fft - hop), 0});
  const Tensor lm = dsp::log_mel(dsp::stft_magnitude(flat, forward_basis_, hop), mel_basis_);  // [B C, M, frames]
  const Tensor mel_bwe = lm.view({b, c, cfg_.num_mels, lm.size(2)}).transpose(2, 3).contiguous();
  if (tap) tap("mel", mel_bwe);

  const Tensor residual = bwe_generator_.forward(mel_bwe);
  const Tensor skip = dsp::hann_sinc_upsample(x, resampler_, cfg_.ratio());
  if (tap) {
    tap("residual", residual);
    tap("skip", skip);
  }
  VIDAX_CHECK(residual.shape() == skip.shape(), "ltx2 vocoder BWE: the residual " << shape_str(residual.shape())
                                                                                  << " and the skip "
                                                                                  << shape_str(skip.shape())
                                                                                  << " differ (the reference asserts it)");
  return ops::clamp(ops::add(residual, skip), -1.0, 1.0).slice(2, 0, out_len).contiguous();
}

}  // namespace vidax::ltx2
