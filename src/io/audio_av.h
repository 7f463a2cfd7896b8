// Internal to the video writers/readers: the audio track of an MP4 (encoder, resampler, FIFO) and
// an audio stream's decoder. Not part of the public io API (io/audio.h, io/video.h are).
#pragma once
#include <functional>
#include <string>

#include "io/audio.h"
#include "io/video.h"
#include "io/video_av.h"

struct SwrContext;
struct AVAudioFifo;

namespace vidax::io {

// Encodes an Audio into a stream of an output container, in step with the video: the caller
// adds it before the header, calls write_until(t) after each video frame (t: the frame's end
// time) so that the packets interleave, and finish() after the last frame. The samples are
// quantized to 16-bit as the reference does (pcm16_from_float), converted by libswresample to the
// encoder's sample format (and rate, when the encoder does not take the waveform's), and cut into
// the encoder's frames with pts counted in samples from 0, the first video frame's time.
class AudioTrackWriter {
 public:
  AudioTrackWriter(AVFormatContext* fmt, const Audio& audio, AudioCodec codec, const std::string& path,
                   const std::function<void(const std::string&)>& warn);
  ~AudioTrackWriter();
  AudioTrackWriter(const AudioTrackWriter&) = delete;
  AudioTrackWriter& operator=(const AudioTrackWriter&) = delete;
  // Call once the header is written (the muxer may have changed the stream's time base).
  void write_until(double seconds);
  // The rest of the input, the resampler's tail, the last (short) frame, the encoder's delay.
  void finish();
  int64_t encoder_sample_rate() const { return enc_->sample_rate; }

 private:
  void convert(int64_t input_end);
  void encode_frames(bool last);

  AVFormatContext* fmt_;
  const Audio& audio_;
  std::string path_;
  std::vector<int16_t> s16_;  // the whole input, quantized, interleaved
  int64_t consumed_ = 0;      // input samples (per channel) handed to the resampler
  int64_t next_pts_ = 0;      // encoder samples sent
  int frame_size_ = 0;
  bool small_last_frame_ = false;
  const AVCodec* codec_;
  AvCodecContext enc_;
  AVStream* st_ = nullptr;
  SwrContext* swr_ = nullptr;
  AVAudioFifo* fifo_ = nullptr;
};

// Decodes one audio stream's packets (send) into AudioStreamInfo's counts and, when `out` is
// given, into planar float samples at the stream's rate.
class AudioStreamDecoder {
 public:
  AudioStreamDecoder(const AVStream* st, const std::string& path, Audio* out);
  ~AudioStreamDecoder();
  AudioStreamDecoder(const AudioStreamDecoder&) = delete;
  AudioStreamDecoder& operator=(const AudioStreamDecoder&) = delete;
  void send(const AVPacket* pkt);  // nullptr flushes
  AudioStreamInfo finish();

 private:
  void drain();
  void collect(const AVFrame* fr);

  std::string path_;
  Audio* out_;
  AvCodecContext dec_;
  AvFrame frame_;
  AudioStreamInfo info_;
  std::vector<std::vector<float>> planes_;
};

}  // namespace vidax::io
