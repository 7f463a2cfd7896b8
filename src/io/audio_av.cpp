// The MP4's audio track and the audio stream decoder (see audio_av.h), over libavcodec and
// libswresample. Compiled only with FFmpeg's libav* (VIDAX_HAVE_LIBAV).
#include "io/video.h"
#ifdef VIDAX_HAVE_LIBAV
#include "io/audio_av.h"

extern "C" {
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavutil/samplefmt.h>
#include <libswresample/swresample.h>
}

#include <algorithm>
#include <cmath>
#include <cstring>
#include <memory>
#endif

namespace vidax::io {
#ifdef VIDAX_HAVE_LIBAV

namespace {

const AVCodec* find_audio_encoder(AudioCodec codec) {
  if (codec == AudioCodec::Aac) {
    const AVCodec* c = avcodec_find_encoder_by_name("aac");  // FFmpeg's native AAC, as the reference
    VIDAX_CHECK(c != nullptr, "this FFmpeg build (libavcodec " << LIBAVCODEC_IDENT << ") has no AAC encoder");
    return c;
  }
  const AVCodec* c = avcodec_find_encoder_by_name("libopus");
  VIDAX_CHECK(c != nullptr, "this FFmpeg build (libavcodec " << LIBAVCODEC_IDENT
                                << ") has no libopus encoder (FFmpeg built without --enable-libopus); use the "
                                   "aac audio codec");
  return c;
}

// The waveform's rate when the encoder takes it, else the lowest rate above it it takes (else its
// highest): AAC takes 7350..96000 Hz in fixed steps, libopus 8000..48000.
int pick_sample_rate(const AVCodec* c, int want) {
  if (!c->supported_samplerates) return want;
  int above = 0, highest = 0;
  for (const int* r = c->supported_samplerates; *r; ++r) {
    if (*r == want) return want;
    if (*r > want && (above == 0 || *r < above)) above = *r;
    highest = std::max(highest, *r);
  }
  return above ? above : highest;
}

// Float where the encoder takes it (no second quantization), planar first (AAC's own format).
AVSampleFormat pick_sample_format(const AVCodec* c) {
  VIDAX_CHECK(c->sample_fmts && c->sample_fmts[0] != AV_SAMPLE_FMT_NONE,
              "the " << c->name << " encoder lists no sample format");
  for (AVSampleFormat want : {AV_SAMPLE_FMT_FLTP, AV_SAMPLE_FMT_FLT})
    for (const AVSampleFormat* f = c->sample_fmts; *f != AV_SAMPLE_FMT_NONE; ++f)
      if (*f == want) return want;
  return c->sample_fmts[0];
}

// A sample buffer of av_samples_alloc_array_and_samples, freed at scope exit.
struct SampleBuffer {
  uint8_t** data = nullptr;
  SampleBuffer(int channels, int samples, AVSampleFormat fmt) {
    int r = av_samples_alloc_array_and_samples(&data, nullptr, channels, std::max(samples, 1), fmt, 0);
    VIDAX_CHECK(r >= 0, "cannot allocate " << samples << " audio samples: " << av_error_text(r));
  }
  ~SampleBuffer() {
    if (data) av_freep(&data[0]);
    av_freep(&data);
  }
  SampleBuffer(const SampleBuffer&) = delete;
  SampleBuffer& operator=(const SampleBuffer&) = delete;
};

}  // namespace

// ---- the MP4's audio track ----------------------------------------------------------

AudioTrackWriter::AudioTrackWriter(AVFormatContext* fmt, const Audio& audio, AudioCodec codec,
                                   const std::string& path, const std::function<void(const std::string&)>& warn)
    : fmt_(fmt), audio_(audio), path_(path), codec_(find_audio_encoder(codec)), enc_(codec_) {
  check_audio(audio, "audio for " + path);
  VIDAX_CHECK(audio.sample_rate <= 768000, "audio for " << path << ": a sample rate of " << audio.sample_rate
                                                        << " Hz is beyond what the encoders take");
  const int channels = static_cast<int>(audio.channels);
  const int in_rate = static_cast<int>(audio.sample_rate);
  const int out_rate = pick_sample_rate(codec_, in_rate);
  if (out_rate != in_rate && warn)
    warn(std::string("the ") + codec_->name + " encoder takes no " + std::to_string(in_rate) +
         " Hz audio; resampling the track to " + std::to_string(out_rate) + " Hz");
  enc_->sample_fmt = pick_sample_format(codec_);
  enc_->sample_rate = out_rate;
  av_channel_layout_default(&enc_->ch_layout, channels);
  enc_->time_base = AVRational{1, out_rate};
  // PyAV's add_stream defaults, which the reference runs with: the encoder picks its bit rate
  // (AAC: by its quality setting). libopus picks 64 kb/s per channel pair plus 32 kb/s for a
  // coupled one and warns that it did: that choice is given explicitly.
  enc_->bit_rate = codec == AudioCodec::Opus ? (channels == 2 ? 96000 : 64000) : 0;
  enc_->bit_rate_tolerance = 32000;
  if (fmt->oformat->flags & AVFMT_GLOBALHEADER) enc_->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
  av_check(avcodec_open2(enc_.get(), codec_, nullptr), (std::string("opening the ") + codec_->name +
                                                        " audio encoder for").c_str(), path);
  const bool variable = (codec_->capabilities & AV_CODEC_CAP_VARIABLE_FRAME_SIZE) != 0;
  frame_size_ = enc_->frame_size > 0 ? enc_->frame_size : 1024;
  small_last_frame_ = variable || (codec_->capabilities & AV_CODEC_CAP_SMALL_LAST_FRAME) != 0;

  st_ = avformat_new_stream(fmt, nullptr);
  VIDAX_CHECK(st_ != nullptr, "cannot add an audio stream to " << path);
  av_check(avcodec_parameters_from_context(st_->codecpar, enc_.get()), "setting audio stream parameters of", path);
  st_->time_base = enc_->time_base;

  AVChannelLayout in_layout;
  av_channel_layout_default(&in_layout, channels);
  int r = swr_alloc_set_opts2(&swr_, &enc_->ch_layout, enc_->sample_fmt, out_rate, &in_layout, AV_SAMPLE_FMT_S16,
                              in_rate, 0, nullptr);
  av_channel_layout_uninit(&in_layout);
  av_check(r, "configuring the audio resampler for", path);
  av_check(swr_init(swr_), "starting the audio resampler for", path);
  fifo_ = av_audio_fifo_alloc(enc_->sample_fmt, channels, frame_size_);
  VIDAX_CHECK(fifo_ != nullptr, "out of memory (audio FIFO)");

  // The reference's ingestion: clip, * 32767, truncated to int16, interleaved (audio_mux.write_audio).
  const int64_t n = audio.samples_per_channel();
  s16_.resize(static_cast<size_t>(n * channels));
  for (int64_t c = 0; c < channels; ++c)
    for (int64_t i = 0; i < n; ++i) s16_[static_cast<size_t>(i * channels + c)] = pcm16_from_float(audio.channel(c)[i]);
}

AudioTrackWriter::~AudioTrackWriter() {
  swr_free(&swr_);
  if (fifo_) av_audio_fifo_free(fifo_);
}

// Resamples the input up to `input_end` (samples per channel; consumed_ == input_end == the end
// flushes the resampler's delay) into the FIFO.
void AudioTrackWriter::convert(int64_t input_end) {
  const int channels = static_cast<int>(audio_.channels);
  const bool flush = input_end == consumed_;
  for (;;) {
    const int in_count = static_cast<int>(std::min<int64_t>(input_end - consumed_, 1 << 20));
    const int out_max = swr_get_out_samples(swr_, in_count);
    av_check(out_max, "sizing the resampler's output for", path_);
    if (out_max == 0 && in_count == 0) return;
    SampleBuffer out(channels, out_max, enc_->sample_fmt);
    const uint8_t* in[1] = {reinterpret_cast<const uint8_t*>(s16_.data() + consumed_ * channels)};
    const int got = swr_convert(swr_, out.data, out_max, in_count > 0 ? in : nullptr, in_count);
    av_check(got, "resampling the audio of", path_);
    consumed_ += in_count;
    if (got > 0) {
      const int w = av_audio_fifo_write(fifo_, reinterpret_cast<void**>(out.data), got);
      VIDAX_CHECK(w == got, "cannot queue " << got << " audio samples for " << path_);
    }
    if (flush ? got == 0 : consumed_ >= input_end) return;
  }
}

void AudioTrackWriter::encode_frames(bool last) {
  const int channels = static_cast<int>(audio_.channels);
  for (;;) {
    const int queued = av_audio_fifo_size(fifo_);
    if (queued == 0 || (queued < frame_size_ && !last)) return;
    const int take = std::min(queued, frame_size_);
    AvFrame fr;
    fr->nb_samples = small_last_frame_ ? take : frame_size_;
    fr->format = enc_->sample_fmt;
    fr->sample_rate = enc_->sample_rate;
    av_check(av_channel_layout_copy(&fr->ch_layout, &enc_->ch_layout), "preparing an audio frame for", path_);
    av_check(av_frame_get_buffer(fr.get(), 0), "allocating an audio frame for", path_);
    if (take < fr->nb_samples)  // an encoder that takes whole frames only: the tail padded with silence
      av_samples_set_silence(fr->data, 0, fr->nb_samples, channels, enc_->sample_fmt);
    const int r = av_audio_fifo_read(fifo_, reinterpret_cast<void**>(fr->data), take);
    VIDAX_CHECK(r == take, "cannot read " << take << " queued audio samples for " << path_);
    fr->pts = next_pts_;
    next_pts_ += fr->nb_samples;
    encode_and_mux(enc_.get(), fr.get(), fmt_, st_, path_);
  }
}

void AudioTrackWriter::write_until(double seconds) {
  const int64_t n = audio_.samples_per_channel();
  const double at = std::floor(seconds * static_cast<double>(audio_.sample_rate));
  const int64_t end = std::clamp<int64_t>(static_cast<int64_t>(std::min(at, 9.0e18)), 0, n);
  if (end > consumed_) convert(end);
  encode_frames(false);
}

void AudioTrackWriter::finish() {
  const int64_t n = audio_.samples_per_channel();
  if (n > consumed_) convert(n);
  convert(n);  // the resampler's delay
  encode_frames(true);
  encode_and_mux(enc_.get(), nullptr, fmt_, st_, path_);
}

// ---- the decoder ------------------------------------------------------------------------

namespace {

const AVCodec* find_audio_decoder(const AVStream* st, const std::string& path) {
  const AVCodec* c = avcodec_find_decoder(st->codecpar->codec_id);
  VIDAX_CHECK(c, "no decoder for the " << avcodec_get_name(st->codecpar->codec_id) << " audio of " << path);
  return c;
}

float sample_as_float(const uint8_t* p, AVSampleFormat packed) {
  switch (packed) {
    case AV_SAMPLE_FMT_U8: return (static_cast<float>(*p) - 128.0f) / 128.0f;
    case AV_SAMPLE_FMT_S16: {
      int16_t v;
      std::memcpy(&v, p, 2);
      return static_cast<float>(v) / 32768.0f;
    }
    case AV_SAMPLE_FMT_S32: {
      int32_t v;
      std::memcpy(&v, p, 4);
      return static_cast<float>(static_cast<double>(v) / 2147483648.0);
    }
    case AV_SAMPLE_FMT_FLT: {
      float v;
      std::memcpy(&v, p, 4);
      return v;
    }
    case AV_SAMPLE_FMT_DBL: {
      double v;
      std::memcpy(&v, p, 8);
      return static_cast<float>(v);
    }
    default: break;
  }
  throw Error(msg() << "audio sample format " << av_get_sample_fmt_name(packed) << " is not read");
}

}  // namespace

AudioStreamDecoder::AudioStreamDecoder(const AVStream* st, const std::string& path, Audio* out)
    : path_(path), out_(out), dec_(find_audio_decoder(st, path)) {
  av_check(avcodec_parameters_to_context(dec_.get(), st->codecpar), "reading audio codec parameters of", path);
  av_check(avcodec_open2(dec_.get(), dec_->codec, nullptr), "opening the audio decoder for", path);
  info_.codec = dec_->codec->name;
  info_.sample_rate = st->codecpar->sample_rate;
  info_.channels = st->codecpar->ch_layout.nb_channels;
  if (st->duration != AV_NOPTS_VALUE && st->duration > 0) info_.duration = static_cast<double>(st->duration) * av_q2d(st->time_base);
  if (out_) planes_.resize(static_cast<size_t>(std::max<int64_t>(info_.channels, 0)));
}

AudioStreamDecoder::~AudioStreamDecoder() = default;

void AudioStreamDecoder::collect(const AVFrame* fr) {
  if (!out_) return;
  const int ch = fr->ch_layout.nb_channels;
  VIDAX_CHECK(ch == static_cast<int>(planes_.size()),
              path_ << ": the audio's channel count changed mid-stream (" << planes_.size() << " -> " << ch << ")");
  const AVSampleFormat f = static_cast<AVSampleFormat>(fr->format);
  const AVSampleFormat packed = av_get_packed_sample_fmt(f);
  const bool planar = av_sample_fmt_is_planar(f) != 0;
  const int bytes = av_get_bytes_per_sample(f);
  for (int c = 0; c < ch; ++c)
    for (int i = 0; i < fr->nb_samples; ++i) {
      const uint8_t* p = planar ? fr->extended_data[c] + i * bytes : fr->extended_data[0] + (i * ch + c) * bytes;
      planes_[static_cast<size_t>(c)].push_back(sample_as_float(p, packed));
    }
}

void AudioStreamDecoder::drain() {
  for (;;) {
    int r = avcodec_receive_frame(dec_.get(), frame_.get());
    if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return;
    av_check(r, "decoding the audio of", path_);
    info_.samples += frame_->nb_samples;
    collect(frame_.get());
    av_frame_unref(frame_.get());
  }
}

void AudioStreamDecoder::send(const AVPacket* pkt) {
  av_check(avcodec_send_packet(dec_.get(), pkt), "decoding the audio of", path_);
  drain();
}

AudioStreamInfo AudioStreamDecoder::finish() {
  send(nullptr);
  if (info_.duration == 0 && info_.sample_rate > 0)
    info_.duration = static_cast<double>(info_.samples) / static_cast<double>(info_.sample_rate);
  if (out_) {
    *out_ = Audio{};
    out_->channels = static_cast<int64_t>(planes_.size());
    out_->sample_rate = info_.sample_rate;
    for (const auto& p : planes_) out_->samples.insert(out_->samples.end(), p.begin(), p.end());
  }
  return info_;
}

#endif  // VIDAX_HAVE_LIBAV
}  // namespace vidax::io
