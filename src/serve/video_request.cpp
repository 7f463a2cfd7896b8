#include "serve/video_request.h"

#include "io/video.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <optional>
#include <random>
#include <regex>
#include <set>

#include "engine/families.h"
#include "io/video.h"
#include "pipeline/memory_plan.h"
#include "pipeline/request_check.h"
#include "serve/api_error.h"

namespace vidax::serve {

namespace {

using nlohmann::json;

constexpr size_t kMaxPromptBytes = 20000;  // far above any text encoder's budget (Wan: 512 tokens)
// A server's own bounds, beside the CLI's rules: no single request may hold the queue for days.
constexpr int64_t kMaxFrames = 10000;  // steps: pipeline::kMaxSteps, the CLI's bound
constexpr size_t kMaxLoras = 8;
constexpr double kMaxTimeoutSeconds = 7 * 86400;  // a week
constexpr double kMaxLoraScale = 100;  // |scale|; a LoRA's useful range is about 0..2

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

// The bytes of a `data:image/...;base64,...` URL; nullopt when `text` is not one.
std::optional<std::string> data_url_bytes(const std::string& text) {
  static const std::regex head(R"(data:image/[A-Za-z0-9.+-]+;base64,)");
  std::smatch m;
  if (!std::regex_search(text, m, head, std::regex_constants::match_continuous)) return std::nullopt;
  std::string out;
  uint32_t acc = 0;
  int bits = 0;
  size_t pad = 0;
  for (size_t i = static_cast<size_t>(m.length(0)); i < text.size(); ++i) {
    const char c = text[i];
    int v;
    if (c >= 'A' && c <= 'Z') v = c - 'A';
    else if (c >= 'a' && c <= 'z') v = c - 'a' + 26;
    else if (c >= '0' && c <= '9') v = c - '0' + 52;
    else if (c == '+') v = 62;
    else if (c == '/') v = 63;
    else if (c == '=' && ++pad <= 2) continue;
    else return std::nullopt;
    if (pad) return std::nullopt;  // data after '='
    acc = (acc << 6) | static_cast<uint32_t>(v);
    bits += 6;
    if (bits >= 8) {
      bits -= 8;
      out.push_back(static_cast<char>((acc >> bits) & 0xff));
    }
  }
  return out;
}

std::string format_seconds(double s) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", s);
  return buf;
}

}  // namespace

std::shared_ptr<pipeline::LoadedModel> ServedModel::loaded() const {
  std::lock_guard<std::mutex> lock(residence->mu);
  return residence->loaded;
}

std::shared_ptr<pipeline::LoadedModel> ServedModel::load() const {
  if (auto m = loaded()) return m;
  // Loaded outside the lock (minutes for a large model), so requests checked meanwhile do not
  // wait; one thread loads (the worker, or the start-up before it runs).
  auto m = std::make_shared<pipeline::LoadedModel>(residence->load());
  std::lock_guard<std::mutex> lock(residence->mu);
  residence->precision = m->precision;
  residence->switches_loras = static_cast<bool>(m->parts.use_loras);
  ++residence->loads;
  residence->loaded = m;
  return m;
}

void ServedModel::unload() const {
  std::shared_ptr<pipeline::LoadedModel> dropped;
  {
    std::lock_guard<std::mutex> lock(residence->mu);
    dropped.swap(residence->loaded);
  }
  // freed here, outside the lock, when nothing else holds it
}

std::string ServedModel::precision() const {
  std::lock_guard<std::mutex> lock(residence->mu);
  return residence->precision;
}

int ServedModel::loads() const {
  std::lock_guard<std::mutex> lock(residence->mu);
  return residence->loads;
}

bool ServedModel::switches_loras() const {
  std::lock_guard<std::mutex> lock(residence->mu);
  return residence->switches_loras;
}

ServedModel load_served_model(const std::string& weights, const std::string& model,
                              const std::function<void(const std::string&)>& on_stage, translate::LoraMode lora_mode,
                              bool load_now, const dist::Mesh* mesh) {
  const engine::Resolved r = engine::resolve(weights, model);
  pipeline::LoadOptions lo;
  lo.lora.mode = lora_mode;
  lo.weights_dir = weights;
  lo.model = r.variant.name;
  lo.on_stage = on_stage;
  lo.mesh = mesh;
  lo.text_encoder = pipeline::Residency::Resident;  // every job encodes its prompts
  ServedModel m;
  m.weights = weights;
  m.family = r.family;
  m.name = r.variant.name;
  ServedModel::Residence& res = *m.residence;
  res.load = [family = r.family, lo] { return family->load(lo); };
  res.variant = r.variant;
  res.geometry = r.family->geometry(r.variant.name);
  res.precision = r.variant.defaults.precision;
  // Its weights as the server holds them: every part resident (keep_loaded), at the defaults.
  pipeline::Request at_defaults;
  at_defaults.frames = r.variant.defaults.frames;
  at_defaults.height = r.variant.defaults.height;
  at_defaults.width = r.variant.defaults.width;
  at_defaults.steps = r.variant.defaults.steps;
  at_defaults.keep_loaded = true;
  for (const auto& item : r.family->memory_plan(r.variant.name, at_defaults, "").items)
    if (item.kind == pipeline::MemoryKind::WeightsResident) res.weight_bytes += item.bytes;
  if (load_now) m.load();
  return m;
}

const std::vector<std::string>& video_request_fields() {
  static const std::vector<std::string> f = {"model",  "prompt", "size",     "seconds", "frames",
                                             "input_reference", "negative_prompt", "steps", "seed",
                                             "guidance", "shift", "sampler", "lora", "fps", "preset", "last_frame",
                                             "images", "timeout_seconds"};
  return f;
}

VideoSpec parse_video_request(const json& body, bool from_form, const std::vector<ServedModel>& models,
                              const std::string& lora_dir, const UploadedImages& images) {
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

  // Images: files of a multipart form only (the server has taken them out of the body), checked
  // against the model's tasks as the CLI checks --image / --last-image.
  {
    UploadedImages given = images;  // a field sent as text counts here: the model's refusal comes first
    given.input_reference |= body.contains("input_reference");
    given.last_frame |= body.contains("last_frame");
    const auto& tasks = model->variant().tasks;
    auto has = [&](const char* t) { return std::find(tasks.begin(), tasks.end(), t) != tasks.end(); };
    std::string list;
    for (const auto& t : tasks) list += (list.empty() ? "" : ", ") + t;
    if (given.last_frame && !given.input_reference)
      throw bad_field("last_frame", "last_frame needs input_reference (the first frame)", "missing_required_parameter");
    if (given.input_reference && !(has("i2v") || has("flf2v") || has("ti2v")))
      throw bad_field("input_reference", "model " + s.model + " takes no input image (its tasks: " + list + ")",
                      "unsupported_value");
    if (given.last_frame && !has("flf2v"))
      throw bad_field("last_frame", "model " + s.model + " takes no last frame (its tasks: " + list + ")",
                      "unsupported_value");
    // A VACE model runs without its control inputs (the reference's zero video; the API has no
    // field for them yet), so it needs no image either.
    if (!has("t2v") && !has("ti2v") && !has("vace") && !given.input_reference)
      throw bad_field("input_reference", "model " + s.model + " generates from an image (its tasks: " + list +
                                             "): send input_reference, the first frame", "missing_required_parameter");
    if (has("flf2v") && !has("i2v") && given.input_reference && !given.last_frame)
      throw bad_field("last_frame", "model " + s.model + " generates between two frames: send last_frame too",
                      "missing_required_parameter");
  }
  for (const char* f : {"input_reference", "last_frame"})
    if (body.contains(f))
      throw bad_field(f, std::string(f) + " must be an image file in a multipart/form-data request (as OpenAI's SDK "
                                          "sends it), not a " + (from_form ? "text field" : "JSON value"),
                      "invalid_type");
  // Keyframes (LTX-2): as the CLI's --image FILE --image-frame N --image-strength S after the first
  // frame (input_reference). Frames and strengths are checked below, once the frame count is known.
  std::set<std::string> used_files;
  if (body.contains("images")) {
    const auto& v = model->variant();
    std::string list;
    for (const auto& t : v.tasks) list += (list.empty() ? "" : ", ") + t;
    if (!v.key_images)
      throw bad_field("images", "model " + s.model + " takes no images at chosen frames (its tasks: " + list +
                                    "); a first frame is input_reference, a last frame last_frame", "unsupported_value");
    json entries = body.at("images");
    if (from_form && entries.is_string()) {
      try {
        entries = json::parse(entries.get<std::string>());
      } catch (const json::exception&) {
        throw bad_field("images", "images is not valid JSON text (a list of {\"image\", \"frame\", \"strength\"})",
                        "invalid_json");
      }
    }
    if (!entries.is_array())
      throw bad_field("images", "images must be a list of {\"image\", \"frame\", \"strength\"}, got " +
                                    type_name(entries), "invalid_type");
    if (entries.size() > kMaxKeyImages)
      throw bad_field("images", "images has " + std::to_string(entries.size()) + " entries; at most " +
                                    std::to_string(kMaxKeyImages));
    const bool first_is_reference = images.input_reference;
    for (size_t k = 0; k < entries.size(); ++k) {
      const std::string field = "images[" + std::to_string(k) + "]";
      const json& e = entries[k];
      if (!e.is_object())
        throw bad_field(field, field + " must be an object {\"image\", \"frame\", \"strength\"}, got " + type_name(e),
                        "invalid_type");
      for (auto it = e.begin(); it != e.end(); ++it)
        if (it.key() != "image" && it.key() != "frame" && it.key() != "strength")
          throw valid_utf8(it.key()) ? bad_field(field + "." + it.key(), "unknown field '" + it.key() + "' in " + field,
                                                 "unknown_parameter")
                                     : bad_field(field, "a field name in " + field + " is not valid UTF-8", "invalid_encoding");
      KeyImageUse u;
      if (!e.contains("image"))
        throw bad_field(field + ".image", field + ".image is required (a data:image/...;base64 URL, or in a form the "
                                                  "name of a file part)", "missing_required_parameter");
      const std::string src = get_string(e, "image");
      if (const auto bytes = data_url_bytes(src)) {
        u.bytes = *bytes;
      } else if (src.rfind("data:", 0) == 0) {
        throw bad_field(field + ".image", field + ".image is not a data:image/...;base64 URL with valid base64",
                        "invalid_encoding");
      } else {
        const auto f = images.other_files.find(src);
        if (f == images.other_files.end())
          throw bad_field(field + ".image", field + ".image '" + src.substr(0, 64) + "': " +
                                                (from_form ? "no file part of that name in this form"
                                                           : "not a data:image/...;base64 URL (a file part's name "
                                                             "needs a multipart/form-data request)") ,
                          "invalid_value");
        u.bytes = f->second;
        used_files.insert(src);
      }
      // As the CLI: only the first image defaults to frame 0 (here input_reference when given).
      if (e.contains("frame")) {
        u.frame = get_int(e, "frame", from_form);
      } else if (first_is_reference || k > 0) {
        throw bad_field(field + ".frame", field + " has no frame: only the first image (input_reference, else "
                                                  "images[0]) defaults to frame 0; give " + field + ".frame",
                        "missing_required_parameter");
      }
      if (e.contains("strength")) u.strength = get_number(e, "strength", from_form);
      s.key_images.push_back(std::move(u));
    }
  }
  for (const auto& [name, bytes] : images.other_files)
    if (!used_files.count(name))
      throw valid_utf8(name) ? bad_field(name, "unknown field '" + name + "'", "unknown_parameter")
                             : ApiError(400, "a field name is not valid UTF-8", "", "invalid_encoding");
  if (body.contains("lora")) {
    if (lora_dir.empty())
      throw bad_field("lora", "this server has no LoRA folder (vidax serve --lora-dir DIR); lora is not accepted",
                      "unsupported_value");
    if (!model->switches_loras())
      throw bad_field("lora", "model " + s.model + " cannot switch LoRAs per request", "unsupported_value");
    json list = body.at("lora");
    if (from_form && list.is_string()) {  // a form sends the list as its JSON text
      try {
        list = json::parse(list.get<std::string>());
      } catch (const json::exception&) {
        throw bad_field("lora", "lora must be a JSON list of {name or path, scale}", "invalid_json");
      }
    }
    if (!list.is_array())
      throw bad_field("lora", "lora must be a list of {\"name\" or \"path\", \"scale\"}, got " + type_name(list),
                      "invalid_type");
    if (list.size() > kMaxLoras)
      throw bad_field("lora", "lora has " + std::to_string(list.size()) + " entries; at most " +
                                  std::to_string(kMaxLoras));
    for (size_t i = 0; i < list.size(); ++i) {
      const std::string field = "lora[" + std::to_string(i) + "]";
      LoraUse u;
      u.path = resolve_lora_file(lora_dir, list[i], field);
      if (list[i].contains("scale")) {
        const json& v = list[i].at("scale");
        if (!v.is_number())
          throw bad_field(field + ".scale", field + ".scale must be a number, got " + type_name(v), "invalid_type");
        u.scale = v.get<double>();
        if (!(std::isfinite(u.scale) && std::fabs(u.scale) <= kMaxLoraScale))
          throw bad_field(field + ".scale", field + ".scale " + v.dump() + ": must be in [-" +
                                                format_seconds(kMaxLoraScale) + ", " + format_seconds(kMaxLoraScale) + "]");
      }
      s.loras.push_back(u);
    }
    // The files against the model (keys, shapes) now, so a bad LoRA is a 400, not a failed job.
    try {
      // A model not resident now has its LoRAs checked when its job loads it (the job fails then).
      if (const auto loaded = model->loaded()) loaded->parts.check_loras(lora_specs(s, lora_dir));
    } catch (const Error& e) {
      throw bad_field("lora", std::string("a LoRA does not fit model ") + s.model + ": " + e.what());
    }
  }
  // A sampling preset (`vidax models` lists them) replaces the sampling defaults; fields given win.
  pipeline::Defaults d = model->variant().defaults;
  if (body.contains("preset")) {
    s.preset = get_string(body, "preset");
    try {
      d = pipeline::with_preset(d, model->family->sampling_preset(s.preset));
    } catch (const Error& e) {
      std::string m = e.what();
      if (m.rfind("--preset ", 0) == 0) m = m.substr(2);  // the CLI's option, as the API's field
      throw bad_field("preset", m);
    }
  }

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
  if (body.contains("timeout_seconds")) {
    s.timeout_seconds = get_number(body, "timeout_seconds", from_form);
    if (!(s.timeout_seconds > 0 && s.timeout_seconds <= kMaxTimeoutSeconds))
      throw bad_field("timeout_seconds", "timeout_seconds " + format_seconds(s.timeout_seconds) +
                                             ": must be a number of seconds in (0, " +
                                             format_seconds(kMaxTimeoutSeconds) + "] (the server's --job-timeout caps it)");
  }
  s.steps = body.contains("steps") ? get_int(body, "steps", from_form) : d.steps;
  s.guidance = body.contains("guidance") ? get_number(body, "guidance", from_form) : d.guidance;
  if (!body.contains("guidance")) s.guidance_scales = d.guidance_scales;  // as the CLI without --guidance
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

  // The keyframes' frames and strengths: the CLI's check (and messages) on the CLI's list, where
  // input_reference is the first --image (frame 0, strength 1); the first entry that fails is named.
  {
    pipeline::Request kr;
    kr.frames = s.frames;
    const size_t offset = images.input_reference ? 1 : 0;
    if (offset) kr.key_images.push_back({Tensor(), 0, 1.0});
    for (size_t k = 0; k < s.key_images.size(); ++k) {
      kr.key_images.push_back({Tensor(), s.key_images[k].frame, s.key_images[k].strength});
      try {
        pipeline::check_key_images(kr);
      } catch (const Error& e) {
        const std::string m = e.what();
        const std::string field = "images[" + std::to_string(k) + "]";
        throw bad_field(field + (m.rfind("--image-frame", 0) == 0 ? ".frame" : ".strength"), m);
      }
    }
  }
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
    pipeline::check_memory(model->family->memory_plan(s.model, req, model->precision()), -1,
                           static_cast<double>(pipeline::mem_total_bytes()), [](const std::string&) {});
  } catch (const Error& e) {
    throw bad_field("size", std::string("the request does not fit this machine: ") + e.what(), "too_large");
  }
  return s;
}

std::string resolve_lora_file(const std::string& lora_dir, const json& entry, const std::string& field) {
  namespace fs = std::filesystem;
  if (!entry.is_object())
    throw bad_field(field, field + " must be an object {\"name\" or \"path\", \"scale\"}, got " + type_name(entry),
                    "invalid_type");
  for (auto it = entry.begin(); it != entry.end(); ++it)
    if (it.key() != "name" && it.key() != "path" && it.key() != "scale")
      throw valid_utf8(it.key()) ? bad_field(field + "." + it.key(), "unknown field '" + it.key() + "' in " + field,
                                             "unknown_parameter")
                                 : bad_field(field, "a field name in " + field + " is not valid UTF-8", "invalid_encoding");
  if (entry.contains("name") == entry.contains("path"))
    throw bad_field(field, field + " needs exactly one of name and path", "missing_required_parameter");
  const std::string key = entry.contains("name") ? "name" : "path";
  const std::string param = field + "." + key;
  const json& v = entry.at(key);
  if (!v.is_string()) throw bad_field(param, param + " must be a string, got " + type_name(v), "invalid_type");
  const std::string text = v.get<std::string>();
  if (!valid_utf8(text)) throw bad_field(param, param + " is not valid UTF-8", "invalid_encoding");
  const std::string shown = "'" + text.substr(0, 64) + "'";
  std::string rel;
  if (key == "name") {
    static const std::regex re(R"([A-Za-z0-9][A-Za-z0-9._+-]{0,127})");
    if (!std::regex_match(text, re) || text.find("..") != std::string::npos)
      throw bad_field(param, param + " " + shown +
                                 " is not a LoRA name (letters, digits, '.', '_', '+', '-'; no folders: use path)");
    rel = text + ".safetensors";
  } else {
    // Relative, inside the folder: no absolute path, no empty, '.' or '..' component, nothing but '/'.
    bool ok = !text.empty() && text.size() <= 1024 && text.front() != '/' && text.find('\\') == std::string::npos &&
              text.find('\0') == std::string::npos;
    for (size_t b = 0; ok && b <= text.size();) {
      const size_t e = std::min(text.find('/', b), text.size());
      const std::string part = text.substr(b, e - b);
      ok = !part.empty() && part != "." && part != "..";
      b = e + 1;
    }
    if (!ok)
      throw bad_field(param, param + " " + shown +
                                 " must be a relative path inside the LoRA folder (no '..', no leading '/')");
    if (text.size() < 12 || text.compare(text.size() - 12, 12, ".safetensors") != 0)
      throw bad_field(param, param + " " + shown + " must name a .safetensors file");
    rel = text;
  }
  // The file must exist inside the folder once links are followed (a link may not lead out of it).
  std::error_code ec;
  const fs::path root = fs::canonical(lora_dir, ec);
  if (ec) throw ApiError(500, "the LoRA folder is unreadable: " + ec.message(), param, "internal_error");
  const fs::path file = fs::canonical(root / rel, ec);
  if (ec || !fs::is_regular_file(file, ec))
    throw bad_field(param, "no LoRA " + shown + " in the LoRA folder", "lora_not_found");
  const std::string r = root.string() + "/", f = file.string();
  if (f.compare(0, r.size(), r) != 0)
    throw bad_field(param, param + " " + shown + " leads out of the LoRA folder", "invalid_value");
  return rel;
}

std::vector<LoraFile> list_lora_files(const std::string& lora_dir, size_t limit) {
  namespace fs = std::filesystem;
  std::vector<LoraFile> out;
  if (lora_dir.empty()) return out;
  std::error_code ec;
  const fs::path root = fs::canonical(lora_dir, ec);
  if (ec) throw ApiError(500, "the LoRA folder is unreadable: " + ec.message(), "", "internal_error");
  fs::recursive_directory_iterator it(root, fs::directory_options::skip_permission_denied, ec), end;
  for (; !ec && it != end; it.increment(ec)) {
    const std::string base = it->path().filename().string();
    if (!base.empty() && base.front() == '.') {  // hidden: neither listed nor descended into
      if (it->is_directory(ec)) it.disable_recursion_pending();
      continue;
    }
    if (it->is_directory(ec)) continue;
    const std::string rel = fs::relative(it->path(), root, ec).generic_string();
    if (ec) continue;
    try {  // the same rules a request's `path` meets
      if (resolve_lora_file(root.string(), json{{"path", rel}}, "lora") != rel) continue;
    } catch (const ApiError&) {
      continue;
    }
    LoraFile f;
    f.path = rel;
    // `name` when a request's lora[i].name would reach this very file (the same check again).
    const std::string stem = rel.substr(0, rel.size() - 12);
    try {
      if (resolve_lora_file(root.string(), json{{"name", stem}}, "lora") == rel) f.name = stem;
    } catch (const ApiError&) {
    }
    f.bytes = static_cast<int64_t>(fs::file_size(fs::canonical(it->path(), ec), ec));
    out.push_back(std::move(f));
  }
  std::sort(out.begin(), out.end(), [](const LoraFile& a, const LoraFile& b) { return a.path < b.path; });
  if (out.size() > limit) out.resize(limit);
  return out;
}

std::vector<translate::LoraSpec> lora_specs(const VideoSpec& s, const std::string& lora_dir) {
  std::vector<translate::LoraSpec> out;
  for (const auto& l : s.loras) out.push_back({(std::filesystem::path(lora_dir) / l.path).string(), l.scale});
  return out;
}

json spec_to_json(const VideoSpec& s) {
  json key_images = json::array();
  for (const auto& k : s.key_images) key_images.push_back({{"path", k.path}, {"frame", k.frame}, {"strength", k.strength}});
  json loras = json::array();
  for (const auto& l : s.loras) loras.push_back({{"path", l.path}, {"scale", l.scale}});
  return {{"model", s.model},  {"lora", loras}, {"preset", s.preset},       {"prompt", s.prompt},     {"negative_prompt", s.negative_prompt},
          {"frames", s.frames},     {"height", s.height},     {"width", s.width},
          {"steps", s.steps},       {"seed", s.seed},         {"guidance", s.guidance},
          {"shift", s.shift},       {"sampler", s.sampler},   {"fps", s.fps},
          {"seconds", s.seconds},   {"image", s.image},       {"last_image", s.last_image},
          {"guidance_scales", s.guidance_scales}, {"images", key_images}, {"timeout_seconds", s.timeout_seconds}};
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
  s.image = j.value("image", std::string());  // jobs queued by an older server have none
  s.last_image = j.value("last_image", std::string());
  // Jobs queued by an older server have neither.
  for (const auto& l : j.value("lora", json::array())) s.loras.push_back({l.at("path"), l.at("scale")});
  s.preset = j.value("preset", "");
  s.guidance_scales = j.value("guidance_scales", std::vector<double>{});  // absent in older servers' jobs
  s.timeout_seconds = j.value("timeout_seconds", 0.0);  // absent in older servers' jobs
  for (const auto& k : j.value("images", json::array()))  // absent in older servers' jobs
    s.key_images.push_back({k.at("path"), k.at("frame"), k.at("strength"), ""});
  return s;
}

pipeline::Request to_pipeline_request(const VideoSpec& s, const pipeline::Defaults& d) {
  pipeline::Request r;
  r.keep_loaded = true;  // the server keeps its models loaded between jobs (the memory plan counts them)
  r.prompt = s.prompt;
  r.negative_prompt = s.negative_prompt;
  r.default_negative_prompt = d.negative_prompt;
  r.frames = s.frames;
  r.height = s.height;
  r.width = s.width;
  r.steps = s.steps;
  r.seed = s.seed;
  r.guidance = s.guidance;
  r.guidance_scales = s.guidance_scales;
  r.shift = s.shift;
  r.sampler = s.sampler;
  r.fps = s.fps;  // the video's frame rate: a family whose model takes it reads it (Request::fps)
  if (!s.image.empty()) r.image = io::read_image(s.image, "input_reference");
  if (!s.last_image.empty()) r.last_image = io::read_image(s.last_image, "last_frame");
  // Keyframes after the first frame (an empty path: the image comes from rank 0, MeshJob).
  for (size_t k = 0; k < s.key_images.size(); ++k) {
    const KeyImageUse& u = s.key_images[k];
    r.key_images.push_back({u.path.empty() ? Tensor() : io::read_image(u.path, "images[" + std::to_string(k) + "].image"),
                            u.frame, u.strength});
  }
  return r;
}

}  // namespace vidax::serve
