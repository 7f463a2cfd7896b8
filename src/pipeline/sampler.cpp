#include "pipeline/sampler.h"

#include "core/error.h"

namespace vidax::pipeline {

namespace {
struct Entry {
  const char* user;
  const char* sched;
};
// User name -> src/sched scheduler name: the one list of the samplers `--sampler` offers.
constexpr Entry kSamplers[] = {
    {"unipc", "flow_unipc"}, {"dpm++", "flow_dpmpp"}, {"euler", "flow_euler"}, {"lightx2v", "flow_step_distill"}};
}  // namespace

const std::vector<std::string>& sampler_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& e : kSamplers) v.push_back(e.user);
    return v;
  }();
  return names;
}

size_t sampler_index(const std::string& name) {
  for (size_t i = 0; i < std::size(kSamplers); ++i)
    if (name == kSamplers[i].user) return i;
  std::string names;
  for (const auto& n : sampler_names()) names += (names.empty() ? "" : ", ") + n;
  throw Error(msg() << "--sampler " << name << ": unknown; choose one of " << names);
}

std::unique_ptr<sched::Scheduler> make_sampler(const std::string& name, int64_t steps, double shift) {
  sched::SchedulerOptions o;
  o.name = kSamplers[sampler_index(name)].sched;
  o.steps = steps;
  o.shift = shift;
  return sched::make_scheduler(o);
}

const std::vector<SamplingPreset>& sampling_presets() {
  static const std::vector<SamplingPreset> presets = {
      {"lightx2v-4step", "wan",
       "LightX2V's Wan2.1 StepDistill-CfgDistill models and LoRAs: 4 fixed steps, no CFG",
       "ModelTC/LightX2V configs/distill/wan21/wan_t2v_distill_lora_4step_cfg.json (infer_steps 4, "
       "denoising_step_list [1000, 750, 500, 250], sample_shift 5, enable_cfg false) with "
       "lightx2v/models/schedulers/wan/step_distill/scheduler.py",
       4, 5.0, "lightx2v", 1.0},
  };
  return presets;
}

const SamplingPreset& sampling_preset(const std::string& name) {
  for (const auto& p : sampling_presets())
    if (p.name == name) return p;
  std::string names;
  for (const auto& p : sampling_presets()) names += (names.empty() ? "" : ", ") + p.name;
  throw Error(msg() << "--preset " << name << ": unknown; choose one of " << names);
}

}  // namespace vidax::pipeline
