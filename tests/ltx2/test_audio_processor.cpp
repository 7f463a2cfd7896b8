// The LTX-2 audio front end against the official AudioProcessor.waveform_to_mel (torchaudio's
// resample and MelSpectrogram; tests/golden/ltx2/ltx2_audio_processor*.safetensors,
// tools/golden/ltx2_audio_processor.py) through kind ltx2.audio_processor: the mel, the resampled
// waveform and the slaney filterbank at fp32; a wrong source rate must fail; bad config and input.
#include <gtest/gtest.h>

#include <cstdio>

#include "backend/ops.h"
#include "ltx2_golden.h"
#include "models/ltx2/audio_processor.h"

using namespace vidax;

namespace {

using test::ltx2::expect_error;
using test::ltx2::max_abs_diff;

void expect_golden(const char* name) { EXPECT_EQ(test::ltx2::expect_golden_rows(name).compared, 3); }

// As expect_golden_rows, with the log-mel's max abs bounded by kLogMelAbs: in this file the
// reference's own fp32 log-mel is 1.7e-5 from a float64 run of the same module on the same waveform
// (a mel value of 1.4e-4, where the log turns the STFT's relative rounding into that much), so 1e-5
// absolute is finer than the reference itself; the engine's error there depends on the CPU tier's
// summation order (measured 1.6e-5 at avx512_bf16, 3.4e-5 at avx2). Every row still passes the
// contract's rel L2 <= 1e-5 (measured 1.0e-7).
constexpr double kLogMelAbs = 1e-4;
void expect_golden_log_mel(const char* name) {
  engine::register_builtins();
  parity::Options opt;
  opt.precision = "fp32";
  opt.rtol = 1e-5;
  const parity::Report rep = parity::run(test::ltx2::golden(name), opt);
  for (const auto& c : rep.rows) {
    std::printf("  %s fp32 %-32s max_abs=%.3g rel_l2=%.3g\n", name, c.name.c_str(), c.max_abs, c.rel_l2);
    EXPECT_EQ(c.status, parity::Comparison::Status::Ok) << c.name << " " << c.note;
    EXPECT_LE(c.max_abs, c.name == "output" ? kLogMelAbs : 1e-5) << c.name;
  }
  EXPECT_TRUE(rep.ok());
  EXPECT_EQ(rep.compared, 3);
}

}  // namespace

TEST(Ltx2AudioProcessorGolden, SameRateMatchesTheReferenceFp32) { expect_golden("ltx2_audio_processor.safetensors"); }
TEST(Ltx2AudioProcessorGolden, Resample22050To16000MatchesTheReferenceFp32) {
  expect_golden_log_mel("ltx2_audio_processor_resample.safetensors");
}
TEST(Ltx2AudioProcessorGolden, Upsample8000MonoMatchesTheReferenceFp32) {
  expect_golden("ltx2_audio_processor_upsample.safetensors");
}

// The published front end (16 kHz, 64 mels, hop 160, n_fft 1024) on 44.1 kHz stereo.
TEST(Ltx2AudioProcessorGolden, PublishedConfigFrom44100MatchesTheReferenceFp32) {
  expect_golden("ltx2_audio_processor_published.safetensors");
}

// The waveform's rate decides the resampling: a wrong one must move the mel; the target rate
// itself is no resampling at all.
TEST(Ltx2AudioProcessor, SourceRateMatters) {
  const auto g = test::ltx2::load_golden("ltx2_audio_processor_resample.safetensors");
  const ltx2::AudioProcessor proc(ltx2::AudioProcessorConfig::from_json(g.config));
  const Tensor wave = g.file.get("input.audio.waveform"), want = g.file.get("output");
  EXPECT_LE(max_abs_diff(want, proc.waveform_to_mel(wave, 22050)), kLogMelAbs);  // see expect_golden_log_mel
  const Tensor wrong = proc.waveform_to_mel(wave, 22000);
  EXPECT_EQ(wrong.shape(), want.shape());  // ceil(320 * 1000 / 441) = ceil(16 * 1000 / 22) frames alike
  EXPECT_GT(max_abs_diff(want, wrong), 1e-3);
  const Tensor same = proc.resample_audio(wave, 16000);
  EXPECT_EQ(same.shape(), wave.shape());
  EXPECT_EQ(max_abs_diff(wave, same), 0.0);
  EXPECT_EQ(proc.waveform_to_mel(wave, 16000).shape(), (Shape{2, 2, 1 + 1000 / 32, 64}));
}

TEST(Ltx2AudioProcessor, BadConfigAndInputAreErrors) {
  using nlohmann::json;
  const json ok{{"target_sample_rate", 16000}, {"mel_bins", 64}, {"mel_hop_length", 160}, {"n_fft", 1024}};
  EXPECT_EQ(ltx2::AudioProcessorConfig::from_json(ok).to_json(), ok);
  json j = ok;
  j["window"] = "hann";
  expect_error([&] { ltx2::AudioProcessorConfig::from_json(j); }, "unknown key 'window'");
  j = ok;
  j.erase("n_fft");
  expect_error([&] { ltx2::AudioProcessorConfig::from_json(j); }, "n_fft");
  j = ok;
  j["mel_hop_length"] = 0;
  EXPECT_THROW(ltx2::AudioProcessorConfig::from_json(j), Error);

  const auto g = test::ltx2::load_golden("ltx2_audio_processor.safetensors");
  const ltx2::AudioProcessor proc(ltx2::AudioProcessorConfig::from_json(g.config));
  const Tensor wave = g.file.get("input.audio.waveform");
  EXPECT_THROW(proc.waveform_to_mel(wave.select(1, 0), 16000), Error);                   // [B, L]
  EXPECT_THROW(proc.waveform_to_mel(ops::cast(wave, DType::BF16), 16000), Error);        // bf16
  EXPECT_THROW(proc.waveform_to_mel(wave, 0), Error);                                    // no rate
  expect_error([&] { proc.waveform_to_mel(wave.slice(2, 0, 32), 16000); }, "too few");  // n_fft 64: 32 <= 64 / 2
  EXPECT_EQ(proc.waveform_to_mel(wave.slice(2, 0, 33), 16000).shape(), (Shape{1, 2, 1 + 33 / 16, 16}));
}
