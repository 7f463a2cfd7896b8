#include "engine/families.h"

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "models/hunyuan/family.h"
#include "models/hunyuan15/family.h"
#include "models/ltx2/family.h"
#include "models/wan/family.h"

namespace vidax::engine {

const std::vector<const pipeline::Family*>& families() {
  // One line per family.
  static const std::vector<const pipeline::Family*> all = {
      &wan::family(),
      &hunyuan::family(),
      &hunyuan15::family(),
      &ltx2::family(),
  };
  return all;
}

const pipeline::Family& family(const std::string& name) {
  std::string known;
  for (const auto* f : families()) {
    if (f->name() == name) return *f;
    known += (known.empty() ? "" : ", ") + f->name();
  }
  throw Error(msg() << "unknown model family '" << name << "'; known: " << known);
}

std::string variant_names() {
  std::string s;
  for (const auto* f : families())
    for (const auto& v : f->variants()) s += (s.empty() ? "" : ", ") + v.name;
  return s;
}

const pipeline::Family& family_of_model(const std::string& model) {
  for (const auto* f : families())
    if (f->has_variant(model)) return *f;
  throw Error(msg() << "unknown model '" << model << "'; known: " << variant_names());
}

namespace {

// vidax_model.json's "model" when it is a string, else "" (the families report malformed files).
std::string demo_model_named(const std::string& dir) {
  std::ifstream is(std::filesystem::path(dir) / "vidax_model.json");
  if (!is.is_open()) return "";
  const nlohmann::json j = nlohmann::json::parse(is, nullptr, /*allow_exceptions=*/false);
  if (!j.is_object() || !j.contains("model") || !j["model"].is_string()) return "";
  return j["model"].get<std::string>();
}

}  // namespace

Resolved resolve(const std::string& weights_dir, const std::string& model) {
  std::error_code dir_ec;  // a link loop is an error code here, not an exception
  VIDAX_CHECK(std::filesystem::is_directory(weights_dir, dir_ec),
              "weights directory " << weights_dir << " does not exist (or is not a directory)"
                                   << (dir_ec ? ": " + dir_ec.message() : std::string()));
  Resolved r;
  if (!model.empty()) {
    r.family = &family_of_model(model);
    r.variant = r.family->resolve(weights_dir, model);
    return r;
  }
  // A `vidax make-demo` folder names its variant in vidax_model.json: the family that has it reads
  // the folder (a name no family has is left to detection, which reports it).
  if (const std::string named = demo_model_named(weights_dir); !named.empty())
    for (const auto* f : families())
      if (f->has_variant(named)) {
        r.family = f;
        r.variant = f->resolve(weights_dir, named);
        return r;
      }
  for (const auto* f : families()) {
    const std::string v = f->detect(weights_dir);
    if (v.empty()) continue;
    r.family = f;
    r.variant = f->resolve(weights_dir, v);
    return r;
  }
  throw Error(msg() << "cannot tell which model " << weights_dir
                    << " holds (no vidax_model.json, no config.json with a known size); pass --model ("
                    << variant_names() << ")");
}

Resolved resolve(const std::string& weights_dir, const std::string& model, const pipeline::PartFiles& files) {
  if (!files.any()) return resolve(weights_dir, model);
  VIDAX_CHECK(!files.diffusion_model.empty() || !weights_dir.empty(),
              "no --weights and no --diffusion-model: give the diffusion model as a folder (--weights DIR) or a "
              "file (--diffusion-model FILE)");
  if (!weights_dir.empty()) {
    std::error_code ec;
    VIDAX_CHECK(std::filesystem::is_directory(weights_dir, ec),
                "weights directory " << weights_dir << " does not exist (or is not a directory)");
  }
  Resolved r;
  if (!model.empty()) {
    r.family = &family_of_model(model);
    r.variant = r.family->resolve_parts(weights_dir, model, files);
    return r;
  }
  for (const auto* f : families()) {
    const std::string v = f->detect_parts(weights_dir, files);
    if (v.empty()) continue;
    r.family = f;
    r.variant = f->resolve_parts(weights_dir, v, files);
    return r;
  }
  throw Error(msg() << "cannot tell which model "
                    << (files.diffusion_model.empty() ? weights_dir : files.diffusion_model)
                    << " holds; pass --model (" << variant_names() << ")");
}

PartsResolved check_part_files(const std::string& model, const pipeline::PartFiles& files) {
  PartsResolved r;
  if (!model.empty()) {
    r.family = &family_of_model(model);
    r.checked = r.family->check_part_files(files);
    return r;
  }
  std::string first_error;
  for (const auto* f : families()) {
    try {
      r.checked = f->check_part_files(files);
      r.family = f;
      return r;
    } catch (const Error& e) {
      if (first_error.empty()) first_error = e.what();
    }
  }
  throw Error(first_error.empty() ? std::string("no model family is registered") : first_error);
}

nlohmann::json run_bench(const pipeline::BenchOptions& opt, const std::function<void(const std::string&)>& log) {
  return family_of_model(opt.model).bench(opt, log);
}

nlohmann::json models_json() {
  nlohmann::json out = nlohmann::json::array();
  for (const auto* f : families()) {
    nlohmann::json fam{{"family", f->name()}, {"description", f->description()}, {"variants", nlohmann::json::array()}};
    for (const auto& v : f->variants()) {
      const pipeline::Defaults& d = v.defaults;
      fam["variants"].push_back({{"name", v.name},
                                 {"description", v.description},
                                 {"tasks", v.tasks},
                                 {"demo", v.demo},
                                 {"audio", v.audio},
                                 {"defaults",
                                  {{"frames", d.frames},
                                   {"height", d.height},
                                   {"width", d.width},
                                   {"steps", d.steps},
                                   {"guidance", d.guidance},
                                   {"shift", d.shift},
                                   {"sampler", d.sampler},
                                   {"fps", d.fps},
                                   {"precision", d.precision},
                                   {"negative_prompt", d.negative_prompt}}}});
    }
    fam["presets"] = nlohmann::json::array();
    for (const auto& p : f->sampling_presets())
      fam["presets"].push_back({{"name", p.name}, {"description", p.description}, {"source", p.source},
                                {"steps", p.steps}, {"shift", p.shift}, {"sampler", p.sampler},
                                {"guidance", p.guidance}});
    out.push_back(fam);
  }
  return out;
}

std::string models_text() {
  std::ostringstream o;
  for (const auto* f : families()) {
    o << f->name() << ": " << f->description() << "\n";
    for (const auto& v : f->variants()) {
      const pipeline::Defaults& d = v.defaults;
      std::string tasks;
      for (const auto& t : v.tasks) tasks += (tasks.empty() ? "" : ",") + t;
      o << "  " << v.name << "  [" << tasks << "]" << (v.demo ? " (demo)" : "") << (v.audio ? " (video + audio)" : "")
        << "\n"
        << "    " << v.description << "\n"
        << "    defaults: " << d.width << "x" << d.height << "x" << d.frames << " frames, " << d.steps << " "
        << d.sampler << " steps, guidance " << d.guidance << ", shift " << d.shift << ", " << d.fps << " fps, "
        << d.precision << "\n";
    }
    for (const auto& p : f->sampling_presets())
      o << "  --preset " << p.name << ": " << p.description << " (" << p.steps << " " << p.sampler
        << " steps, shift " << p.shift << ", guidance " << p.guidance << ")\n";
  }
  return o.str();
}

}  // namespace vidax::engine
