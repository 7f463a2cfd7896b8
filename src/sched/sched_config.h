// SchedulerOptions from a sched.* golden file's config (DESIGN.md par. 4):
// the reference scheduler's own config fields plus num_inference_steps, shift
// (the sampling shift) and, for stochastic Euler, generator_seed. Options the
// engine does not implement (thresholding, dynamic shifting, karras sigmas,
// other prediction types, ...) are rejected with the field named.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "sched/scheduler.h"

namespace vidax::sched {

// kind: "sched.flow_unipc" | "sched.flow_dpmpp" | "sched.flow_euler" | "sched.flow_step_distill" |
// "sched.flow_match_discrete" (HunyuanVideo: FlowMatchDiscreteScheduler's init args, `reverse`
// default true, `solver` "euler" only).
SchedulerOptions options_from_config(const std::string& kind, const nlohmann::json& config);

}  // namespace vidax::sched
