#include "pipeline/output.h"

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
  const std::string ext = std::filesystem::path(path).extension().string();
  if (ext == ".y4m") return OutputFormat::Y4m;
  if (ext == ".safetensors") return OutputFormat::Latents;
  if (ext.empty()) return OutputFormat::Png;
  return OutputFormat::Mp4;
}

void check_output_paths(const std::string& path, OutputFormat format) {
  io::check_output_target(path, format == OutputFormat::Png ? io::OutputKind::Directory : io::OutputKind::File);
  io::check_output_target(path + ".json");
}

void write_json_file(const std::string& path, const nlohmann::json& j) {
  io::PendingOutput out(path);
  {
    std::ofstream os(out.temp_path());
    VIDAX_CHECK(os.is_open(), "cannot create " << out.temp_path());
    os << j.dump(2) << "\n";
    os.close();
    VIDAX_CHECK(os.good(), "cannot write " << out.temp_path() << " (disk full?)");
  }
  out.commit();
}

std::string write_output(const OutputRequest& req, const Tensor& video, const Tensor& latents) {
  const std::string where = "writing " + req.path;
  throw_if_interrupted(where);
  check_output_paths(req.path, req.format);
  nlohmann::json params = req.params;
  params["output_format"] = output_format_name(req.format);
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
  const std::string sidecar = req.path + ".json";
  write_json_file(sidecar, params);
  return sidecar;
}

}  // namespace vidax::pipeline
