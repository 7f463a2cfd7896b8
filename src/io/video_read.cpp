// Reads a video file back with libavformat/libavcodec (tests, `inspect`).
#include <algorithm>

#include <memory>

#include "io/video.h"
#ifdef VIDAX_HAVE_LIBAV
#include "io/audio_av.h"
#include "io/video_av.h"
#endif

namespace vidax::io {
#ifdef VIDAX_HAVE_LIBAV

namespace {

struct InputFile {
  AVFormatContext* f = nullptr;
  ~InputFile() { avformat_close_input(&f); }
};

void collect_frame(const AVFrame* fr, SwsContext** sws, RgbVideo* out) {
  if (!out) return;
  if (out->frames == 0) {
    out->width = fr->width;
    out->height = fr->height;
  }
  VIDAX_CHECK(fr->width == out->width && fr->height == out->height,
              "frame size changed mid-stream: " << fr->width << "x" << fr->height);
  if (fr->format == AV_PIX_FMT_GRAY8) {  // replicated, as PIL's convert("RGB") (no range scaling)
    out->rgb.resize(out->rgb.size() + out->frame_bytes());
    uint8_t* dst = out->rgb.data() + out->frames * out->frame_bytes();
    for (int64_t y = 0; y < fr->height; ++y)
      for (int64_t x = 0; x < fr->width; ++x)
        for (int c = 0; c < 3; ++c) dst[(y * fr->width + x) * 3 + c] = fr->data[0][y * fr->linesize[0] + x];
    ++out->frames;
    return;
  }
  *sws = sws_getCachedContext(*sws, fr->width, fr->height, static_cast<AVPixelFormat>(fr->format), fr->width,
                              fr->height, AV_PIX_FMT_RGB24, SWS_BICUBIC, nullptr, nullptr, nullptr);
  VIDAX_CHECK(*sws, "cannot create a YUV -> RGB converter");
  // sws_scale's vector paths write whole vectors past a row's end (a 56-pixel-wide frame overran the
  // frame's bytes: docs/bugs.md row 119): convert into rows of a 64-byte-aligned stride with a spare
  // row, then copy the pixels.
  const size_t row = static_cast<size_t>(3 * out->width);
  const size_t padded = (row + 63) / 64 * 64;
  std::vector<uint8_t> scratch(padded * static_cast<size_t>(fr->height + 1) + 64);
  uint8_t* dst[1] = {scratch.data()};
  const int stride[1] = {static_cast<int>(padded)};
  sws_scale(*sws, fr->data, fr->linesize, 0, fr->height, dst, stride);
  out->rgb.resize(out->rgb.size() + out->frame_bytes());
  uint8_t* frame = out->rgb.data() + out->frames * out->frame_bytes();
  for (int64_t y = 0; y < fr->height; ++y)
    std::copy_n(scratch.data() + static_cast<size_t>(y) * padded, row, frame + static_cast<size_t>(y) * row);
  ++out->frames;
}

}  // namespace

VideoFileInfo read_video(const std::string& path, RgbVideo* decoded, Audio* audio) {
  InputFile in;
  av_check(avformat_open_input(&in.f, path.c_str(), nullptr, nullptr), "cannot open video", path);
  av_check(avformat_find_stream_info(in.f, nullptr), "cannot read the streams of", path);
  int si = av_find_best_stream(in.f, AVMEDIA_TYPE_VIDEO, -1, -1, nullptr, 0);
  av_check(si, "no video stream in", path);
  AVStream* st = in.f->streams[si];
  const AVCodec* codec = avcodec_find_decoder(st->codecpar->codec_id);
  VIDAX_CHECK(codec, "no decoder for " << avcodec_get_name(st->codecpar->codec_id) << " in " << path);
  AvCodecContext dec(codec);
  av_check(avcodec_parameters_to_context(dec.get(), st->codecpar), "reading codec parameters of", path);
  av_check(avcodec_open2(dec.get(), codec, nullptr), "opening the decoder for", path);

  VideoFileInfo info;
  info.container = in.f->iformat->name;
  info.codec = codec->name;
  info.width = st->codecpar->width;
  info.height = st->codecpar->height;
  const char* pf = av_get_pix_fmt_name(static_cast<AVPixelFormat>(st->codecpar->format));
  info.pixel_format = pf ? pf : "";
  AVRational rate = st->avg_frame_rate.num ? st->avg_frame_rate : st->r_frame_rate;
  info.fps = rate.den ? av_q2d(rate) : 0;
  const AVDictionaryEntry* e = nullptr;
  while ((e = av_dict_get(in.f->metadata, "", e, AV_DICT_IGNORE_SUFFIX))) info.metadata[e->key] = e->value;
  for (unsigned i = 0; i < in.f->nb_streams; ++i) {
    const AVMediaType t = in.f->streams[i]->codecpar->codec_type;
    info.video_streams += t == AVMEDIA_TYPE_VIDEO;
    info.audio_streams += t == AVMEDIA_TYPE_AUDIO;
  }
  if (decoded) *decoded = RgbVideo{};
  const int ai = info.audio_streams > 0 ? av_find_best_stream(in.f, AVMEDIA_TYPE_AUDIO, -1, si, nullptr, 0) : -1;
  std::unique_ptr<AudioStreamDecoder> adec;
  // The audio is decoded too (its counts are part of the info); when only the frames are asked
  // for, an audio stream that fails does not stop them (a control video with an odd track).
  auto audio_failed = [&](const Error& e) {
    if (audio) throw;
    info.audio_error = e.what();
    adec.reset();
  };
  if (ai >= 0) {
    try {
      adec = std::make_unique<AudioStreamDecoder>(in.f->streams[ai], path, audio);
    } catch (const Error& e) {
      audio_failed(e);
    }
  }
  if (audio && !adec) *audio = Audio{};

  SwsContext* sws = nullptr;
  AvPacket pkt;
  AvFrame fr;
  auto drain = [&] {
    for (;;) {
      int r = avcodec_receive_frame(dec.get(), fr.get());
      if (r == AVERROR(EAGAIN) || r == AVERROR_EOF) return;
      av_check(r, "decoding", path);
      ++info.frames;
      collect_frame(fr.get(), &sws, decoded);
      av_frame_unref(fr.get());
    }
  };
  try {
    while (av_read_frame(in.f, pkt.get()) >= 0) {
      if (pkt->stream_index == si) {
        int r = avcodec_send_packet(dec.get(), pkt.get());
        av_packet_unref(pkt.get());
        av_check(r, "decoding", path);
        drain();
      } else if (adec && pkt->stream_index == ai) {
        try {
          adec->send(pkt.get());
        } catch (const Error& e) {
          audio_failed(e);
        }
        av_packet_unref(pkt.get());
      } else {
        av_packet_unref(pkt.get());
      }
    }
    av_check(avcodec_send_packet(dec.get(), nullptr), "flushing the decoder of", path);
    drain();
    if (adec) {
      try {
        info.audio = adec->finish();
      } catch (const Error& e) {
        audio_failed(e);
      }
    }
  } catch (...) {
    sws_freeContext(sws);
    throw;
  }
  sws_freeContext(sws);
  return info;
}

AudioStreamInfo read_audio(const std::string& path, Audio* decoded) {
  InputFile in;
  av_check(avformat_open_input(&in.f, path.c_str(), nullptr, nullptr), "cannot open", path);
  av_check(avformat_find_stream_info(in.f, nullptr), "cannot read the streams of", path);
  const int ai = av_find_best_stream(in.f, AVMEDIA_TYPE_AUDIO, -1, -1, nullptr, 0);
  av_check(ai, "no audio stream in", path);
  AudioStreamDecoder adec(in.f->streams[ai], path, decoded);
  AvPacket pkt;
  while (av_read_frame(in.f, pkt.get()) >= 0) {
    if (pkt->stream_index == ai) adec.send(pkt.get());
    av_packet_unref(pkt.get());
  }
  return adec.finish();
}

#else  // VIDAX_HAVE_LIBAV

VideoFileInfo read_video(const std::string& path, RgbVideo*, Audio*) {
  throw Error(msg() << path << ": this vidax was built without FFmpeg's libav* (VIDAX_LIBAV=OFF or VIDAX_MINIMAL), "
                    << "so it reads no video files");
}

AudioStreamInfo read_audio(const std::string& path, Audio*) {
  throw Error(msg() << path << ": this vidax was built without FFmpeg's libav* (VIDAX_LIBAV=OFF or VIDAX_MINIMAL), "
                    << "so it reads no media files (read_wav reads WAV files without it)");
}

#endif  // VIDAX_HAVE_LIBAV

Tensor read_image(const std::string& path, const std::string& what) {
  RgbVideo rgb;
  VideoFileInfo info;
  try {
    info = read_video(path, &rgb);
  } catch (const Error& e) {
    throw Error(msg() << "cannot read the " << what << " " << path << " as an image: " << e.what());
  }
  VIDAX_CHECK(rgb.frames >= 1, "the " << what << " " << path << " holds no decodable picture");
  VIDAX_CHECK(rgb.frames == 1, "the " << what << " " << path << " holds " << rgb.frames
                                      << " frames (a video or an animation); give a still image");
  return picture_to_tensor(rgb.rgb.data(), rgb.height, rgb.width);
}

Tensor read_video_tensor(const std::string& path, const std::string& what, double* fps) {
  RgbVideo rgb;
  VideoFileInfo info;
  try {
    info = read_video(path, &rgb);
  } catch (const Error& e) {
    throw Error(msg() << "cannot read the " << what << " " << path << " as a video: " << e.what());
  }
  VIDAX_CHECK(rgb.frames >= 1, "the " << what << " " << path << " holds no decodable frame");
  if (fps) *fps = info.fps;
  Tensor t = Tensor::empty({3, rgb.frames, rgb.height, rgb.width}, DType::F32);
  float* out = t.data<float>();  // view-write-ok: fills the tensor made above
  const int64_t n = rgb.frames * rgb.height * rgb.width;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < 3; ++c)
      out[c * n + i] = static_cast<float>(rgb.rgb[static_cast<size_t>(i * 3 + c)]) / 127.5f - 1.0f;  // .div_(127.5).sub_(1.)
  return t;
}

Tensor picture_to_tensor(const uint8_t* rgb, int64_t height, int64_t width) {
  Tensor t = Tensor::empty({3, height, width}, DType::F32);
  float* out = t.data<float>();  // view-write-ok: fills the tensor made above
  const int64_t n = height * width;
  for (int64_t i = 0; i < n; ++i)
    for (int64_t c = 0; c < 3; ++c) {
      const float v = static_cast<float>(rgb[i * 3 + c]) / 255.0f;  // to_tensor
      out[c * n + i] = (v - 0.5f) / 0.5f;                           // .sub_(0.5).div_(0.5)
    }
  return t;
}

Tensor picture_to_tensor(const Tensor& rgb) {
  VIDAX_CHECK(rgb.dtype() == DType::U8 && rgb.dim() == 3 && rgb.size(2) == 3,
              "picture_to_tensor: expects an [H, W, 3] U8 picture, got " << rgb.str());
  const Tensor c = rgb.contiguous();
  return picture_to_tensor(c.data<uint8_t>(), c.size(0), c.size(1));  // view-write-ok: reads the picture
}

}  // namespace vidax::io
