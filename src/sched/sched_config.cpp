#include "sched/sched_config.h"

#include "core/error.h"

namespace vidax::sched {
namespace {

// A config field that must have the one value the engine implements (when present).
struct Required {
  const char* kind;  // "" = every kind
  const char* field;
  nlohmann::json value;
};

const Required kRequired[] = {
    {"", "use_dynamic_shifting", false},
    {"", "thresholding", false},
    {"", "use_karras_sigmas", false},
    {"", "use_exponential_sigmas", false},
    {"", "use_beta_sigmas", false},
    {"", "invert_sigmas", false},
    {"sched.flow_unipc", "prediction_type", "flow_prediction"},
    {"sched.flow_unipc", "predict_x0", true},
    {"sched.flow_unipc", "final_sigmas_type", "zero"},
    {"sched.flow_unipc", "timestep_spacing", "linspace"},
    {"sched.flow_unipc", "steps_offset", 0},
    {"sched.flow_dpmpp", "prediction_type", "flow_prediction"},
    {"sched.flow_dpmpp", "algorithm_type", "dpmsolver++"},
    {"sched.flow_dpmpp", "solver_type", "midpoint"},
    {"sched.flow_dpmpp", "final_sigmas_type", "zero"},
    {"sched.flow_dpmpp", "euler_at_final", false},
    {"sched.flow_dpmpp", "variance_type", nullptr},
    {"sched.flow_euler", "shift_terminal", nullptr},
    {"sched.flow_match_discrete", "solver", "euler"},  // the only solver the reference has
};

}  // namespace

SchedulerOptions options_from_config(const std::string& kind, const nlohmann::json& cfg) {
  VIDAX_CHECK(kind == "sched.flow_unipc" || kind == "sched.flow_dpmpp" || kind == "sched.flow_euler" ||
                  kind == "sched.flow_step_distill" || kind == "sched.flow_match_discrete",
              "unknown scheduler kind '" << kind << "'");
  for (const auto& r : kRequired) {
    if (*r.kind && kind != r.kind) continue;
    if (cfg.contains(r.field) && cfg.at(r.field) != r.value)
      throw Error(msg() << kind << ": config " << r.field << " = " << cfg.at(r.field).dump()
                        << " is not implemented (expected " << r.value.dump() << ")");
  }
  for (const char* f : {"num_inference_steps", "shift"})
    VIDAX_CHECK(cfg.contains(f), kind << ": config lacks \"" << f << "\"");

  SchedulerOptions o;
  o.name = kind.substr(kind.find('.') + 1);
  o.steps = cfg.at("num_inference_steps").get<int64_t>();
  o.shift = cfg.at("shift").get<double>();
  o.num_train_timesteps = cfg.value("num_train_timesteps", int64_t(1000));
  o.solver_order = cfg.value("solver_order", 2);
  o.lower_order_final = cfg.value("lower_order_final", true);
  if (kind == "sched.flow_unipc") {
    o.unipc_solver_type = cfg.value("solver_type", std::string("bh2"));
    if (cfg.contains("disable_corrector")) o.disable_corrector = cfg.at("disable_corrector").get<std::vector<int64_t>>();
    // diffusers' UniPCMultistepScheduler config (WanPipeline): flow sigmas, flow_shift.
    if (cfg.value("use_flow_sigmas", false)) {
      o.unipc_sigmas = "diffusers";
      if (cfg.contains("flow_shift"))
        VIDAX_CHECK(cfg.at("flow_shift").get<double>() == o.shift,
                    kind << ": config shift " << o.shift << " and flow_shift " << cfg.at("flow_shift").dump() << " differ");
    } else {
      VIDAX_CHECK(!cfg.contains("flow_shift"),
                  kind << ": diffusers UniPC config without use_flow_sigmas (a non-flow model) is not implemented");
    }
    VIDAX_CHECK(!cfg.contains("solver_p") || cfg.at("solver_p").is_null(), kind << ": solver_p is not implemented");
  }
  if (kind == "sched.flow_step_distill") {
    if (cfg.contains("denoising_step_list"))
      o.denoising_step_list = cfg.at("denoising_step_list").get<std::vector<int64_t>>();
    VIDAX_CHECK(cfg.contains("generator_seed"), kind << ": the re-noising needs config generator_seed");
  }
  if (kind == "sched.flow_match_discrete") {
    o.flow_reverse = cfg.value("reverse", true);  // the class's default
    // n_tokens is accepted and unused, as in the reference (set_timesteps ignores it).
  }
  if (kind == "sched.flow_euler") {
    o.stochastic_sampling = cfg.value("stochastic_sampling", false);
    if (o.stochastic_sampling)
      VIDAX_CHECK(cfg.contains("generator_seed"), kind << ": stochastic_sampling needs config generator_seed");
  }
  return o;
}

}  // namespace vidax::sched
