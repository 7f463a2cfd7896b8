// Video files out (and back in, for tests and `inspect`): MP4 (H.264 through
// FFmpeg's libav*), a folder of PNG frames, Y4M. Every writer builds its output
// under a temporary name next to the target and renames it into place only when
// complete (DESIGN.md principle 8), so a failure or an interrupt leaves nothing
// half-written behind.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/audio.h"
#include "io/output_target.h"

namespace vidax::io {

// 8-bit RGB frames, interleaved, frame-major: rgb[((f * height + y) * width + x) * 3 + c].
struct RgbVideo {
  int64_t frames = 0, height = 0, width = 0;
  std::vector<uint8_t> rgb;
  const uint8_t* frame(int64_t f) const { return rgb.data() + f * height * width * 3; }
  uint8_t* frame(int64_t f) { return rgb.data() + f * height * width * 3; }
  size_t frame_bytes() const { return static_cast<size_t>(height * width * 3); }
};

// A decoded video tensor [3, F, H, W] (any float dtype, values nominally in
// [-1, 1]) to 8-bit RGB exactly as the reference's cache_video does it
// (torchvision make_grid(normalize=True, value_range=(-1, 1)) then
// `(x * 255).type(torch.uint8)`): clamp to [-1, 1], (x + 1) / 2 in float32,
// clamp to [0, 1], times 255 in float32, truncated (not rounded).
RgbVideo rgb_from_video_tensor(const Tensor& video);

enum class VideoFormat { Mp4, Png, Y4m };
const char* video_format_name(VideoFormat f);

struct VideoWriteOptions {
  double fps = 16;  // the reference's sample_fps
  // libx264 constant rate factor. 10 = what the reference gets from imageio's
  // quality=8 (crf = int((1 - 8/10) * 51)).
  int crf = 10;
  // Container tags (MP4: "comment", "description", "title", ... as libavformat names them).
  std::map<std::string, std::string> metadata;
  // Called between frames; throw from it to abandon the file (e.g. on Ctrl-C).
  std::function<void()> poll;
  // Where writers report things the user should know (e.g. an encoder fallback).
  std::function<void(const std::string&)> warn;
  // An audio track for the MP4 (not owned; must outlive the call), starting with the first
  // frame: AAC by default (FFmpeg's native encoder, as the reference), or Opus through libopus.
  // PNG and Y4M carry no audio: they refuse one. The track's duration is the waveform's (it is
  // not cut or padded to the video's).
  const Audio* audio = nullptr;
  AudioCodec audio_codec = AudioCodec::Aac;
};

// H.264 (libx264 when libavcodec has it, else another H.264 encoder with a
// warning), yuv420p, in an MP4 container. Width and height must be even.
void write_mp4(const std::string& path, const RgbVideo& video, const VideoWriteOptions& opt);
// A directory `path` holding frame_00000.png, frame_00001.png, ... (RGB, lossless).
// Refuses to replace an existing directory.
void write_png_frames(const std::string& path, const RgbVideo& video, const VideoWriteOptions& opt);
// YUV4MPEG2, 4:4:4, BT.601 limited range (uncompressed; any player or encoder reads it).
void write_y4m(const std::string& path, const RgbVideo& video, const VideoWriteOptions& opt);
void write_video(const std::string& path, VideoFormat format, const RgbVideo& video,
                 const VideoWriteOptions& opt);

// An audio stream of a media file, read with libavformat/libavcodec.
struct AudioStreamInfo {
  std::string codec;  // the decoder's name: "aac", "libopus" / "opus", "pcm_s16le", ...
  int64_t sample_rate = 0, channels = 0;
  int64_t samples = 0;  // samples per channel decoded (the container's encoder-delay skip applied)
  double duration = 0;  // seconds, as the container states it (else samples / sample_rate)
};

// What a video file holds, read with libavformat/libavcodec.
struct VideoFileInfo {
  std::string container;  // libavformat's name, e.g. "mov,mp4,m4a,3gp,3g2,mj2"
  std::string codec;      // e.g. "h264"
  std::string pixel_format;
  int64_t frames = 0;  // frames actually decoded
  int64_t width = 0, height = 0;
  double fps = 0;
  std::map<std::string, std::string> metadata;  // container tags
  int64_t video_streams = 0, audio_streams = 0;
  std::optional<AudioStreamInfo> audio;  // the best audio stream, decoded whole
  // Why `audio` is unset although audio_streams > 0: its decoding failed (no decoder, a corrupt
  // packet) and read_video's caller asked for the frames only, which are then still read.
  std::string audio_error;
};
// Decodes every frame (and the audio stream's, when there is one); when `decoded` / `audio` are
// given, also returns them (RGB; planar float samples at the stream's rate). An audio stream that
// cannot be decoded is an error only when `audio` is asked for (else VideoFileInfo::audio_error).
VideoFileInfo read_video(const std::string& path, RgbVideo* decoded = nullptr, Audio* audio = nullptr);
// The best audio stream of any file libavformat reads (MP4, WAV, ...), decoded whole. Throws
// naming the file when it has none.
AudioStreamInfo read_audio(const std::string& path, Audio* decoded = nullptr);

// A still image (PNG, JPEG, WebP, BMP, ... whatever libavformat reads) as the image-to-video
// references take it: PIL's Image.open(path).convert("RGB") (alpha dropped, grey replicated), then
// torchvision's to_tensor (v / 255) and .sub_(0.5).div_(0.5), in fp32 -> [3, H, W] F32 in [-1, 1].
// PNG pixels are exactly PIL's; JPEG's may differ by a level or two (libavcodec's IDCT and
// chroma upsampling are not libjpeg's). Throws naming the file when it is not a single decodable
// image (a video or an animated file with several frames is refused).
Tensor read_image(const std::string& path, const std::string& what = "image");

// A video file as Wan VACE's VaceVideoProcessor takes its frames (decord RGB, then
// .float().div_(127.5).sub_(1.)), every frame: [3, F, H, W] F32 in [-1, 1]; *fps (when given) the
// stream's average frame rate. Throws naming the file (`what`: "--control-video") when it cannot
// be decoded or holds no frame.
Tensor read_video_tensor(const std::string& path, const std::string& what, double* fps = nullptr);

// A picture's RGB bytes as the image-to-video references take them: torchvision's to_tensor
// (v / 255) and .sub_(0.5).div_(0.5), in fp32. [H, W, 3] bytes -> [3, H, W] F32 in [-1, 1].
Tensor picture_to_tensor(const uint8_t* rgb, int64_t height, int64_t width);
Tensor picture_to_tensor(const Tensor& rgb);  // [H, W, 3] U8, any strides (a crop's view)

// A file or directory built under a temporary name in the target's directory
// and renamed into place by commit(); removed by the destructor otherwise.
// Both the constructor and commit() refuse a target that exists and is a link or
// not of `kind` (io/output_target.h): -o /dev/null must not replace /dev/null.
// The constructor also removes the `.NAME.partial-PID` leftovers in that
// directory whose process is gone (a run killed by SIGKILL, or by a second
// Ctrl-C, cannot remove its own).
// Removes `.NAME.partial-PID` entries of `dir` whose PID is no live process;
// returns their paths. Partials of live processes (a concurrent run) are kept.
std::vector<std::string> remove_stale_partials(const std::string& dir);

class PendingOutput {
 public:
  explicit PendingOutput(std::string final_path, OutputKind kind = OutputKind::File);
  ~PendingOutput();
  PendingOutput(const PendingOutput&) = delete;
  PendingOutput& operator=(const PendingOutput&) = delete;
  const std::string& temp_path() const { return temp_; }
  const std::string& final_path() const { return final_; }
  void commit();  // rename temp -> final (atomic on one file system)

 private:
  std::string final_, temp_;
  OutputKind kind_;
  bool committed_ = false;
};

}  // namespace vidax::io
