// The waveform checks and the WAV writer/reader (see audio.h). WAV is a RIFF header and a data
// chunk, written by hand so that it works in a build without FFmpeg too.
#include "io/audio.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

#include "io/output_target.h"
#include "io/video.h"

namespace vidax::io {

void check_audio(const Audio& a, const std::string& what) {
  VIDAX_CHECK(!a.samples.empty(), what << " is empty (no samples)");
  VIDAX_CHECK(a.sample_rate > 0, what << ": the sample rate must be positive, got " << a.sample_rate << " Hz");
  VIDAX_CHECK(a.channels >= 1 && a.channels <= kMaxAudioChannels,
              what << ": " << a.channels << " channels; the writers take mono or stereo (1 or 2 channels)");
  VIDAX_CHECK(a.samples.size() % static_cast<size_t>(a.channels) == 0,
              what << ": " << a.samples.size() << " samples do not split into " << a.channels << " equal channels");
  const int64_t n = a.samples_per_channel();
  for (size_t i = 0; i < a.samples.size(); ++i)
    VIDAX_CHECK(std::isfinite(a.samples[i]), what << ": sample " << static_cast<int64_t>(i) % n << " of channel "
                                                  << static_cast<int64_t>(i) / n << " is "
                                                  << (std::isnan(a.samples[i]) ? "NaN" : "infinite"));
}

Audio audio_from_tensor(const Tensor& w, int64_t sample_rate, const std::string& what) {
  VIDAX_CHECK(w.defined() && (w.dim() == 1 || w.dim() == 2),
              what << ": expected a [channels, samples] or [samples] waveform, got "
                   << (w.defined() ? w.str() : "undefined"));
  VIDAX_CHECK(dtype_is_float(w.dtype()), what << ": expected a float waveform, got " << w.str());
  Audio a;
  a.sample_rate = sample_rate;
  a.channels = w.dim() == 1 ? 1 : w.size(0);
  a.samples = w.contiguous().to(DType::F32).to_f32_vector();
  check_audio(a, what);
  return a;
}

int16_t pcm16_from_float(float x) {
  const float c = std::clamp(x, -1.0f, 1.0f);
  return static_cast<int16_t>(c * 32767.0f);  // torch's .to(int16) truncates toward zero
}

const char* audio_codec_name(AudioCodec c) {
  switch (c) {
    case AudioCodec::Aac: return "aac";
    case AudioCodec::Opus: return "opus";
  }
  return "?";
}

AudioCodec parse_audio_codec(const std::string& s) {
  for (AudioCodec c : {AudioCodec::Aac, AudioCodec::Opus})
    if (s == audio_codec_name(c)) return c;
  throw Error(msg() << "audio codec " << s << ": unknown; choose aac or opus");
}

// ---- WAV --------------------------------------------------------------------------

namespace {

constexpr uint16_t kWavPcm = 1, kWavFloat = 3, kWavExtensible = 0xFFFE;

void put16(std::string& s, uint32_t v) {
  s += static_cast<char>(v & 0xFF);
  s += static_cast<char>((v >> 8) & 0xFF);
}
void put32(std::string& s, uint32_t v) {
  put16(s, v & 0xFFFF);
  put16(s, v >> 16);
}
uint32_t get16(const std::string& s, size_t at) {
  return static_cast<uint32_t>(static_cast<uint8_t>(s[at])) | static_cast<uint32_t>(static_cast<uint8_t>(s[at + 1])) << 8;
}
uint32_t get32(const std::string& s, size_t at) { return get16(s, at) | get16(s, at + 2) << 16; }

}  // namespace

void write_wav(const std::string& path, const Audio& audio, WavSampleFormat format) {
  check_audio(audio, "audio for " + path);
  const bool pcm = format == WavSampleFormat::Pcm16;
  const uint32_t bytes_per_sample = pcm ? 2 : 4;
  const int64_t n = audio.samples_per_channel();
  const uint64_t data_bytes = static_cast<uint64_t>(n) * static_cast<uint64_t>(audio.channels) * bytes_per_sample;
  // The RIFF sizes are 32-bit: the whole file must stay under 4 GiB.
  VIDAX_CHECK(data_bytes < (uint64_t(1) << 32) - 64,
              path << ": " << n << " samples x " << audio.channels << " channels do not fit a WAV file (4 GiB)");
  VIDAX_CHECK(audio.sample_rate <= 0x7FFFFFFF / (bytes_per_sample * audio.channels),
              path << ": sample rate " << audio.sample_rate << " Hz is too high for a WAV header");

  std::string h;
  const uint32_t fmt_bytes = pcm ? 16 : 18;  // a non-PCM fmt chunk carries cbSize
  const uint32_t fact_bytes = pcm ? 0 : 12;  // and a fact chunk (samples per channel)
  h += "RIFF";
  put32(h, static_cast<uint32_t>(4 + 8 + fmt_bytes + fact_bytes + 8 + data_bytes));
  h += "WAVE";
  h += "fmt ";
  put32(h, fmt_bytes);
  put16(h, pcm ? kWavPcm : kWavFloat);
  put16(h, static_cast<uint32_t>(audio.channels));
  put32(h, static_cast<uint32_t>(audio.sample_rate));
  put32(h, static_cast<uint32_t>(audio.sample_rate * audio.channels * bytes_per_sample));  // bytes per second
  put16(h, static_cast<uint32_t>(audio.channels * bytes_per_sample));                      // block align
  put16(h, bytes_per_sample * 8);
  if (!pcm) {
    put16(h, 0);  // cbSize
    h += "fact";
    put32(h, 4);
    put32(h, static_cast<uint32_t>(n));
  }
  h += "data";
  put32(h, static_cast<uint32_t>(data_bytes));

  // Interleaved little-endian samples (x86-64 and every target we build for are little-endian).
  std::string body(static_cast<size_t>(data_bytes), '\0');
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < audio.channels; ++c) {
      const float x = audio.channel(c)[i];
      char* dst = body.data() + (i * audio.channels + c) * bytes_per_sample;
      if (pcm) {
        const int16_t v = pcm16_from_float(x);
        std::memcpy(dst, &v, 2);
      } else {
        std::memcpy(dst, &x, 4);
      }
    }

  PendingOutput out(path);
  std::ofstream os(out.temp_path(), std::ios::binary);
  VIDAX_CHECK(os.is_open(), "cannot create " << out.temp_path() << ": " << std::strerror(errno));
  os.write(h.data(), static_cast<std::streamsize>(h.size()));
  os.write(body.data(), static_cast<std::streamsize>(body.size()));
  os.close();
  VIDAX_CHECK(os.good(), "cannot write " << out.temp_path() << " (disk full?)");
  out.commit();
}

Audio read_wav(const std::string& path, WavSampleFormat* format) {
  const std::string problem = input_file_problem(path);
  VIDAX_CHECK(problem.empty(), "cannot read the WAV file " << path << ": it is " << problem);
  std::ifstream in(path, std::ios::binary);
  VIDAX_CHECK(in.is_open(), "cannot open the WAV file " << path << ": " << std::strerror(errno));
  const std::string s((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  VIDAX_CHECK(s.size() >= 12 && s.compare(0, 4, "RIFF") == 0 && s.compare(8, 4, "WAVE") == 0,
              path << " is not a WAV file (no RIFF/WAVE header)");
  uint32_t tag = 0, channels = 0, rate = 0, bits = 0;
  bool have_fmt = false;
  size_t data_at = 0, data_bytes = 0;
  bool have_data = false;
  for (size_t at = 12; at + 8 <= s.size();) {
    const std::string id = s.substr(at, 4);
    const size_t size = get32(s, at + 4);
    const size_t body = at + 8;
    VIDAX_CHECK(size <= s.size() - body, path << ": the '" << id << "' chunk runs past the end of the file (" << size
                                              << " bytes at offset " << body << " of " << s.size() << ")");
    if (id == "fmt ") {
      VIDAX_CHECK(size >= 16, path << ": a " << size << "-byte fmt chunk is too short");
      tag = get16(s, body);
      channels = get16(s, body + 2);
      rate = get32(s, body + 4);
      bits = get16(s, body + 14);
      if (tag == kWavExtensible) {
        VIDAX_CHECK(size >= 40, path << ": a WAVE_FORMAT_EXTENSIBLE fmt chunk of " << size << " bytes is too short");
        tag = get16(s, body + 24);  // the sub-format GUID starts with the format tag
      }
      have_fmt = true;
    } else if (id == "data") {
      data_at = body;
      data_bytes = size;
      have_data = true;
      break;
    }
    at = body + size + (size & 1);  // chunks are padded to an even size
  }
  VIDAX_CHECK(have_fmt, path << ": no fmt chunk before the data");
  VIDAX_CHECK(have_data, path << ": no data chunk");
  const bool pcm16 = tag == kWavPcm && bits == 16, f32 = tag == kWavFloat && bits == 32;
  VIDAX_CHECK(pcm16 || f32, path << ": format tag " << tag << " with " << bits
                                 << "-bit samples; vidax reads 16-bit PCM and 32-bit float WAV files");
  VIDAX_CHECK(channels >= 1, path << ": the fmt chunk says 0 channels");
  VIDAX_CHECK(rate >= 1, path << ": the fmt chunk says a sample rate of 0 Hz");
  const size_t frame = static_cast<size_t>(channels) * (bits / 8);
  VIDAX_CHECK(data_bytes % frame == 0,
              path << ": " << data_bytes << " data bytes are not whole frames of " << frame << " bytes");
  Audio a;
  a.channels = channels;
  a.sample_rate = rate;
  const int64_t n = static_cast<int64_t>(data_bytes / frame);
  a.samples.resize(static_cast<size_t>(n) * channels);
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < channels; ++c) {
      const char* src = s.data() + data_at + static_cast<size_t>(i) * frame + static_cast<size_t>(c) * (bits / 8);
      float& dst = a.samples[static_cast<size_t>(c * n + i)];
      if (pcm16) {
        int16_t v;
        std::memcpy(&v, src, 2);
        dst = static_cast<float>(v) / 32767.0f;
      } else {
        std::memcpy(&dst, src, 4);
      }
    }
  if (format) *format = pcm16 ? WavSampleFormat::Pcm16 : WavSampleFormat::Float32;
  return a;
}

}  // namespace vidax::io
