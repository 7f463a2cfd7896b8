// Writing a run's result: the video (mp4 | png frames | y4m) or the final
// latents (safetensors), plus a JSON sidecar `<out>.json` with the run's
// parameters. The parameters also go into the MP4's tags ("comment": the JSON,
// "description": the prompt) and the latents file's __metadata__. Every file is
// written under a temporary name and renamed into place.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor.h"

namespace vidax::pipeline {

enum class OutputFormat { Mp4, Png, Y4m, Latents };
const char* output_format_name(OutputFormat f);
// "mp4" | "png" | "y4m" | "latents"; throws listing them.
OutputFormat parse_output_format(const std::string& s);
// From the output path's extension (.mp4, .y4m, .safetensors; no extension = png
// frames directory), else mp4.
OutputFormat output_format_from_path(const std::string& path);

struct OutputRequest {
  std::string path;
  OutputFormat format = OutputFormat::Mp4;
  double fps = 16;
  nlohmann::json params;  // the run's parameters (model, prompt, seed, steps, sampler, shift, guidance, version, ...)
  std::function<void(const std::string&)> warn;
};

// Throws when the output or its sidecar `<path>.json` exists and is not what
// the writer would replace (a regular file; a directory for png frames): a
// device, FIFO, socket or symbolic link (io/output_target.h). write_output calls
// it first, so neither file is written when either target is refused; callers
// may call it before the run, so that a refusal costs no generation.
void check_output_paths(const std::string& path, OutputFormat format);

// Writes `video` ([3, F, H, W] in [-1, 1]) or, for OutputFormat::Latents,
// `latents`, then the sidecar. Returns the sidecar's path.
std::string write_output(const OutputRequest& req, const Tensor& video, const Tensor& latents);

// Writes JSON to `path` atomically (pretty-printed).
void write_json_file(const std::string& path, const nlohmann::json& j);

}  // namespace vidax::pipeline
