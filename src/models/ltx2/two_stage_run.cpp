// The two-stage pipelines' files in a family run (two_stage_run.h).
#include "models/ltx2/two_stage_run.h"

#include <algorithm>
#include <filesystem>
#include <vector>

#include "core/error.h"

namespace vidax::ltx2 {

namespace fs = std::filesystem;

namespace {

// DIR/<official> when it is there, else the one DIR/*<pattern>*.safetensors; "" when none.
std::string find_in(const std::string& dir, const char* official, const char* pattern, const char* flag) {
  std::error_code ec;
  if (dir.empty() || !fs::is_directory(dir, ec)) return "";
  if (fs::is_regular_file(fs::path(dir) / official, ec)) return (fs::path(dir) / official).string();
  std::vector<std::string> found;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    const std::string n = e.path().filename().string();
    if (e.is_regular_file() && e.path().extension() == ".safetensors" && n.find(pattern) != std::string::npos)
      found.push_back(e.path().string());
  }
  std::sort(found.begin(), found.end());
  if (found.size() > 1) {
    std::string names;
    for (const auto& f : found) names += "\n  " + f;
    throw Error(msg() << "LTX-2: " << dir << " holds " << found.size() << " files named *" << pattern
                      << "*; keep one or name it with " << flag << ":" << names);
  }
  return found.empty() ? "" : found[0];
}

}  // namespace

std::shared_ptr<TwoStageFiles> find_two_stage_files(const std::string& dir, const std::string& upsampler_flag,
                                                    const std::string& lora_flag) {
  auto f = std::make_shared<TwoStageFiles>();
  f->dir = dir;
  std::error_code ec;
  if (!upsampler_flag.empty()) {
    VIDAX_CHECK(fs::is_regular_file(upsampler_flag, ec),
                "--spatial-upsampler-path " << upsampler_flag << ": no such file");
    f->upsampler = upsampler_flag;
  } else {
    f->upsampler = find_in(dir, kSpatialUpsamplerFile, "spatial-upscaler-x2", "--spatial-upsampler-path");
  }
  if (!lora_flag.empty()) {
    const translate::LoraSpec s = translate::parse_lora_spec(lora_flag);
    VIDAX_CHECK(fs::is_regular_file(s.path, ec), "--distilled-lora " << lora_flag << ": no file " << s.path);
    f->lora = s;
  } else if (const std::string p = find_in(dir, kDistilledLoraFile, "distilled-lora", "--distilled-lora"); !p.empty()) {
    f->lora = translate::LoraSpec{p, 1.0};  // DEFAULT_LORA_STRENGTH
  }
  return f;
}

std::shared_ptr<const LatentUpsampler> two_stage_upsampler(TwoStageFiles& f) {
  std::lock_guard<std::mutex> lock(f.mu);
  if (f.loaded_upsampler) return f.loaded_upsampler;
  VIDAX_CHECK(!f.upsampler.empty(), "LTX-2 two-stage: no spatial upsampler: put "
                                        << kSpatialUpsamplerFile << " in " << (f.dir.empty() ? "--weights" : f.dir)
                                        << " (MODELS-LTX-2.3.md) or give --spatial-upsampler-path FILE");
  f.loaded_upsampler = load_upsampler_file(f.upsampler);
  return f.loaded_upsampler;
}

std::shared_ptr<const nn::Adapters> two_stage_lora(TwoStageFiles& f, const std::map<std::string, Tensor>& dit_params,
                                                   const translate::Json& dit_config,
                                                   const std::vector<std::string>& linear_names) {
  std::lock_guard<std::mutex> lock(f.mu);
  if (f.loaded_lora) return f.loaded_lora;
  VIDAX_CHECK(f.lora, "LTX-2 two-stage: no distilled LoRA for stage 2: put "
                          << kDistilledLoraFile << " in " << (f.dir.empty() ? "--weights" : f.dir)
                          << " (MODELS-LTX-2.3.md) or give --distilled-lora FILE[:STRENGTH]");
  f.loaded_lora = std::make_shared<const nn::Adapters>(lora_as_adapters(dit_params, dit_config, *f.lora, linear_names));
  return f.loaded_lora;
}

}  // namespace vidax::ltx2
