// A run's audio through write_output: the MP4's AAC track, --no-audio, --audio-output's WAV, the
// sidecar's "audio" entry, formats without a track; and `vidax generate` refusing the audio
// options for a model that makes no audio (every model today).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "cli_child.h"
#include "error_of.h"
#include "io/audio.h"
#include "io/video.h"
#include "pipeline/output.h"
#include "scratch.h"

namespace fs = std::filesystem;
using namespace vidax;
using namespace vidax::pipeline;
using vidax::test::error_of;

namespace {

const fs::path& work_dir() {
  static const fs::path d = vidax::test::scratch_dir("output_audio");
  return d;
}

Tensor grey_video(int64_t f, int64_t h, int64_t w) {
  std::vector<float> v(static_cast<size_t>(3 * f * h * w));
  for (size_t i = 0; i < v.size(); ++i) v[i] = -0.5f + static_cast<float>(i % 13) / 26.0f;
  return Tensor::from_f32(v, {3, f, h, w});
}

// [2, n] stereo: 440 Hz and 660 Hz at 0.4.
Tensor stereo_sine(int64_t n, int64_t rate) {
  std::vector<float> v(static_cast<size_t>(2 * n));
  for (int64_t c = 0; c < 2; ++c)
    for (int64_t i = 0; i < n; ++i)
      v[static_cast<size_t>(c * n + i)] =
          0.4f * static_cast<float>(std::sin(2 * 3.14159265358979 * (c ? 660.0 : 440.0) * double(i) / double(rate)));
  return Tensor::from_f32(v, {2, n});
}

OutputRequest request(const std::string& name, OutputFormat format) {
  OutputRequest r;
  r.path = (work_dir() / name).string();
  r.format = format;
  r.fps = 24;
  r.params = {{"model", "ltx2-test"}, {"prompt", "a drum"}};
  r.audio.waveform = stereo_sine(17000, 24000);
  r.audio.sample_rate = 24000;
  return r;
}

nlohmann::json read_json(const std::string& p) {
  std::ifstream is(p);
  return nlohmann::json::parse(is);
}

bool has_partial(const fs::path& dir) {
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".partial-") != std::string::npos) return true;
  return false;
}

}  // namespace

TEST(OutputAudio, Mp4CarriesTheTrackAndTheWav) {
  OutputRequest r = request("av.mp4", OutputFormat::Mp4);
  r.audio.wav_path = (work_dir() / "av.wav").string();
  const std::string sidecar = write_output(r, grey_video(17, 32, 48), Tensor());
  const io::VideoFileInfo info = io::read_video(r.path);
  EXPECT_EQ(info.frames, 17);
  ASSERT_TRUE(info.audio.has_value());
  EXPECT_EQ(info.audio->codec, "aac");
  EXPECT_EQ(info.audio->channels, 2);
  EXPECT_NEAR(info.audio->duration, 17.0 / 24.0, 1024.0 / 24000.0);
  const io::Audio wav = io::read_wav(r.audio.wav_path);
  EXPECT_EQ(wav.channels, 2);
  EXPECT_EQ(wav.sample_rate, 24000);
  EXPECT_EQ(wav.samples_per_channel(), 17000);
  const std::vector<float> orig = r.audio.waveform.to_f32_vector();
  for (size_t i = 0; i < orig.size(); ++i) ASSERT_LT(std::abs(wav.samples[i] - orig[i]), 1.0f / 32767.0f) << i;
  const nlohmann::json side = read_json(sidecar);
  EXPECT_EQ(side["audio"]["sample_rate"], 24000);
  EXPECT_EQ(side["audio"]["channels"], 2);
  EXPECT_EQ(side["audio"]["track"], "aac");
  EXPECT_EQ(side["audio"]["wav"], r.audio.wav_path);
  EXPECT_NEAR(side["audio"]["seconds"].get<double>(), 17000.0 / 24000.0, 1e-12);
  EXPECT_FALSE(has_partial(work_dir()));
}

TEST(OutputAudio, NoAudioDropsTheTrack) {
  OutputRequest r = request("silent.mp4", OutputFormat::Mp4);
  r.audio.drop = true;
  const std::string sidecar = write_output(r, grey_video(5, 32, 48), Tensor());
  const io::VideoFileInfo info = io::read_video(r.path);
  EXPECT_EQ(info.audio_streams, 0);
  EXPECT_FALSE(info.audio.has_value());
  EXPECT_TRUE(read_json(sidecar)["audio"]["track"].is_null());
}

// y4m has no audio track: the audio must go to a WAV (or be dropped), else nothing is written.
TEST(OutputAudio, FormatsWithoutATrackNeedTheWavOrNoAudio) {
  OutputRequest r = request("v.y4m", OutputFormat::Y4m);
  const std::string err = error_of([&] { write_output(r, grey_video(5, 32, 48), Tensor()); });
  EXPECT_NE(err.find("y4m output carries no audio track and model ltx2-test makes one"), std::string::npos) << err;
  EXPECT_FALSE(fs::exists(r.path));
  EXPECT_FALSE(fs::exists(r.path + ".json"));
  r.audio.wav_path = (work_dir() / "v.wav").string();
  write_output(r, grey_video(5, 32, 48), Tensor());
  EXPECT_TRUE(fs::exists(r.path));
  EXPECT_EQ(io::read_wav(r.audio.wav_path).samples_per_channel(), 17000);
  EXPECT_FALSE(has_partial(work_dir()));
}

TEST(OutputAudio, BadAudioIsRefusedBeforeAnythingIsWritten) {
  OutputRequest r = request("bad.mp4", OutputFormat::Mp4);
  std::vector<float> v = r.audio.waveform.to_f32_vector();
  v[17000 + 12] = std::nanf("");
  r.audio.waveform = Tensor::from_f32(v, {2, 17000});
  const std::string nan = error_of([&] { write_output(r, grey_video(5, 32, 48), Tensor()); });
  EXPECT_NE(nan.find("the run's audio: sample 12 of channel 1 is NaN"), std::string::npos) << nan;
  r = request("bad.mp4", OutputFormat::Mp4);
  r.audio.sample_rate = 0;
  const std::string rate = error_of([&] { write_output(r, grey_video(5, 32, 48), Tensor()); });
  EXPECT_NE(rate.find("sample rate must be positive"), std::string::npos) << rate;
  r = request("bad.mp4", OutputFormat::Mp4);
  r.audio.waveform = Tensor();
  r.audio.wav_path = (work_dir() / "none.wav").string();
  const std::string none = error_of([&] { write_output(r, grey_video(5, 32, 48), Tensor()); });
  EXPECT_NE(none.find("the run made no audio to write"), std::string::npos) << none;
  EXPECT_FALSE(fs::exists(r.path));
  EXPECT_FALSE(fs::exists(r.path + ".json"));
  EXPECT_FALSE(fs::exists(r.audio.wav_path));
  EXPECT_FALSE(has_partial(work_dir()));
}

TEST(OutputAudio, CheckAudioOptions) {
  const std::string out = (work_dir() / "x.mp4").string();
  EXPECT_NE(error_of([&] { check_audio_options("wan2.1-t2v-1.3b", false, out, OutputFormat::Mp4, true, ""); })
                .find("--no-audio: model wan2.1-t2v-1.3b makes no audio"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_audio_options("wan2.1-t2v-1.3b", false, out, OutputFormat::Mp4, false, "a.wav"); })
                .find("--audio-output a.wav: model wan2.1-t2v-1.3b makes no audio"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { check_audio_options("wan2.1-t2v-1.3b", false, out, OutputFormat::Y4m, false, ""); }),
            "(no error)");
  EXPECT_NE(error_of([&] { check_audio_options("m", true, out, OutputFormat::Mp4, false, "a.mp3"); })
                .find("give a name ending in .wav"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_audio_options("m", true, "a.WAV", OutputFormat::Mp4, false, "./a.WAV"); })
                .find("the same path as the video"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_audio_options("m", true, out, OutputFormat::Mp4, false, "/no/such/dir/a.wav"); })
                .find("does not exist"),
            std::string::npos);
  EXPECT_NE(error_of([&] { check_audio_options("m", true, "frames", OutputFormat::Png, false, ""); })
                .find("png output carries no audio track"),
            std::string::npos);
  EXPECT_EQ(error_of([&] { check_audio_options("m", true, "frames", OutputFormat::Png, true, ""); }), "(no error)");
  EXPECT_EQ(error_of([&] { check_audio_options("m", true, out, OutputFormat::Mp4, false, ""); }), "(no error)");
}

// Every model vidax runs today makes no audio: the flags are refused before any work.
TEST(OutputAudio, GenerateRefusesAudioFlagsForAModelWithoutAudio) {
  using namespace vidax::test::cli;
  const std::string demo = (work_dir() / "demo").string();
  CmdResult made = run({"make-demo", demo, "--tokenizer", tiny_spiece()});
  ASSERT_EQ(made.code, 0) << made.err;
  const std::string out = (work_dir() / "refused.mp4").string();
  const std::vector<std::string> base = {"generate", "--weights", demo, "--prompt", "a red panda", "--frames", "5",
                                         "--height", "32", "--width", "48", "--steps", "1", "-o", out};
  std::vector<std::string> no_audio = base;
  no_audio.push_back("--no-audio");
  CmdResult r = run(no_audio);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("--no-audio: model wan2.1-tiny-demo makes no audio"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("denoising"), std::string::npos) << r.err;
  std::vector<std::string> wav = base;
  wav.insert(wav.end(), {"--audio-output", (work_dir() / "refused.wav").string()});
  r = run(wav);
  EXPECT_EQ(r.code, 1);
  EXPECT_NE(r.err.find("makes no audio"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("denoising"), std::string::npos) << r.err;
  EXPECT_FALSE(fs::exists(out));
  EXPECT_FALSE(fs::exists(work_dir() / "refused.wav"));
}
