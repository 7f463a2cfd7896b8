// POST /v1/videos: the request body (OpenAI's Videos API fields plus ours) to a
// validated job spec, with the CLI's own checks (pipeline::validate_request on
// the loaded model's geometry, the variant's defaults, the memory plan), every
// refusal a 400 naming the field (ApiError). The spec is what the job database
// stores and the worker runs: every default filled in, the seed drawn.
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "pipeline/family.h"
#include "pipeline/generate.h"

namespace vidax::serve {

// A model the server holds loaded (weights resident, the text encoder kept: Residency::Resident).
struct ServedModel {
  std::string name;     // the variant name, what `model` takes
  std::string weights;  // the directory it was loaded from
  const pipeline::Family* family = nullptr;
  std::shared_ptr<pipeline::LoadedModel> loaded;
  const pipeline::Variant& variant() const { return loaded->variant; }
  const pipeline::Geometry& geometry() const { return loaded->parts.geometry; }
};

// engine::resolve + the family's loader, as `vidax generate` does, but resident.
ServedModel load_served_model(const std::string& weights, const std::string& model,
                              const std::function<void(const std::string&)>& on_stage);

struct VideoSpec {
  std::string model, prompt, negative_prompt;  // negative "" = the variant's default
  int64_t frames = 0, height = 0, width = 0, steps = 0;
  uint64_t seed = 0;
  double guidance = 0, shift = 0, fps = 0;
  std::string sampler;
  std::string seconds;  // as the API reports it: the request's `seconds`, else frames / fps
  std::string size() const { return std::to_string(width) + "x" + std::to_string(height); }
};

// The fields POST /v1/videos knows; any other is refused by name.
const std::vector<std::string>& video_request_fields();

// `body` is the parsed JSON object, or a multipart form's fields as strings
// (from_form: numbers may then come as their decimal text). Throws ApiError.
VideoSpec parse_video_request(const nlohmann::json& body, bool from_form, const std::vector<ServedModel>& models);

nlohmann::json spec_to_json(const VideoSpec& s);
VideoSpec spec_from_json(const nlohmann::json& j);
// The pipeline's request for a spec, with the variant's default negative prompt.
pipeline::Request to_pipeline_request(const VideoSpec& s, const pipeline::Defaults& d);

}  // namespace vidax::serve
