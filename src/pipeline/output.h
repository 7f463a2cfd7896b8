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

// A run's audio (Result::audio) and where it goes: the MP4's AAC track (unless `drop`:
// --no-audio) and/or a 16-bit PCM WAV file at `wav_path` (--audio-output). Formats without an audio
// track (png, y4m, latents) refuse a waveform that would go nowhere.
struct OutputAudio {
  Tensor waveform;  // [channels, samples] float; undefined = the model made none
  int64_t sample_rate = 0;
  bool drop = false;
  std::string wav_path;
};

struct OutputRequest {
  std::string path;
  OutputFormat format = OutputFormat::Mp4;
  double fps = 16;
  nlohmann::json params;  // the run's parameters (model, prompt, seed, steps, sampler, shift, guidance, version, ...)
  std::function<void(const std::string&)> warn;
  OutputAudio audio;
};

// Throws when the output or its sidecar `<path>.json` exists and is not what
// the writer would replace (a regular file; a directory for png frames): a
// device, FIFO, socket or symbolic link (io/output_target.h). write_output calls
// it first, so neither file is written when either target is refused; callers
// may call it before the run, so that a refusal costs no generation.
void check_output_paths(const std::string& path, OutputFormat format);

// The audio options of a run, checked before it (a refusal costs no generation): --no-audio and
// --audio-output for a model that makes no audio (`model` names it); an --audio-output path that
// is not a .wav name, is the video's or its sidecar's, or is refused as an output target; a model
// with audio written to a format without an audio track, with neither option saying where the
// audio goes.
void check_audio_options(const std::string& model, bool model_has_audio, const std::string& path,
                         OutputFormat format, bool no_audio, const std::string& wav_path);

// Writes `video` ([3, F, H, W] in [-1, 1]) or, for OutputFormat::Latents,
// `latents`, then req.audio's WAV file when asked, then the sidecar (with an "audio" entry when
// there is audio). The files appear together or not at all. Returns the sidecar's path.
std::string write_output(const OutputRequest& req, const Tensor& video, const Tensor& latents);

// Writes JSON to `path` atomically (pretty-printed).
void write_json_file(const std::string& path, const nlohmann::json& j);

}  // namespace vidax::pipeline
