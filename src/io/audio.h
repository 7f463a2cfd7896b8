// Audio out (and back in, for tests and probes): a float waveform, WAV files, and the audio track
// the MP4 writer muxes next to the video (io/video.h's VideoWriteOptions::audio). Matches the
// LTX-2 reference's media_io choices (ltx_core/color/audio_mux.py): the waveform is clipped to
// [-1, 1] and quantized to 16-bit as trunc(x * 32767) before any encoder sees it; AAC (FFmpeg's
// native encoder, its own bit rate choice) in the MP4; 16-bit PCM in a WAV.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace vidax::io {

// A waveform: `channels` planes of `samples_per_channel()` float samples, nominally in [-1, 1]:
// samples[c * samples_per_channel() + i] (planar, as the [channels, samples] tensor a vocoder
// returns).
struct Audio {
  int64_t channels = 0;
  int64_t sample_rate = 0;  // Hz
  std::vector<float> samples;
  int64_t samples_per_channel() const {
    return channels > 0 ? static_cast<int64_t>(samples.size()) / channels : 0;
  }
  double duration_seconds() const {
    return sample_rate > 0 ? static_cast<double>(samples_per_channel()) / static_cast<double>(sample_rate) : 0.0;
  }
  const float* channel(int64_t c) const { return samples.data() + c * samples_per_channel(); }
};

// The largest channel count the writers take: mono or stereo (the reference writes stereo only).
constexpr int64_t kMaxAudioChannels = 2;

// Throws vidax::Error naming `what` and the problem: no samples, a sample rate <= 0, a channel
// count outside 1..2, a buffer that is not channels x samples, a NaN or infinite sample (its
// channel and index).
void check_audio(const Audio& audio, const std::string& what = "audio");

// A [channels, samples] (or [samples], mono) float tensor of any float dtype -> Audio, checked.
Audio audio_from_tensor(const Tensor& waveform, int64_t sample_rate, const std::string& what = "audio");

// The reference's 16-bit quantization (audio_mux.write_audio): clip to [-1, 1], times 32767,
// truncated toward zero.
int16_t pcm16_from_float(float x);

enum class AudioCodec { Aac, Opus };
const char* audio_codec_name(AudioCodec c);  // "aac" | "opus"
AudioCodec parse_audio_codec(const std::string& s);  // throws listing them

enum class WavSampleFormat { Pcm16, Float32 };

// A RIFF/WAVE file, written by hand (no FFmpeg needed) under a temporary name and renamed into
// place (PendingOutput: nothing half-written). Pcm16 (the reference's encode_audio: pcm_s16le,
// quantized by pcm16_from_float) or Float32 (IEEE float, the samples bit for bit).
void write_wav(const std::string& path, const Audio& audio, WavSampleFormat format = WavSampleFormat::Pcm16);

// Reads a WAV file of the two formats write_wav writes (16-bit PCM, 32-bit IEEE float; a plain or
// a WAVE_FORMAT_EXTENSIBLE header). 16-bit samples come back as v / 32767 (the inverse of
// write_wav's scale). *format (when given) says which it was. Throws naming the file on anything
// malformed or of another format.
Audio read_wav(const std::string& path, WavSampleFormat* format = nullptr);

}  // namespace vidax::io
