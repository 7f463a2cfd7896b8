// Internal to the video writers/readers: small RAII owners for libav* objects
// and the RGB -> YUV conversion. Not part of the public io API.
#pragma once
extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/imgutils.h>
#include <libavutil/opt.h>
#include <libswscale/swscale.h>
}

#include <string>

#include "core/error.h"

namespace vidax::io {

inline std::string av_error_text(int err) {
  char buf[AV_ERROR_MAX_STRING_SIZE] = {0};
  av_strerror(err, buf, sizeof buf);
  return buf;
}

inline void av_check(int r, const char* doing, const std::string& path) {
  VIDAX_CHECK(r >= 0, doing << " " << path << ": " << av_error_text(r));
}

class AvPacket {
 public:
  AvPacket() : p_(av_packet_alloc()) { VIDAX_CHECK(p_, "out of memory (AVPacket)"); }
  ~AvPacket() { av_packet_free(&p_); }
  AvPacket(const AvPacket&) = delete;
  AvPacket& operator=(const AvPacket&) = delete;
  AVPacket* get() const { return p_; }
  AVPacket* operator->() const { return p_; }

 private:
  AVPacket* p_;
};

class AvFrame {
 public:
  AvFrame() : f_(av_frame_alloc()) { VIDAX_CHECK(f_, "out of memory (AVFrame)"); }
  ~AvFrame() { av_frame_free(&f_); }
  AvFrame(AvFrame&& o) noexcept : f_(o.f_) { o.f_ = nullptr; }
  AvFrame(const AvFrame&) = delete;
  AvFrame& operator=(const AvFrame&) = delete;
  static AvFrame video(int64_t w, int64_t h, AVPixelFormat fmt) {
    AvFrame fr;
    fr->width = static_cast<int>(w);
    fr->height = static_cast<int>(h);
    fr->format = fmt;
    int r = av_frame_get_buffer(fr.get(), 0);
    VIDAX_CHECK(r >= 0, "cannot allocate a " << w << "x" << h << " frame: " << av_error_text(r));
    return fr;
  }
  AVFrame* get() const { return f_; }
  AVFrame* operator->() const { return f_; }

 private:
  AVFrame* f_;
};

class AvCodecContext {
 public:
  explicit AvCodecContext(const AVCodec* c) : c_(avcodec_alloc_context3(c)) {
    VIDAX_CHECK(c_, "out of memory (AVCodecContext)");
  }
  ~AvCodecContext() { avcodec_free_context(&c_); }
  AvCodecContext(const AvCodecContext&) = delete;
  AvCodecContext& operator=(const AvCodecContext&) = delete;
  AVCodecContext* get() const { return c_; }
  AVCodecContext* operator->() const { return c_; }

 private:
  AVCodecContext* c_;
};

// An output container on a file; closes the file (without a trailer) on error.
class AvFormatOutput {
 public:
  AvFormatOutput(const std::string& path, const char* format) : path_(path) {
    int r = avformat_alloc_output_context2(&f_, nullptr, format, path.c_str());
    VIDAX_CHECK(r >= 0 && f_, "cannot create a " << format << " container for " << path << ": " << av_error_text(r));
  }
  ~AvFormatOutput() {
    if (f_ && f_->pb && !(f_->oformat->flags & AVFMT_NOFILE)) avio_closep(&f_->pb);
    avformat_free_context(f_);
  }
  AvFormatOutput(const AvFormatOutput&) = delete;
  AvFormatOutput& operator=(const AvFormatOutput&) = delete;
  AVFormatContext* get() const { return f_; }
  AVFormatContext* operator->() const { return f_; }
  void open_and_write_header() {
    if (!(f_->oformat->flags & AVFMT_NOFILE))
      av_check(avio_open(&f_->pb, path_.c_str(), AVIO_FLAG_WRITE), "cannot open", path_);
    av_check(avformat_write_header(f_, nullptr), "writing the header of", path_);
  }
  void write_trailer_and_close() {
    av_check(av_write_trailer(f_), "writing the trailer of", path_);
    if (!(f_->oformat->flags & AVFMT_NOFILE)) {
      int r = avio_closep(&f_->pb);
      av_check(r, "closing", path_);
    }
  }

 private:
  std::string path_;
  AVFormatContext* f_ = nullptr;
};

// Sends one frame (or nullptr to flush) and writes every packet that comes out, its timestamps
// moved from the encoder's time base to the stream's.
inline void encode_and_mux(AVCodecContext* enc, AVFrame* frame, AVFormatContext* fmt, AVStream* st,
                           const std::string& path) {
  av_check(avcodec_send_frame(enc, frame), "encoding a frame for", path);
  AvPacket pkt;
  for (;;) {
    int r = avcodec_receive_packet(enc, pkt.get());
    if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return;
    av_check(r, "encoding", path);
    av_packet_rescale_ts(pkt.get(), enc->time_base, st->time_base);
    pkt->stream_index = st->index;
    av_check(av_interleaved_write_frame(fmt, pkt.get()), "writing", path);
  }
}

// Packed RGB24 -> planar YUV (BT.601, limited range), bicubic chroma filter as
// the ffmpeg command line (and so the reference's imageio writer) uses.
class RgbToYuv {
 public:
  RgbToYuv(int64_t w, int64_t h, AVPixelFormat dst) : w_(static_cast<int>(w)) {
    ctx_ = sws_getContext(w_, static_cast<int>(h), AV_PIX_FMT_RGB24, w_, static_cast<int>(h), dst,
                          SWS_BICUBIC, nullptr, nullptr, nullptr);
    VIDAX_CHECK(ctx_, "cannot create an RGB -> " << av_get_pix_fmt_name(dst) << " converter for " << w << "x" << h);
    h_ = static_cast<int>(h);
  }
  ~RgbToYuv() { sws_freeContext(ctx_); }
  RgbToYuv(const RgbToYuv&) = delete;
  RgbToYuv& operator=(const RgbToYuv&) = delete;
  void convert(const uint8_t* rgb, AVFrame* dst) {
    const uint8_t* src[1] = {rgb};
    const int stride[1] = {3 * w_};
    sws_scale(ctx_, src, stride, 0, h_, dst->data, dst->linesize);
  }

 private:
  SwsContext* ctx_ = nullptr;
  int w_ = 0, h_ = 0;
};

}  // namespace vidax::io
