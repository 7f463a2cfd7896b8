// Video writers over FFmpeg's libav* (see video.h).
#include "io/video.h"

#include <signal.h>
#include <unistd.h>

#include <cerrno>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <memory>
#include <mutex>

#ifdef VIDAX_HAVE_LIBAV
#include "io/audio_av.h"
#include "io/video_av.h"
#endif

namespace fs = std::filesystem;

namespace vidax::io {

// ---- tensor -> RGB ------------------------------------------------------------

RgbVideo rgb_from_video_tensor(const Tensor& video) {
  VIDAX_CHECK(video.defined() && video.dim() == 4 && video.size(0) == 3,
              "video tensor: expected [3, F, H, W], got " << (video.defined() ? video.str() : "undefined"));
  VIDAX_CHECK(dtype_is_float(video.dtype()), "video tensor: expected a float dtype, got " << video.str());
  RgbVideo out;
  out.frames = video.size(1);
  out.height = video.size(2);
  out.width = video.size(3);
  VIDAX_CHECK(out.frames > 0 && out.height > 0 && out.width > 0, "video tensor: empty " << video.str());
  const std::vector<float> v = video.contiguous().to(DType::F32).to_f32_vector();
  out.rgb.resize(static_cast<size_t>(out.frames * out.height * out.width * 3));
  const int64_t plane = out.height * out.width;
  const int64_t chan = out.frames * plane;
  for (int64_t c = 0; c < 3; ++c)
    for (int64_t f = 0; f < out.frames; ++f)
      for (int64_t p = 0; p < plane; ++p) {
        float x = v[static_cast<size_t>(c * chan + f * plane + p)];
        // Same float32 operation order as the reference (NaN would be caught
        // earlier by the pipeline's finiteness check; clamp maps it to 0 here).
        x = std::clamp(x, -1.0f, 1.0f);
        x = (x - (-1.0f)) / 2.0f;
        x = std::clamp(x, 0.0f, 1.0f);
        x = x * 255.0f;
        out.rgb[static_cast<size_t>((f * plane + p) * 3 + c)] = static_cast<uint8_t>(std::isnan(x) ? 0.0f : x);
      }
  return out;
}

const char* video_format_name(VideoFormat f) {
  switch (f) {
    case VideoFormat::Mp4: return "mp4";
    case VideoFormat::Png: return "png";
    case VideoFormat::Y4m: return "y4m";
  }
  return "?";
}

// ---- pending output -------------------------------------------------------------

std::vector<std::string> remove_stale_partials(const std::string& dir) {
  std::vector<std::string> removed;
  std::error_code ec;
  for (fs::directory_iterator it(dir.empty() ? "." : dir, ec), end; !ec && it != end; it.increment(ec)) {
    const std::string n = it->path().filename().string();
    const size_t at = n.rfind(".partial-");
    if (n.empty() || n[0] != '.' || at == std::string::npos) continue;
    const std::string pid = n.substr(at + 9);
    if (pid.empty() || pid.size() > 9 || pid.find_first_not_of("0123456789") != std::string::npos) continue;
    const pid_t p = static_cast<pid_t>(std::stol(pid));
    if (p <= 0 || p == ::getpid() || ::kill(p, 0) == 0 || errno != ESRCH) continue;  // alive, or not ours to judge
    std::error_code rm;
    fs::remove_all(it->path(), rm);
    if (!rm) removed.push_back(it->path().string());
  }
  return removed;
}

PendingOutput::PendingOutput(std::string final_path, OutputKind kind) : final_(std::move(final_path)), kind_(kind) {
  VIDAX_CHECK(!final_.empty(), "output path is empty");
  check_output_target(final_, kind_);
  fs::path p(final_);
  VIDAX_CHECK(p.has_filename(), "output path " << final_ << " names a directory, not a file");
  fs::path dir = p.parent_path();
  if (!dir.empty()) {
    std::error_code ec;
    VIDAX_CHECK(fs::is_directory(dir, ec), "output directory " << dir.string() << " does not exist");
  }
  std::string name = ".";  // hidden, and named after the target so a user sees what it was
  name += p.filename().string();
  name += ".partial-";
  name += std::to_string(::getpid());
  temp_ = (dir / name).string();
  std::error_code ec;
  fs::remove_all(temp_, ec);  // a leftover of an earlier killed run with the same pid
  remove_stale_partials(dir.string());
}

PendingOutput::~PendingOutput() {
  if (committed_) return;
  std::error_code ec;
  fs::remove_all(temp_, ec);
}

void PendingOutput::commit() {
  check_output_target(final_, kind_);  // again: the target may have appeared while the output was built
  std::error_code ec;
  fs::rename(temp_, final_, ec);
  VIDAX_CHECK(!ec, "cannot move " << temp_ << " to " << final_ << ": " << ec.message());
  committed_ = true;
}

#ifdef VIDAX_HAVE_LIBAV
// ---- MP4 ------------------------------------------------------------------------

namespace {

// libx264 prints its statistics at AV_LOG_INFO, libav's default level; keep
// the user's terminal for our own progress unless they asked for libav logs.
void quiet_libav_once() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (av_log_get_level() == AV_LOG_INFO) av_log_set_level(AV_LOG_WARNING);
  });
}

// The H.264 encoder to use: libx264 (what the reference's imageio call asks
// for), else any other H.264 encoder libavcodec offers, with a warning.
const AVCodec* find_h264_encoder(const VideoWriteOptions& opt) {
  if (const AVCodec* c = avcodec_find_encoder_by_name("libx264")) return c;
  const AVCodec* c = avcodec_find_encoder(AV_CODEC_ID_H264);
  VIDAX_CHECK(c != nullptr,
              "this FFmpeg build (libavcodec " << LIBAVCODEC_IDENT
              << ") has no H.264 encoder; install libx264 support (Debian: libavcodec59 with libx264) "
                 "or use --output-format y4m|png");
  if (opt.warn)
    opt.warn(std::string("libx264 is not available in this libavcodec; encoding H.264 with '") + c->name +
             "' instead (quality settings differ from the reference's libx264 crf 10)");
  return c;
}

void check_even(const RgbVideo& v, const char* what) {
  VIDAX_CHECK(v.width % 2 == 0 && v.height % 2 == 0,
              what << ": yuv420p needs an even width and height, got " << v.width << "x" << v.height);
}

void check_no_audio(const VideoWriteOptions& opt, const char* format, const std::string& path) {
  VIDAX_CHECK(opt.audio == nullptr, path << ": " << format << " output carries no audio track; write mp4, or "
                                         "the audio on its own as a WAV file");
}

void check_video(const RgbVideo& v) {
  VIDAX_CHECK(v.frames > 0 && v.width > 0 && v.height > 0,
              "video has no frames (" << v.frames << " frames of " << v.width << "x" << v.height << ")");
  VIDAX_CHECK(v.rgb.size() == static_cast<size_t>(v.frames) * v.frame_bytes(),
              "video buffer holds " << v.rgb.size() << " bytes, expected " << v.frames * v.frame_bytes());
}

}  // namespace

void write_mp4(const std::string& path, const RgbVideo& video, const VideoWriteOptions& opt) {
  check_video(video);
  check_even(video, path.c_str());
  VIDAX_CHECK(opt.fps > 0 && std::isfinite(opt.fps), "fps must be positive, got " << opt.fps);
  if (opt.audio) check_audio(*opt.audio, "audio for " + path);
  quiet_libav_once();
  PendingOutput out(path);
  const std::string& tmp = out.temp_path();
  {
    AvFormatOutput fmt(tmp, "mp4");
    const AVCodec* codec = find_h264_encoder(opt);
    AvCodecContext enc(codec);
    const AVRational rate = av_d2q(opt.fps, 1 << 16);
    enc->width = static_cast<int>(video.width);
    enc->height = static_cast<int>(video.height);
    enc->pix_fmt = AV_PIX_FMT_YUV420P;
    enc->time_base = av_inv_q(rate);
    enc->framerate = rate;
    // BT.601 limited range: what ffmpeg's rgb24 -> yuv420p conversion produces.
    enc->color_range = AVCOL_RANGE_MPEG;
    enc->colorspace = AVCOL_SPC_SMPTE170M;
    enc->color_primaries = AVCOL_PRI_SMPTE170M;
    enc->color_trc = AVCOL_TRC_SMPTE170M;
    if (fmt->oformat->flags & AVFMT_GLOBALHEADER) enc->flags |= AV_CODEC_FLAG_GLOBAL_HEADER;
    AVDictionary* codec_opts = nullptr;
    if (std::string(codec->name) == "libx264")
      av_dict_set(&codec_opts, "crf", std::to_string(opt.crf).c_str(), 0);
    int r = avcodec_open2(enc.get(), codec, &codec_opts);
    av_dict_free(&codec_opts);
    av_check(r, (std::string("opening the ") + codec->name + " encoder for").c_str(), path);

    AVStream* st = avformat_new_stream(fmt.get(), nullptr);
    VIDAX_CHECK(st != nullptr, "cannot add a video stream to " << path);
    av_check(avcodec_parameters_from_context(st->codecpar, enc.get()), "setting stream parameters of", path);
    st->time_base = enc->time_base;
    st->avg_frame_rate = rate;
    std::unique_ptr<AudioTrackWriter> audio;
    if (opt.audio) audio = std::make_unique<AudioTrackWriter>(fmt.get(), *opt.audio, opt.audio_codec, path, opt.warn);
    for (const auto& [k, v] : opt.metadata) av_dict_set(&fmt->metadata, k.c_str(), v.c_str(), 0);
    fmt.open_and_write_header();

    RgbToYuv conv(video.width, video.height, AV_PIX_FMT_YUV420P);
    AvFrame frame = AvFrame::video(video.width, video.height, AV_PIX_FMT_YUV420P);
    for (int64_t f = 0; f < video.frames; ++f) {
      if (opt.poll) opt.poll();
      av_check(av_frame_make_writable(frame.get()), "preparing a frame for", path);
      conv.convert(video.frame(f), frame.get());
      frame->pts = f;
      encode_and_mux(enc.get(), frame.get(), fmt.get(), st, path);
      // The audio up to this frame's end, so that the two streams interleave in the file.
      if (audio) audio->write_until(static_cast<double>(f + 1) / av_q2d(rate));
    }
    encode_and_mux(enc.get(), nullptr, fmt.get(), st, path);
    if (audio) audio->finish();
    fmt.write_trailer_and_close();
  }
  if (opt.poll) opt.poll();
  out.commit();
}

// ---- PNG frames -----------------------------------------------------------------

void write_png_frames(const std::string& path, const RgbVideo& video, const VideoWriteOptions& opt) {
  check_video(video);
  check_no_audio(opt, "png frames", path);
  std::error_code ec;
  VIDAX_CHECK(!fs::exists(path, ec), "output " << path << " already exists; png output writes a new directory of "
                                                  "frames, remove it or choose another -o");
  PendingOutput out(path, OutputKind::Directory);
  fs::create_directory(out.temp_path(), ec);
  VIDAX_CHECK(!ec, "cannot create directory " << out.temp_path() << ": " << ec.message());
  const AVCodec* codec = avcodec_find_encoder(AV_CODEC_ID_PNG);
  VIDAX_CHECK(codec != nullptr, "this FFmpeg build has no PNG encoder; use --output-format y4m|mp4");
  AvFrame frame = AvFrame::video(video.width, video.height, AV_PIX_FMT_RGB24);
  for (int64_t f = 0; f < video.frames; ++f) {
    if (opt.poll) opt.poll();
    // One encoder per frame: PNG is intra-only and this keeps each file standalone.
    AvCodecContext enc(codec);
    enc->width = static_cast<int>(video.width);
    enc->height = static_cast<int>(video.height);
    enc->pix_fmt = AV_PIX_FMT_RGB24;
    enc->time_base = AVRational{1, 1};
    av_check(avcodec_open2(enc.get(), codec, nullptr), "opening the PNG encoder for", path);
    av_check(av_frame_make_writable(frame.get()), "preparing a frame for", path);
    for (int64_t y = 0; y < video.height; ++y)
      std::copy_n(video.frame(f) + y * video.width * 3, video.width * 3, frame->data[0] + y * frame->linesize[0]);
    av_check(avcodec_send_frame(enc.get(), frame.get()), "encoding a PNG frame for", path);
    av_check(avcodec_send_frame(enc.get(), nullptr), "encoding a PNG frame for", path);
    AvPacket pkt;
    av_check(avcodec_receive_packet(enc.get(), pkt.get()), "encoding a PNG frame for", path);
    char name[32];
    std::snprintf(name, sizeof name, "frame_%05lld.png", static_cast<long long>(f));
    const std::string file = (fs::path(out.temp_path()) / name).string();
    std::ofstream os(file, std::ios::binary);
    os.write(reinterpret_cast<const char*>(pkt->data), pkt->size);
    os.close();
    VIDAX_CHECK(os.good(), "cannot write " << file);
  }
  if (opt.poll) opt.poll();
  out.commit();
}

// ---- Y4M --------------------------------------------------------------------------

void write_y4m(const std::string& path, const RgbVideo& video, const VideoWriteOptions& opt) {
  check_video(video);
  check_no_audio(opt, "y4m", path);
  VIDAX_CHECK(opt.fps > 0 && std::isfinite(opt.fps), "fps must be positive, got " << opt.fps);
  PendingOutput out(path);
  std::ofstream os(out.temp_path(), std::ios::binary);
  VIDAX_CHECK(os.is_open(), "cannot create " << out.temp_path());
  const AVRational rate = av_d2q(opt.fps, 1 << 16);
  os << "YUV4MPEG2 W" << video.width << " H" << video.height << " F" << rate.num << ":" << rate.den
     << " Ip A1:1 C444 XCOLORRANGE=LIMITED\n";
  RgbToYuv conv(video.width, video.height, AV_PIX_FMT_YUV444P);
  AvFrame frame = AvFrame::video(video.width, video.height, AV_PIX_FMT_YUV444P);
  for (int64_t f = 0; f < video.frames; ++f) {
    if (opt.poll) opt.poll();
    conv.convert(video.frame(f), frame.get());
    os << "FRAME\n";
    for (int p = 0; p < 3; ++p)
      for (int64_t y = 0; y < video.height; ++y)
        os.write(reinterpret_cast<const char*>(frame->data[p] + y * frame->linesize[p]), video.width);
  }
  os.close();
  VIDAX_CHECK(os.good(), "cannot write " << out.temp_path() << " (disk full?)");
  if (opt.poll) opt.poll();
  out.commit();
}

#else  // VIDAX_HAVE_LIBAV: built without FFmpeg's libav* (VIDAX_LIBAV off, VIDAX_MINIMAL)

namespace {
[[noreturn]] void no_libav(const std::string& path) {
  throw Error(msg() << path << ": this vidax was built without FFmpeg's libav* (VIDAX_LIBAV=OFF or VIDAX_MINIMAL), "
                    << "so it writes no video files; rebuild with it, or write the latents (--output-format latents)");
}
}  // namespace

void write_mp4(const std::string& path, const RgbVideo&, const VideoWriteOptions&) { no_libav(path); }
void write_png_frames(const std::string& path, const RgbVideo&, const VideoWriteOptions&) { no_libav(path); }
void write_y4m(const std::string& path, const RgbVideo&, const VideoWriteOptions&) { no_libav(path); }

#endif  // VIDAX_HAVE_LIBAV

void write_video(const std::string& path, VideoFormat format, const RgbVideo& video,
                 const VideoWriteOptions& opt) {
  switch (format) {
    case VideoFormat::Mp4: return write_mp4(path, video, opt);
    case VideoFormat::Png: return write_png_frames(path, video, opt);
    case VideoFormat::Y4m: return write_y4m(path, video, opt);
  }
}

}  // namespace vidax::io
