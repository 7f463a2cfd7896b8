#include "serve/video_request.h"

#include <algorithm>
#include <cmath>
#include <random>
#include <regex>

#include "engine/families.h"
#include "pipeline/memory_plan.h"
#include "serve/api_error.h"

namespace vidax::serve {

namespace {

using nlohmann::json;

constexpr size_t kMaxPromptBytes = 20000;  // far above any text encoder's budget (Wan: 512 tokens)
// A server's own bounds, beside the CLI's rules: no single request may hold the queue for days.
constexpr int64_t kMaxFrames = 10000;  // steps: pipeline::kMaxSteps, the CLI's bound

std::string type_name(const json& v) {
  if (v.is_string()) return "a string";
  if (v.is_boolean()) return "a boolean";
  if (v.is_number()) return "a number";
  if (v.is_null()) return "null";
  if (v.is_array()) return "an array";
  return "an object";
}

bool valid_utf8(const std::string& s) {
  try {
    (void)json(s).dump();  // nlohmann parses any bytes into a string but refuses to write invalid UTF-8
    return true;
  } catch (const json::type_error&) {
    return false;
  }
}

std::string get_string(const json& body, const std::string& key) {
  const json& v = body.at(key);
  if (!v.is_string()) throw bad_field(key, key + " must be a string, got " + type_name(v), "invalid_type");
  std::string s = v.get<std::string>();
  if (!valid_utf8(s)) throw bad_field(key, key + " is not valid UTF-8", "invalid_encoding");
  return s;
}

// A form field's text as a JSON number ("12" -> 12, "5.5" -> 5.5); other text stays a string.
json form_number(const json& v) {
  if (!v.is_string()) return v;
  const std::string s = v.get<std::string>();
  static const std::regex num(R"(-?(0|[1-9][0-9]{0,18})(\.[0-9]+)?([eE][-+]?[0-9]+)?)");
  if (!std::regex_match(s, num)) return v;
  try {
    return json::parse(s);
  } catch (const json::exception&) {
    return v;
  }
}

int64_t get_int(const json& body, const std::string& key, bool from_form) {
  const json v = from_form ? form_number(body.at(key)) : body.at(key);
  if (!v.is_number_integer())
    throw bad_field(key, key + " must be an integer, got " + (v.is_number() ? v.dump() : type_name(v)),
                    "invalid_type");
  if (v.is_number_unsigned() && v.get<uint64_t>() > static_cast<uint64_t>(INT64_MAX))
    throw bad_field(key, key + " " + v.dump() + " is out of range");
  return v.get<int64_t>();
}

double get_number(const json& body, const std::string& key, bool from_form) {
  const json v = from_form ? form_number(body.at(key)) : body.at(key);
  if (!v.is_number()) throw bad_field(key, key + " must be a number, got " + type_name(v), "invalid_type");
  const double d = v.get<double>();
  if (!std::isfinite(d)) throw bad_field(key, key + " must be a finite number");
  return d;
}

// pipeline::validate_request names the CLI option ("--frames 80: ..."); the API field is the one
// the client sent: frames or seconds, size for height and width.
std::string field_of_message(const std::string& m, bool gave_seconds) {
  static const std::pair<const char*, const char*> map[] = {
      {"--frames ", "frames"}, {"--height ", "size"},   {"--width ", "size"},     {"--steps ", "steps"},
      {"--guidance ", "guidance"}, {"--shift ", "shift"}, {"--sampler ", "sampler"}};
  for (const auto& [prefix, field] : map)
    if (m.rfind(prefix, 0) == 0) return std::string(field) == "frames" && gave_seconds ? "seconds" : field;
  return "";
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", s);
  return buf;
}

}  // namespace

ServedModel load_served_model(const std::string& weights, const std::string& model,
                              const std::function<void(const std::string&)>& on_stage) {
  const engine::Resolved r = engine::resolve(weights, model);
  pipeline::LoadOptions lo;
  lo.weights_dir = weights;
  lo.model = r.variant.name;
  lo.on_stage = on_stage;
  lo.text_encoder = pipeline::Residency::Resident;  // every job encodes its prompts
  ServedModel m;
  m.weights = weights;
  m.family = r.family;
  m.loaded = std::make_shared<pipeline::LoadedModel>(r.family->load(lo));
  m.name = m.loaded->variant.name;
  return m;
}

const std::vector<std::string>& video_request_fields() {
  static const std::vector<std::string> f = {"model",  "prompt", "size",     "seconds", "frames",
                                             "input_reference", "negative_prompt", "steps", "seed",
                                             "guidance", "shift", "sampler", "lora", "fps", "preset"};
  return f;
}

VideoSpec parse_video_request(const json& body, bool from_form, const std::vector<ServedModel>& models) {
  if (!body.is_object()) throw ApiError(400, "the request body must be a JSON object", "", "invalid_json");
  const auto& known = video_request_fields();
  for (auto it = body.begin(); it != body.end(); ++it)
    if (std::find(known.begin(), known.end(), it.key()) == known.end())
      throw valid_utf8(it.key()) ? bad_field(it.key(), "unknown field '" + it.key() + "'", "unknown_parameter")
                                 : ApiError(400, "a field name is not valid UTF-8", "", "invalid_encoding");

  // The model: one of those served; may be left out when the server holds exactly one.
  std::string names;
  for (const auto& m : models) names += (names.empty() ? "" : ", ") + m.name;
  const ServedModel* model = nullptr;
  if (body.contains("model")) {
    const std::string want = get_string(body, "model");
    for (const auto& m : models)
      if (m.name == want) model = &m;
    if (!model) throw ApiError(400, "model '" + want + "' is not served here (served: " + names + ")", "model",
                               "model_not_found");
  } else {
    if (models.size() != 1)
      throw bad_field("model", "model is required: this server holds " + names, "missing_required_parameter");
    model = &models[0];
  }
  const pipeline::Defaults& d = model->variant().defaults;

  VideoSpec s;
  s.model = model->name;
  if (!body.contains("prompt")) throw bad_field("prompt", "prompt is required", "missing_required_parameter");
  s.prompt = get_string(body, "prompt");
  if (s.prompt.empty()) throw bad_field("prompt", "prompt must not be empty");
  if (s.prompt.size() > kMaxPromptBytes)
    throw bad_field("prompt", "prompt is " + std::to_string(s.prompt.size()) + " bytes; at most " +
                                  std::to_string(kMaxPromptBytes));
  if (body.contains("negative_prompt")) s.negative_prompt = get_string(body, "negative_prompt");
  if (s.negative_prompt.size() > kMaxPromptBytes)
    throw bad_field("negative_prompt", "negative_prompt is longer than " + std::to_string(kMaxPromptBytes) + " bytes");

  // Extensions this build does not serve yet are refused by name, never ignored.
  if (body.contains("input_reference")) {
    std::string tasks;
    for (const auto& t : model->variant().tasks) tasks += (tasks.empty() ? "" : ", ") + t;
    throw bad_field("input_reference",
                    "model " + s.model + " takes no input image (its tasks: " + tasks + ")", "unsupported_value");
  }
  if (body.contains("lora"))
    throw bad_field("lora", "this server has no LoRA folder configured; lora is not supported", "unsupported_value");
  if (body.contains("preset"))
    throw bad_field("preset", "presets are not supported by this server; give the fields themselves",
                    "unsupported_value");

  s.width = d.width;
  s.height = d.height;
  if (body.contains("size")) {
    const std::string size = get_string(body, "size");
    static const std::regex re(R"(([1-9][0-9]{0,4})x([1-9][0-9]{0,4}))");
    std::smatch m;
    if (!std::regex_match(size, m, re))
      throw bad_field("size", "size '" + size + "' is not WIDTHxHEIGHT in pixels (e.g. \"" +
                                  std::to_string(d.width) + "x" + std::to_string(d.height) + "\")");
    s.width = std::stoll(m[1]);
    s.height = std::stoll(m[2]);
  }
  s.fps = body.contains("fps") ? get_number(body, "fps", from_form) : d.fps;
  if (!(s.fps > 0 && s.fps <= 240)) throw bad_field("fps", "fps " + format_seconds(s.fps) + ": must be in (0, 240]");

  const bool gave_seconds = body.contains("seconds");
  if (gave_seconds && body.contains("frames"))
    throw bad_field("seconds", "give seconds or frames, not both", "conflicting_parameters");
  s.frames = d.frames;
  if (body.contains("frames")) s.frames = get_int(body, "frames", from_form);
  if (gave_seconds) {
    // OpenAI sends seconds as a string ("4"); a number is taken too.
    json v = body.at("seconds");
    if (v.is_string()) v = form_number(v);
    if (!v.is_number())
      throw bad_field("seconds", "seconds must be a number or its text (e.g. \"4\"), got " +
                                     (v.is_string() ? "'" + v.get<std::string>() + "'" : type_name(v)),
                      "invalid_type");
    const double secs = v.get<double>();
    if (!(std::isfinite(secs) && secs > 0 && secs <= 3600))
      throw bad_field("seconds", "seconds " + v.dump() + ": must be in (0, 3600]");
    // The nearest frame count the VAE takes (k * frame_multiple + 1) to seconds * fps.
    const int64_t ft = model->geometry().frame_multiple();
    s.frames = std::llround(secs * s.fps / static_cast<double>(ft)) * ft + 1;
    s.seconds = body.at("seconds").is_string() ? body.at("seconds").get<std::string>() : format_seconds(secs);
  }
  s.steps = body.contains("steps") ? get_int(body, "steps", from_form) : d.steps;
  s.guidance = body.contains("guidance") ? get_number(body, "guidance", from_form) : d.guidance;
  s.shift = body.contains("shift") ? get_number(body, "shift", from_form) : d.shift;
  s.sampler = body.contains("sampler") ? get_string(body, "sampler") : d.sampler;
  // As the CLI: no seed or a negative one draws a random seed; the spec records the one used.
  const int64_t seed = body.contains("seed") ? get_int(body, "seed", from_form) : -1;
  s.seed = seed >= 0 ? static_cast<uint64_t>(seed) : std::random_device{}() % 2147483648u;
  if (s.seconds.empty()) s.seconds = format_seconds(static_cast<double>(s.frames) / s.fps);
  if (s.frames > kMaxFrames)
    throw bad_field(gave_seconds ? "seconds" : "frames",
                    "frames " + std::to_string(s.frames) + ": this server takes at most " + std::to_string(kMaxFrames));
  if (s.steps > pipeline::kMaxSteps)
    throw bad_field("steps", "steps " + std::to_string(s.steps) + ": this server takes at most " +
                                 std::to_string(pipeline::kMaxSteps) + " (the CLI's bound, pipeline::kMaxSteps)");

  // The CLI's checks, on the loaded model's geometry, then the memory the request needs.
  const pipeline::Request req = to_pipeline_request(s, d);
  try {
    pipeline::validate_request(model->geometry(), req);
  } catch (const ApiError&) {
    throw;
  } catch (const Error& e) {
    throw bad_field(field_of_message(e.what(), gave_seconds), e.what());
  }
  try {
    pipeline::check_memory(model->family->memory_plan(s.model, req, model->loaded->precision), -1,
                           static_cast<double>(pipeline::mem_total_bytes()), [](const std::string&) {});
  } catch (const Error& e) {
    throw bad_field("size", std::string("the request does not fit this machine: ") + e.what(), "too_large");
  }
  return s;
}

json spec_to_json(const VideoSpec& s) {
  return {{"model", s.model},       {"prompt", s.prompt},     {"negative_prompt", s.negative_prompt},
          {"frames", s.frames},     {"height", s.height},     {"width", s.width},
          {"steps", s.steps},       {"seed", s.seed},         {"guidance", s.guidance},
          {"shift", s.shift},       {"sampler", s.sampler},   {"fps", s.fps},
          {"seconds", s.seconds}};
}

VideoSpec spec_from_json(const json& j) {
  VideoSpec s;
  s.model = j.at("model");
  s.prompt = j.at("prompt");
  s.negative_prompt = j.at("negative_prompt");
  s.frames = j.at("frames");
  s.height = j.at("height");
  s.width = j.at("width");
  s.steps = j.at("steps");
  s.seed = j.at("seed");
  s.guidance = j.at("guidance");
  s.shift = j.at("shift");
  s.sampler = j.at("sampler");
  s.fps = j.at("fps");
  s.seconds = j.at("seconds");
  return s;
}

pipeline::Request to_pipeline_request(const VideoSpec& s, const pipeline::Defaults& d) {
  pipeline::Request r;
  r.prompt = s.prompt;
  r.negative_prompt = s.negative_prompt;
  r.default_negative_prompt = d.negative_prompt;
  r.frames = s.frames;
  r.height = s.height;
  r.width = s.width;
  r.steps = s.steps;
  r.seed = s.seed;
  r.guidance = s.guidance;
  r.shift = s.shift;
  r.sampler = s.sampler;
  return r;
}

}  // namespace vidax::serve
