#include "pipeline/family.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"

namespace vidax::pipeline {

std::string Family::detect_parts(const std::string& weights_dir, const PartFiles& files) const {
  return files.any() ? "" : detect(weights_dir);
}

Variant Family::resolve_parts(const std::string& weights_dir, const std::string& model, const PartFiles& files) const {
  VIDAX_CHECK(!files.any(), "the " << name() << " family does not take parts as single files yet "
                                   "(--diffusion-model, --vae, --text-encoder, --tokenizer)");
  return resolve(weights_dir, model);
}

PartsChecked Family::check_part_files(const PartFiles&) const {
  throw Error(msg() << "the " << name() << " family does not take parts as single files yet "
                                           "(--diffusion-model, --vae, --text-encoder)");
}

nlohmann::json Family::make_demo(const std::string& variant, const DemoOptions&) const {
  throw Error(msg() << "the " << name() << " family has no demo checkpoint (asked for " << variant << ")");
}

nlohmann::json Family::bench(const BenchOptions&, const std::function<void(const std::string&)>&) const {
  throw Error(msg() << "vidax bench does not know the " << name() << " family yet");
}

std::string demo_model_named_in(const std::string& dir) {
  const std::filesystem::path p = std::filesystem::path(dir) / "vidax_model.json";
  std::error_code ec;
  if (!std::filesystem::is_regular_file(p, ec)) return "";
  std::ifstream is(p);
  const nlohmann::json j = nlohmann::json::parse(is, nullptr, /*allow_exceptions=*/false);
  VIDAX_CHECK(!j.is_discarded(), p.string() << ": malformed JSON");
  return j.is_object() && j.contains("model") && j["model"].is_string() ? j["model"].get<std::string>() : "";
}

Defaults with_preset(Defaults d, const SamplingPreset& p) {
  d.steps = p.steps;
  d.shift = p.shift;
  d.sampler = p.sampler;
  d.guidance = p.guidance;
  d.guidance_scales.clear();  // the preset's one scale on every step
  return d;
}

const std::vector<SamplingPreset>& Family::sampling_presets() const {
  static const std::vector<SamplingPreset> none;
  return none;
}

const SamplingPreset& Family::sampling_preset(const std::string& n) const {
  std::string known;
  for (const auto& p : sampling_presets()) {
    if (p.name == n) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw Error(msg() << "--preset " << n << ": unknown for the " << name() << " family"
                    << (known.empty() ? std::string(" (it has none)") : "; choose one of " + known));
}

const Variant& Family::variant(const std::string& n) const {
  std::string known;
  for (const auto& v : variants()) {
    if (v.name == n) return v;
    known += (known.empty() ? "" : ", ") + v.name;
  }
  throw Error(msg() << "unknown " << name() << " model '" << n << "'; known: " << known);
}

bool Family::has_variant(const std::string& n) const {
  for (const auto& v : variants())
    if (v.name == n) return true;
  return false;
}

}  // namespace vidax::pipeline
