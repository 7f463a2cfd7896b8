// The samplers `vidax generate --sampler` offers, by their user-facing names
// (the official generate.py's --sample_solver names plus euler), over src/sched.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "sched/scheduler.h"

namespace vidax::pipeline {

// "unipc" -> flow_unipc (official default), "dpm++" -> flow_dpmpp (official
// alternative), "euler" -> flow_euler (diffusers' FlowMatchEulerDiscreteScheduler),
// "lightx2v" -> flow_step_distill (LightX2V's step-distill sampler, docs/lora.md),
// "flow_match_euler" -> flow_match_discrete (HunyuanVideo's FlowMatchDiscreteScheduler, reverse).
const std::vector<std::string>& sampler_names();
// The position of `name` in sampler_names(); throws listing them on an unknown name.
size_t sampler_index(const std::string& name);
// Throws listing sampler_names() on an unknown name.
std::unique_ptr<sched::Scheduler> make_sampler(const std::string& name, int64_t steps, double shift);


}  // namespace vidax::pipeline
