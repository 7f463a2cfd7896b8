// Audio out: the MP4's audio track (AAC; Opus through libopus), probed and decoded back with
// libavformat; WAV files (16-bit PCM, 32-bit float) written and read back; bad waveforms.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <string>

extern "C" {
#include <libavformat/avformat.h>
}

#include "io/audio.h"
#include "io/video.h"
#include "io_test_util.h"

namespace fs = std::filesystem;
using namespace vidax;
using vidax::io::test::TempDir;

namespace {

constexpr double kPi = 3.14159265358979323846;

// A stereo (or mono) sine: channel 0 at f0 Hz amplitude a0, channel 1 at f1 Hz amplitude a1.
io::Audio sine(int64_t channels, int64_t rate, int64_t samples, double f0 = 440, double a0 = 0.5, double f1 = 1000,
               double a1 = 0.25) {
  io::Audio a;
  a.channels = channels;
  a.sample_rate = rate;
  a.samples.resize(static_cast<size_t>(channels * samples));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < samples; ++i) {
      const double f = c == 0 ? f0 : f1, amp = c == 0 ? a0 : a1;
      a.samples[static_cast<size_t>(c * samples + i)] =
          static_cast<float>(amp * std::sin(2 * kPi * f * static_cast<double>(i) / static_cast<double>(rate)));
    }
  return a;
}

io::RgbVideo grey_video(int64_t frames, int64_t h, int64_t w) {
  io::RgbVideo v;
  v.frames = frames;
  v.height = h;
  v.width = w;
  v.rgb.assign(static_cast<size_t>(frames * h * w * 3), 0);
  for (int64_t f = 0; f < frames; ++f)
    for (size_t i = 0; i < v.frame_bytes(); ++i) v.frame(f)[i] = static_cast<uint8_t>(60 + 8 * f + (i % 7));
  return v;
}

// RMS of samples [from, to) of channel c.
double rms(const io::Audio& a, int64_t c, int64_t from, int64_t to) {
  double s = 0;
  for (int64_t i = from; i < to; ++i) s += double(a.channel(c)[i]) * a.channel(c)[i];
  return std::sqrt(s / static_cast<double>(to - from));
}

// Frequency from the upward zero crossings in [from, to), interpolated between samples.
double frequency(const io::Audio& a, int64_t c, int64_t from, int64_t to) {
  const float* x = a.channel(c);
  double first = -1, last = -1;
  int64_t crossings = 0;
  for (int64_t i = from; i + 1 < to; ++i)
    if (x[i] < 0 && x[i + 1] >= 0) {
      const double t = static_cast<double>(i) + x[i] / (x[i] - x[i + 1]);
      if (first < 0) first = t;
      last = t;
      ++crossings;
    }
  if (crossings < 2) return 0;
  return static_cast<double>(crossings - 1) * static_cast<double>(a.sample_rate) / (last - first);
}

// RMS of (decoded - original) over [from, to) of channel c, relative to the original's RMS: small
// only when the decoded track is aligned with the original to a fraction of a period.
double relative_error(const io::Audio& orig, const io::Audio& dec, int64_t c, int64_t from, int64_t to) {
  double d = 0, o = 0;
  for (int64_t i = from; i < to; ++i) {
    const double e = double(dec.channel(c)[i]) - orig.channel(c)[i];
    d += e * e;
    o += double(orig.channel(c)[i]) * orig.channel(c)[i];
  }
  return std::sqrt(d / o);
}

// The streams of each packet in file order: 'v' video, 'a' audio (libavformat's demuxer).
std::string packet_order(const std::string& path) {
  AVFormatContext* f = nullptr;
  if (avformat_open_input(&f, path.c_str(), nullptr, nullptr) != 0) return "";
  std::string order;
  AVPacket* p = av_packet_alloc();
  while (av_read_frame(f, p) >= 0) {
    order += f->streams[p->stream_index]->codecpar->codec_type == AVMEDIA_TYPE_AUDIO ? 'a' : 'v';
    av_packet_unref(p);
  }
  av_packet_free(&p);
  avformat_close_input(&f);
  return order;
}

bool has_partial(const fs::path& dir) {
  for (auto& e : fs::directory_iterator(dir))
    if (e.path().filename().string().find(".partial-") != std::string::npos) return true;
  return false;
}

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// The brief's case: 17 frames at 24 fps with 17/24 s of a stereo sine at 24000 Hz.
TEST(Mp4Audio, AacTrackProbesAndDecodesBack) {
  TempDir dir;
  const std::string path = dir.file("av.mp4");
  const io::Audio audio = sine(2, 24000, 17000);
  io::VideoWriteOptions opt;
  opt.fps = 24;
  opt.audio = &audio;
  std::vector<std::string> warnings;
  opt.warn = [&](const std::string& w) { warnings.push_back(w); };
  io::write_mp4(path, grey_video(17, 48, 64), opt);
  EXPECT_TRUE(warnings.empty()) << warnings.front();
  EXPECT_FALSE(has_partial(dir.path));

  io::Audio back;
  const io::VideoFileInfo info = io::read_video(path, nullptr, &back);
  EXPECT_EQ(info.video_streams, 1);
  EXPECT_EQ(info.frames, 17);
  EXPECT_EQ(info.codec, "h264");
  EXPECT_EQ(info.audio_streams, 1);
  ASSERT_TRUE(info.audio.has_value());
  EXPECT_EQ(info.audio->codec, "aac");
  EXPECT_EQ(info.audio->sample_rate, 24000);
  EXPECT_EQ(info.audio->channels, 2);
  EXPECT_NEAR(info.audio->duration, 17.0 / 24.0, 1024.0 / 24000.0);
  EXPECT_NEAR(static_cast<double>(info.audio->samples), 17000.0, 1024.0);
  ASSERT_EQ(back.channels, 2);
  EXPECT_EQ(back.sample_rate, 24000);
  EXPECT_EQ(back.samples_per_channel(), info.audio->samples);

  // Lossy, so roughly: the tones' frequencies and levels, away from the ends.
  const int64_t from = 2048, to = back.samples_per_channel() - 2048;
  EXPECT_NEAR(frequency(back, 0, from, to), 440.0, 440.0 * 0.01);
  EXPECT_NEAR(frequency(back, 1, from, to), 1000.0, 1000.0 * 0.01);
  EXPECT_NEAR(rms(back, 0, from, to), 0.5 / std::sqrt(2.0), 0.5 / std::sqrt(2.0) * 0.05);
  EXPECT_NEAR(rms(back, 1, from, to), 0.25 / std::sqrt(2.0), 0.25 / std::sqrt(2.0) * 0.05);
  // The track starts with the first frame (the encoder's priming samples are not heard): sample
  // for sample close to the original. A shift by one sample would be a 12% (440 Hz) / 26%
  // (1000 Hz) error.
  const double e0 = relative_error(audio, back, 0, from, to), e1 = relative_error(audio, back, 1, from, to);
  EXPECT_LT(e0, 0.05);
  EXPECT_LT(e1, 0.1);
  // The two streams interleave in the file (not all the video, then all the audio). The muxer's
  // interleaving queue would do that for a track fed at the end too; feeding it per frame keeps
  // that queue short.
  const std::string order = packet_order(path);
  EXPECT_EQ(std::count(order.begin(), order.end(), 'v'), 17) << order;
  EXPECT_LT(order.find('a'), order.rfind('v')) << order;
  EXPECT_NE(order.find("vava"), std::string::npos) << order;
  std::printf("aac stereo: relative error %.4f (440 Hz), %.4f (1000 Hz); duration %.5f s, %lld samples\n",
              e0, e1, info.audio->duration, static_cast<long long>(info.audio->samples));
}

TEST(Mp4Audio, MonoTrack) {
  TempDir dir;
  const std::string path = dir.file("mono.mp4");
  const io::Audio audio = sine(1, 48000, 24000);  // 0.5 s
  io::VideoWriteOptions opt;
  opt.fps = 16;
  opt.audio = &audio;
  io::write_mp4(path, grey_video(8, 32, 32), opt);
  io::Audio back;
  const io::VideoFileInfo info = io::read_video(path, nullptr, &back);
  ASSERT_TRUE(info.audio.has_value());
  EXPECT_EQ(info.audio->channels, 1);
  EXPECT_EQ(info.audio->sample_rate, 48000);
  EXPECT_NEAR(info.audio->duration, 0.5, 1024.0 / 48000.0);
  EXPECT_NEAR(frequency(back, 0, 2048, back.samples_per_channel() - 2048), 440.0, 4.4);
}

// A rate AAC has no table for is resampled to the next one it has (with a warning); the duration
// is unchanged.
TEST(Mp4Audio, UnsupportedRateIsResampled) {
  TempDir dir;
  const std::string path = dir.file("rate.mp4");
  const io::Audio audio = sine(2, 20000, 10000);  // 0.5 s at 20 kHz: AAC takes 22050
  io::VideoWriteOptions opt;
  opt.fps = 16;
  opt.audio = &audio;
  std::vector<std::string> warnings;
  opt.warn = [&](const std::string& w) { warnings.push_back(w); };
  io::write_mp4(path, grey_video(8, 32, 32), opt);
  ASSERT_EQ(warnings.size(), 1u);
  EXPECT_NE(warnings[0].find("22050"), std::string::npos) << warnings[0];
  io::Audio back;
  const io::VideoFileInfo info = io::read_video(path, nullptr, &back);
  ASSERT_TRUE(info.audio.has_value());
  EXPECT_EQ(info.audio->sample_rate, 22050);
  EXPECT_NEAR(info.audio->duration, 0.5, 1024.0 / 22050.0);
  EXPECT_NEAR(frequency(back, 0, 2048, back.samples_per_channel() - 2048), 440.0, 4.4);
}

// Opus through libopus (48 kHz: the 24 kHz waveform is taken as is, libopus has that rate), or,
// in an FFmpeg without libopus, an error that says so.
TEST(Mp4Audio, OpusTrackOrAClearError) {
  TempDir dir;
  const std::string path = dir.file("opus.mp4");
  const io::Audio audio = sine(2, 24000, 17000);
  io::VideoWriteOptions opt;
  opt.fps = 24;
  opt.audio = &audio;
  opt.audio_codec = io::AudioCodec::Opus;
  const std::string err = error_of([&] { io::write_mp4(path, grey_video(17, 48, 64), opt); });
  if (!err.empty()) {
    EXPECT_NE(err.find("libopus"), std::string::npos) << err;
    EXPECT_FALSE(fs::exists(path));
    GTEST_SKIP() << err;
  }
  io::Audio back;
  const io::VideoFileInfo info = io::read_video(path, nullptr, &back);
  ASSERT_TRUE(info.audio.has_value());
  EXPECT_NE(info.audio->codec.find("opus"), std::string::npos) << info.audio->codec;
  EXPECT_EQ(info.audio->channels, 2);
  EXPECT_NEAR(info.audio->duration, 17.0 / 24.0, 960.0 / 24000.0);
  const double r = static_cast<double>(back.sample_rate);
  EXPECT_NEAR(frequency(back, 0, int64_t(r / 10), back.samples_per_channel() - int64_t(r / 10)), 440.0, 4.4);
  EXPECT_NEAR(rms(back, 0, int64_t(r / 10), back.samples_per_channel() - int64_t(r / 10)), 0.5 / std::sqrt(2.0), 0.02);
}

TEST(Mp4Audio, BadWaveformsAreRefusedNamingTheProblem) {
  TempDir dir;
  const std::string path = dir.file("bad.mp4");
  const io::RgbVideo video = grey_video(4, 32, 32);
  auto attempt = [&](const io::Audio& a) {
    io::VideoWriteOptions opt;
    opt.audio = &a;
    return error_of([&] { io::write_mp4(path, video, opt); });
  };
  io::Audio empty;
  empty.channels = 2;
  empty.sample_rate = 24000;
  EXPECT_NE(attempt(empty).find("empty"), std::string::npos) << attempt(empty);
  io::Audio no_rate = sine(2, 24000, 100);
  no_rate.sample_rate = 0;
  EXPECT_NE(attempt(no_rate).find("sample rate must be positive, got 0"), std::string::npos) << attempt(no_rate);
  io::Audio nan = sine(2, 24000, 100);
  nan.samples[100 + 37] = std::nanf("");
  EXPECT_NE(attempt(nan).find("sample 37 of channel 1 is NaN"), std::string::npos) << attempt(nan);
  io::Audio inf = sine(2, 24000, 100);
  inf.samples[5] = INFINITY;
  EXPECT_NE(attempt(inf).find("sample 5 of channel 0 is infinite"), std::string::npos) << attempt(inf);
  io::Audio three = sine(2, 24000, 100);
  three.channels = 3;
  three.samples.resize(300);
  EXPECT_NE(attempt(three).find("3 channels"), std::string::npos) << attempt(three);
  io::Audio ragged = sine(2, 24000, 100);
  ragged.samples.pop_back();
  EXPECT_NE(attempt(ragged).find("do not split into 2 equal channels"), std::string::npos) << attempt(ragged);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(has_partial(dir.path));
}

// A failure in the middle of the file (here: the interrupt poll) leaves neither the file nor its
// temporary behind.
TEST(Mp4Audio, AFailureMidFileLeavesNothing) {
  TempDir dir;
  const std::string path = dir.file("stopped.mp4");
  const io::Audio audio = sine(2, 24000, 17000);
  io::VideoWriteOptions opt;
  opt.fps = 24;
  opt.audio = &audio;
  int polls = 0;
  opt.poll = [&] {
    if (++polls == 10) throw Error("interrupted");
  };
  EXPECT_EQ(error_of([&] { io::write_mp4(path, grey_video(17, 48, 64), opt); }), "interrupted");
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(has_partial(dir.path));
}

TEST(Mp4Audio, PngAndY4mRefuseAnAudioTrack) {
  TempDir dir;
  const io::Audio audio = sine(2, 24000, 1000);
  io::VideoWriteOptions opt;
  opt.audio = &audio;
  const std::string y = error_of([&] { io::write_y4m(dir.file("a.y4m"), grey_video(2, 16, 16), opt); });
  EXPECT_NE(y.find("y4m output carries no audio track"), std::string::npos) << y;
  const std::string p = error_of([&] { io::write_png_frames(dir.file("frames"), grey_video(2, 16, 16), opt); });
  EXPECT_NE(p.find("png frames output carries no audio track"), std::string::npos) << p;
  EXPECT_FALSE(fs::exists(dir.file("a.y4m")));
  EXPECT_FALSE(fs::exists(dir.file("frames")));
}

TEST(Wav, Pcm16RoundTripIsTheReferenceQuantization) {
  TempDir dir;
  const std::string path = dir.file("a.wav");
  io::Audio audio = sine(2, 24000, 5000);
  audio.samples[3] = 1.5f;  // clipped
  audio.samples[4] = -2.0f;
  audio.samples[5] = 0.99999f;
  io::write_wav(path, audio);
  EXPECT_FALSE(has_partial(dir.path));
  io::WavSampleFormat fmt = io::WavSampleFormat::Float32;
  const io::Audio back = io::read_wav(path, &fmt);
  EXPECT_EQ(fmt, io::WavSampleFormat::Pcm16);
  ASSERT_EQ(back.channels, 2);
  EXPECT_EQ(back.sample_rate, 24000);
  ASSERT_EQ(back.samples.size(), audio.samples.size());
  EXPECT_EQ(fs::file_size(path), 44u + 2u * 2u * 5000u);
  double worst = 0;
  for (size_t i = 0; i < audio.samples.size(); ++i) {
    const float x = audio.samples[i];
    ASSERT_EQ(back.samples[i], static_cast<float>(io::pcm16_from_float(x)) / 32767.0f) << i;
    worst = std::max(worst, std::abs(double(back.samples[i]) - std::clamp(double(x), -1.0, 1.0)));
  }
  EXPECT_LT(worst, 1.0 / 32767.0);
  EXPECT_EQ(back.samples[3], 1.0f);
  EXPECT_EQ(back.samples[4], -1.0f);
  EXPECT_EQ(io::pcm16_from_float(0.99999f), 32766);  // truncated, as torch's .to(int16)
  EXPECT_EQ(io::pcm16_from_float(-0.5f), -16383);

  // libavformat reads the same file: a pcm_s16le stream of 5000 samples.
  io::Audio av;
  const io::AudioStreamInfo info = io::read_audio(path, &av);
  EXPECT_EQ(info.codec, "pcm_s16le");
  EXPECT_EQ(info.sample_rate, 24000);
  EXPECT_EQ(info.channels, 2);
  EXPECT_EQ(info.samples, 5000);
  EXPECT_NEAR(info.duration, 5000.0 / 24000.0, 1e-9);
  for (size_t i = 0; i < audio.samples.size(); ++i)
    ASSERT_EQ(std::lround(av.samples[i] * 32768.0f), io::pcm16_from_float(audio.samples[i])) << i;
}

TEST(Wav, Float32RoundTripIsBitExact) {
  TempDir dir;
  const std::string path = dir.file("f.wav");
  io::Audio audio = sine(1, 48000, 4801);
  audio.samples[7] = 1.75f;  // not clipped in float
  io::write_wav(path, audio, io::WavSampleFormat::Float32);
  io::WavSampleFormat fmt = io::WavSampleFormat::Pcm16;
  const io::Audio back = io::read_wav(path, &fmt);
  EXPECT_EQ(fmt, io::WavSampleFormat::Float32);
  EXPECT_EQ(back.channels, 1);
  EXPECT_EQ(back.sample_rate, 48000);
  EXPECT_EQ(back.samples, audio.samples);
  const io::AudioStreamInfo info = io::read_audio(path);
  EXPECT_EQ(info.codec, "pcm_f32le");
  EXPECT_EQ(info.samples, 4801);
}

TEST(Wav, BadInputIsRefused) {
  TempDir dir;
  const std::string path = dir.file("bad.wav");
  io::Audio empty;
  empty.channels = 1;
  empty.sample_rate = 16000;
  EXPECT_NE(error_of([&] { io::write_wav(path, empty); }).find("is empty"), std::string::npos);
  io::Audio nan = sine(1, 16000, 10);
  nan.samples[9] = std::nanf("");
  EXPECT_NE(error_of([&] { io::write_wav(path, nan); }).find("sample 9 of channel 0 is NaN"), std::string::npos);
  io::Audio rate0 = sine(1, 16000, 10);
  rate0.sample_rate = 0;
  EXPECT_NE(error_of([&] { io::write_wav(path, rate0); }).find("sample rate must be positive"), std::string::npos);
  EXPECT_FALSE(fs::exists(path));
  EXPECT_FALSE(has_partial(dir.path));

  // Malformed files: named, with what is wrong.
  io::write_wav(path, sine(2, 16000, 100));
  std::string bytes = io::test::read_bytes(path);
  io::test::write_bytes(dir.file("short.wav"), bytes.substr(0, bytes.size() - 3));
  EXPECT_NE(error_of([&] { io::read_wav(dir.file("short.wav")); }).find("runs past the end"), std::string::npos);
  io::test::write_bytes(dir.file("riff.wav"), "RIFX" + bytes.substr(4));
  EXPECT_NE(error_of([&] { io::read_wav(dir.file("riff.wav")); }).find("not a WAV file"), std::string::npos);
  std::string b24 = bytes;
  b24[34] = 24;  // bits per sample
  io::test::write_bytes(dir.file("b24.wav"), b24);
  EXPECT_NE(error_of([&] { io::read_wav(dir.file("b24.wav")); }).find("24-bit"), std::string::npos);
  EXPECT_NE(error_of([&] { io::read_wav(dir.path.string()); }).find("a directory"), std::string::npos);
}

TEST(AudioTensor, FromAWaveformTensor) {
  const Tensor w = Tensor::from_f32({0.f, 0.5f, -0.5f, 0.25f, 0.125f, -1.f}, {2, 3});
  const io::Audio a = io::audio_from_tensor(w, 24000);
  EXPECT_EQ(a.channels, 2);
  EXPECT_EQ(a.samples_per_channel(), 3);
  EXPECT_EQ(a.channel(1)[0], 0.25f);
  EXPECT_DOUBLE_EQ(a.duration_seconds(), 3.0 / 24000.0);
  const io::Audio mono = io::audio_from_tensor(Tensor::from_f32({0.f, 0.1f}, {2}), 8000);
  EXPECT_EQ(mono.channels, 1);
  const std::string three = error_of([] { io::audio_from_tensor(Tensor::zeros({3, 4}, DType::F32), 24000); });
  EXPECT_NE(three.find("3 channels"), std::string::npos) << three;
  const std::string rank = error_of([] { io::audio_from_tensor(Tensor::zeros({1, 2, 4}, DType::F32), 24000); });
  EXPECT_NE(rank.find("[channels, samples]"), std::string::npos) << rank;
  const std::string rate = error_of([] { io::audio_from_tensor(Tensor::zeros({2, 4}, DType::F32), 0); });
  EXPECT_NE(rate.find("sample rate"), std::string::npos) << rate;
}

// A track that cannot be decoded (its packets overwritten) does not stop reading the frames when
// only they are asked for; asking for the audio is an error.
TEST(Mp4Audio, ABrokenTrackStillGivesTheFrames) {
  TempDir dir;
  const std::string path = dir.file("broken.mp4");
  const io::Audio audio = sine(2, 24000, 17000);
  io::VideoWriteOptions opt;
  opt.fps = 24;
  opt.audio = &audio;
  io::write_mp4(path, grey_video(17, 48, 64), opt);
  // Where the audio packets lie, from libavformat.
  std::vector<std::pair<int64_t, int>> spans;
  {
    AVFormatContext* f = nullptr;
    ASSERT_EQ(avformat_open_input(&f, path.c_str(), nullptr, nullptr), 0);
    ASSERT_GE(avformat_find_stream_info(f, nullptr), 0);
    const int ai = av_find_best_stream(f, AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
    ASSERT_GE(ai, 0);
    AVPacket* p = av_packet_alloc();
    while (av_read_frame(f, p) >= 0) {
      if (p->stream_index == ai && p->pos >= 0) spans.emplace_back(p->pos, p->size);
      av_packet_unref(p);
    }
    av_packet_free(&p);
    avformat_close_input(&f);
  }
  ASSERT_GT(spans.size(), 10u);
  std::string bytes = io::test::read_bytes(path);
  for (const auto& [pos, size] : spans)
    for (int i = 0; i < size; ++i) bytes[static_cast<size_t>(pos + i)] = static_cast<char>(0xA5 ^ (i * 37));
  io::test::write_bytes(path, bytes);

  const io::VideoFileInfo info = io::read_video(path);
  EXPECT_EQ(info.frames, 17);
  EXPECT_EQ(info.audio_streams, 1);
  EXPECT_FALSE(info.audio.has_value());
  EXPECT_NE(info.audio_error.find("decoding the audio of"), std::string::npos) << info.audio_error;
  io::Audio back;
  const std::string err = error_of([&] { io::read_video(path, nullptr, &back); });
  EXPECT_NE(err.find("decoding the audio of " + path), std::string::npos) << err;
}
