#include "pipeline/output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <optional>

#include "core/error.h"
#include "io/audio.h"
#include "io/checkpoint.h"
#include "io/output_target.h"
#include "io/video.h"
#include "pipeline/interrupt.h"

namespace vidax::pipeline {

const char* output_format_name(OutputFormat f) {
  switch (f) {
    case OutputFormat::Mp4: return "mp4";
    case OutputFormat::Png: return "png";
    case OutputFormat::Y4m: return "y4m";
    case OutputFormat::Latents: return "latents";
  }
  return "?";
}

OutputFormat parse_output_format(const std::string& s) {
  for (OutputFormat f : {OutputFormat::Mp4, OutputFormat::Png, OutputFormat::Y4m, OutputFormat::Latents})
    if (s == output_format_name(f)) return f;
  throw Error(msg() << "--output-format " << s << ": unknown; choose one of mp4, png, y4m, latents");
}

OutputFormat output_format_from_path(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  if (ext == ".mp4") return OutputFormat::Mp4;
  if (ext == ".y4m") return OutputFormat::Y4m;
  if (ext == ".safetensors") return OutputFormat::Latents;
  if (ext.empty()) return OutputFormat::Png;
  throw Error(msg() << "-o " << path << ": unknown extension " << ext
                    << "; vidax writes .mp4 (H.264), .y4m, .safetensors (the latents) or a name without an "
                       "extension (a folder of PNG frames); or pass --output-format mp4|png|y4m|latents");
}

void check_output_paths(const std::string& path, OutputFormat format) {
  VIDAX_CHECK(!path.empty(), "-o \"\": the output path is empty");
  VIDAX_CHECK(path != "-", "-o -: writing the video to stdout is not supported (the writers need a seekable "
                           "file and a sidecar beside it); give a file name");
  io::check_output_target(path, format == OutputFormat::Png ? io::OutputKind::Directory : io::OutputKind::File);
  io::check_output_target(path + ".json");
  // The folder must take new files: found now, not after the whole generation.
  const std::filesystem::path dir = std::filesystem::path(path).parent_path();
  const std::string d = dir.empty() ? "." : dir.string();
  std::error_code ec;
  VIDAX_CHECK(std::filesystem::is_directory(d, ec), "output directory " << d << " does not exist (-o " << path << ")");
  // A probe file, not access(2): root passes access() on a read-only mount or /proc.
  const std::string probe = (std::filesystem::path(d) / (".vidax-write-check-" + std::to_string(::getpid()))).string();
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL, 0600);
  VIDAX_CHECK(fd >= 0 || errno == EEXIST,
              "output directory " << d << " is not writable: " << std::strerror(errno) << " (-o " << path << ")");
  if (fd >= 0) {
    ::close(fd);
    ::unlink(probe.c_str());
  }
}

namespace {
std::string lower_extension(const std::string& path) {
  std::string ext = std::filesystem::path(path).extension().string();
  std::transform(ext.begin(), ext.end(), ext.begin(), [](unsigned char c) { return std::tolower(c); });
  return ext;
}
}  // namespace

void check_audio_options(const std::string& model, bool model_has_audio, const std::string& path,
                         OutputFormat format, bool no_audio, const std::string& wav_path) {
  if (!model_has_audio) {
    VIDAX_CHECK(!no_audio, "--no-audio: model " << model << " makes no audio (`vidax models` marks the variants that do), "
                                                 "so there is no track to drop");
    VIDAX_CHECK(wav_path.empty(), "--audio-output " << wav_path << ": model " << model
                                                    << " makes no audio (`vidax models` marks the variants that do)");
    return;
  }
  if (!wav_path.empty()) {
    VIDAX_CHECK(lower_extension(wav_path) == ".wav",
                "--audio-output " << wav_path << ": the audio is written as a WAV file; give a name ending in .wav");
    VIDAX_CHECK(std::filesystem::path(wav_path).lexically_normal() != std::filesystem::path(path).lexically_normal() &&
                    std::filesystem::path(wav_path).lexically_normal() !=
                        std::filesystem::path(path + ".json").lexically_normal(),
                "--audio-output " << wav_path << ": the same path as the video or its sidecar (-o " << path << ")");
    io::check_output_target(wav_path);
    const std::filesystem::path dir = std::filesystem::path(wav_path).parent_path();
    std::error_code ec;
    VIDAX_CHECK(dir.empty() || std::filesystem::is_directory(dir, ec),
                "--audio-output " << wav_path << ": directory " << dir.string() << " does not exist");
  }
  // Latents: the run stops before decoding, so no audio is made to keep (nor to write).
  VIDAX_CHECK(format != OutputFormat::Latents || wav_path.empty(),
              "--audio-output " << wav_path << ": -o " << path << " writes the latents, and a latents run decodes "
                                << "neither the video nor the audio; write .mp4 (or .y4m / frames) to get the audio");
  VIDAX_CHECK(format == OutputFormat::Mp4 || format == OutputFormat::Latents || no_audio || !wav_path.empty(),
              "-o " << path << ": " << output_format_name(format) << " output carries no audio track and model "
                    << model << " makes one; write .mp4, keep the audio with --audio-output FILE.wav, or drop it "
                                "with --no-audio");
}

namespace {
void write_json_to(const std::string& path, const nlohmann::json& j) {
  std::ofstream os(path);
  VIDAX_CHECK(os.is_open(), "cannot create " << path << ": " << std::strerror(errno));
  os << j.dump(2) << "\n";
  os.close();
  VIDAX_CHECK(os.good(), "cannot write " << path << " (disk full?)");
}
}  // namespace

void write_json_file(const std::string& path, const nlohmann::json& j) {
  io::PendingOutput out(path);
  write_json_to(out.temp_path(), j);
  out.commit();
}

namespace {

// The video (or latents) alone, through its writer's own temporary file; `audio` (when given)
// as the MP4's track.
void write_media(const OutputRequest& req, const nlohmann::json& params, const Tensor& video, const Tensor& latents,
                 const io::Audio* audio) {
  const std::string where = "writing " + req.path;
  if (req.format == OutputFormat::Latents) {
    VIDAX_CHECK(latents.defined(), "no latents to write to " << req.path);
    // save_safetensors writes through its own temporary file.
    io::save_safetensors(req.path, {{"latents", latents}}, {{"vidax.params", params.dump()}});
  } else {
    VIDAX_CHECK(video.defined(), "no video to write to " << req.path);
    io::RgbVideo rgb = io::rgb_from_video_tensor(video);
    io::VideoWriteOptions opt;
    opt.fps = req.fps;
    opt.warn = req.warn;
    opt.poll = [&] { throw_if_interrupted(where); };
    opt.audio = audio;
    if (req.format == OutputFormat::Mp4) {
      opt.metadata["comment"] = params.dump();
      if (params.contains("prompt") && params["prompt"].is_string())
        opt.metadata["description"] = params["prompt"].get<std::string>();
    }
    const io::VideoFormat vf = req.format == OutputFormat::Mp4   ? io::VideoFormat::Mp4
                               : req.format == OutputFormat::Png ? io::VideoFormat::Png
                                                                 : io::VideoFormat::Y4m;
    io::write_video(req.path, vf, rgb, opt);
  }
}

}  // namespace

std::string write_output(const OutputRequest& req, const Tensor& video, const Tensor& latents) {
  throw_if_interrupted("writing " + req.path);
  check_output_paths(req.path, req.format);
  const OutputAudio& oa = req.audio;
  const bool has_audio = oa.waveform.defined();
  VIDAX_CHECK(has_audio || (!oa.drop && oa.wav_path.empty()),
              (oa.drop ? std::string("--no-audio") : "--audio-output " + oa.wav_path)
                  << ": the run made no audio to " << (oa.drop ? "drop" : "write"));
  std::optional<io::Audio> audio;
  if (has_audio) {
    const std::string model = req.params.contains("model") && req.params["model"].is_string()
                                  ? req.params["model"].get<std::string>()
                                  : std::string("(unnamed)");
    check_audio_options(model, true, req.path, req.format, oa.drop, oa.wav_path);
    audio = io::audio_from_tensor(oa.waveform, oa.sample_rate, "the run's audio");
  }
  const bool track = audio && !oa.drop && req.format == OutputFormat::Mp4;
  nlohmann::json params = req.params;
  params["output_format"] = output_format_name(req.format);
  if (audio)
    params["audio"] = {{"sample_rate", audio->sample_rate},
                       {"channels", audio->channels},
                       {"seconds", audio->duration_seconds()},
                       {"track", track ? nlohmann::json(io::audio_codec_name(io::AudioCodec::Aac)) : nlohmann::json()},
                       {"wav", oa.wav_path.empty() ? nlohmann::json() : nlohmann::json(oa.wav_path)}};
  // The pair appears together or not at all: the sidecar is written first under its
  // temporary name (a full disk fails here, before any video exists), the video is
  // moved into place, then the sidecar; a failing last rename removes the video.
  const std::string sidecar = req.path + ".json";
  io::PendingOutput side(sidecar);
  write_json_to(side.temp_path(), params);
  write_media(req, params, video, latents, track ? &*audio : nullptr);
  try {
    if (audio && !oa.wav_path.empty()) {
      throw_if_interrupted("writing " + oa.wav_path);
      io::write_wav(oa.wav_path, *audio, io::WavSampleFormat::Pcm16);  // the reference's encode_audio format
    }
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(req.path, ec);
    throw;
  }
  try {
    side.commit();
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(req.path, ec);
    if (audio && !oa.wav_path.empty()) std::filesystem::remove(oa.wav_path, ec);
    throw;
  }
  return sidecar;
}

}  // namespace vidax::pipeline
