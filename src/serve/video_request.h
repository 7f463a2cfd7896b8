// POST /v1/videos: the request body (OpenAI's Videos API fields plus ours) to a
// validated job spec, with the CLI's own checks (pipeline::validate_request on
// the loaded model's geometry, the variant's defaults, the memory plan), every
// refusal a 400 naming the field (ApiError). The spec is what the job database
// stores and the worker runs: every default filled in, the seed drawn.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dist/mesh.h"
#include "pipeline/family.h"
#include "pipeline/generate.h"

namespace vidax::serve {

// A model the server serves: resolved at start (variant, geometry: what checking a request needs),
// its weights loaded or not. With a memory budget (ServeOptions::memory_budget_bytes) the server
// loads a model when a job needs it and unloads the least recently used ones to make room; without
// one every model is loaded at start and stays. Copies share one residence.
struct ServedModel {
  std::string name;     // the variant name, what `model` takes
  std::string weights;  // the directory it is loaded from
  const pipeline::Family* family = nullptr;

  struct Residence {
    mutable std::mutex mu;
    std::shared_ptr<pipeline::LoadedModel> loaded;    // null: not resident
    std::function<pipeline::LoadedModel()> load;      // the family's loader with this model's options
    pipeline::Variant variant;
    pipeline::Geometry geometry;  // the family's, for the variant (what the loaded parts carry)
    std::string precision;       // the last load's; the variant's default before the first
    bool switches_loras = true;  // Parts::use_loras was set at the last load (assumed before the first)
    double weight_bytes = 0;     // its weights, resident (the family's memory plan at the defaults)
    uint64_t last_used = 0;      // the server's job counter at its last job
    int loads = 0;               // how often it was loaded (one at start for a model loaded then)
  };
  std::shared_ptr<Residence> residence = std::make_shared<Residence>();

  std::shared_ptr<pipeline::LoadedModel> loaded() const;  // the loaded parts now, or null
  bool resident() const { return loaded() != nullptr; }
  // Loads it when it is not resident (the family's loader; throws its error); returns the parts.
  // One thread at a time loads (the server's worker).
  std::shared_ptr<pipeline::LoadedModel> load() const;
  // Drops the server's hold on the weights (a job running on them keeps its own until it ends).
  void unload() const;
  const pipeline::Variant& variant() const { return residence->variant; }
  const pipeline::Geometry& geometry() const { return residence->geometry; }
  std::string precision() const;
  bool switches_loras() const;
  double weight_bytes() const { return residence->weight_bytes; }
  int loads() const;  // Residence::loads, read under its lock
};

// engine::resolve + the family's loader, as `vidax generate` does, but resident (load_now) or
// resolved only, to be loaded when a job needs it. lora_mode: how the per-job LoRAs reach the DiT
// (--lora-mode, docs/lora.md). mesh: under mpirun, this rank's part of the mesh (each load takes
// that rank's share, as `vidax generate --mesh`); it must outlive the model.
ServedModel load_served_model(const std::string& weights, const std::string& model,
                              const std::function<void(const std::string&)>& on_stage,
                              translate::LoraMode lora_mode = translate::LoraMode::Auto, bool load_now = true,
                              const dist::Mesh* mesh = nullptr);

// One LoRA of a request: a file inside the server's LoRA folder (--lora-dir) and its scale.
struct LoraUse {
  std::string path;  // relative to the LoRA folder, checked to stay inside it
  double scale = 1.0;
};

// One keyframe of a request's `images` (LTX-2): an image at a pixel frame with a strength, as the
// CLI's `--image FILE --image-frame N --image-strength S`. `bytes` is what the request carried
// (a data URL's or a form file part's), until the server saves it at `path`.
struct KeyImageUse {
  std::string path;
  int64_t frame = 0;
  double strength = 1.0;
  std::string bytes;  // not stored with the job
};
constexpr size_t kMaxKeyImages = 16;

struct VideoSpec {
  std::string model, prompt, negative_prompt;  // negative "" = the variant's default
  int64_t frames = 0, height = 0, width = 0, steps = 0;
  uint64_t seed = 0;
  double guidance = 0, shift = 0, fps = 0;
  // Per denoiser when the request gives no guidance and the variant has several (Wan 2.2 A14B's
  // experts: the variant's Defaults::guidance_scales); empty = `guidance` on every step.
  std::vector<double> guidance_scales;
  std::string sampler;
  std::string seconds;  // as the API reports it: the request's `seconds`, else frames / fps
  std::vector<LoraUse> loras;  // merged for this job only
  std::string preset;          // "" = none; its settings are already in steps/shift/sampler/guidance
  // Image-to-video: the uploaded input_reference (and last_frame, first-last-frame models), saved
  // in the server's data folder; "" = none. Their size is the video's aspect ratio (as the CLI's).
  std::string image, last_image;
  // `images`: keyframes after input_reference (frame 0), for a model that takes them (Variant::key_images).
  std::vector<KeyImageUse> key_images;
  // `timeout_seconds`: this job's limit (0 = none given); the server's --job-timeout caps it.
  double timeout_seconds = 0;
  std::string size() const { return std::to_string(width) + "x" + std::to_string(height); }
};

// The fields POST /v1/videos knows; any other is refused by name.
const std::vector<std::string>& video_request_fields();

// The image fields, which come only as files of a multipart form (OpenAI's input_reference; our
// last_frame): the server takes them out of the body and says here which were uploaded.
struct UploadedImages {
  bool input_reference = false, last_frame = false;
  // The form's other file parts, by field name: what an `images` entry's `image` may name. A part
  // no entry names is an unknown field.
  std::map<std::string, std::string> other_files;
};

// `body` is the parsed JSON object, or a multipart form's fields as strings
// (from_form: numbers may then come as their decimal text, `lora` as its JSON text).
// `images`: which image files the form carried (checked against the model's tasks here; the
// server saves and decodes them).
// `lora_dir`: the folder `lora` entries resolve in ("" = none configured: `lora` is refused).
// Throws ApiError.
VideoSpec parse_video_request(const nlohmann::json& body, bool from_form, const std::vector<ServedModel>& models,
                              const std::string& lora_dir = "", const UploadedImages& images = {});

// A `lora` entry's file inside `lora_dir`: `name` (a file name without its .safetensors) or
// `path` (relative, in a subfolder perhaps); absolute paths, `..`, and links leading out of the
// folder are refused. Returns the path relative to the folder. `field` names the entry in errors.
std::string resolve_lora_file(const std::string& lora_dir, const nlohmann::json& entry, const std::string& field);
// The LoRAs a request may name (GET /v1/loras, the page's picker): every .safetensors file in
// `lora_dir` and its subfolders that resolve_lora_file accepts as a `path` (hidden entries, other
// files and links leading out are left out), sorted by path, at most `limit`.
struct LoraFile {
  std::string path;  // relative to the folder, '/'-separated: what `lora[i].path` takes
  std::string name;  // what `lora[i].name` takes ("" for a file in a subfolder)
  int64_t bytes = 0;
};
std::vector<LoraFile> list_lora_files(const std::string& lora_dir, size_t limit = 1000);
// The LoRA files of a spec as the loader takes them (paths inside `lora_dir`).
std::vector<translate::LoraSpec> lora_specs(const VideoSpec& s, const std::string& lora_dir);

nlohmann::json spec_to_json(const VideoSpec& s);
VideoSpec spec_from_json(const nlohmann::json& j);
// The pipeline's request for a spec, with the variant's default negative prompt.
pipeline::Request to_pipeline_request(const VideoSpec& s, const pipeline::Defaults& d);

}  // namespace vidax::serve
