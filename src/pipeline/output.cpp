#include "pipeline/output.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "core/error.h"
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

// The video (or latents) alone, through its writer's own temporary file.
void write_media(const OutputRequest& req, const nlohmann::json& params, const Tensor& video, const Tensor& latents) {
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
  nlohmann::json params = req.params;
  params["output_format"] = output_format_name(req.format);
  // The pair appears together or not at all: the sidecar is written first under its
  // temporary name (a full disk fails here, before any video exists), the video is
  // moved into place, then the sidecar; a failing last rename removes the video.
  const std::string sidecar = req.path + ".json";
  io::PendingOutput side(sidecar);
  write_json_to(side.temp_path(), params);
  write_media(req, params, video, latents);
  try {
    side.commit();
  } catch (...) {
    std::error_code ec;
    std::filesystem::remove_all(req.path, ec);
    throw;
  }
  return sidecar;
}

}  // namespace vidax::pipeline
