#include "pipeline/lora_load.h"

#include <utility>

#include "core/error.h"
#include "translate/source.h"

namespace vidax::pipeline {

nn::Adapters lora_adapters(translate::LoraDeltas deltas) {
  nn::Adapters out;
  for (auto& [name, list] : deltas)
    for (auto& d : list) out[name].push_back(nn::LowRankAdapter{std::move(d.down), std::move(d.up), std::move(d.label)});
  return out;
}

nn::ParamSource params_with_loras(std::map<std::string, Tensor> weights, const std::vector<translate::LoraSpec>& loras,
                                  const translate::Component& comp, const translate::Json& config,
                                  const translate::LoraOptions& lora_opt, const std::string& origin,
                                  const std::string& which, bool pjrt,
                                  const std::function<void(const std::string&)>& on_stage) {
  translate::LoraDeltas runtime;
  const std::vector<translate::LoraPlan> plans = translate::apply_loras(weights, loras, comp, config, lora_opt,
                                                                        [&](const std::string& m) {
                                                                          if (on_stage) on_stage("warning: " + m);
                                                                        },
                                                                        &runtime);
  for (size_t i = 0; i < plans.size(); ++i)
    if (on_stage)
      on_stage("LoRA " + loras[i].path + " (scale " + std::to_string(loras[i].scale) + ") on " + which + ": " +
               std::to_string(plans[i].merged) + " target(s) merged, " + std::to_string(plans[i].kept_runtime) +
               " kept at run time (--lora-mode " + translate::lora_mode_name(lora_opt.mode) + ")");
  VIDAX_CHECK(runtime.empty() || !pjrt, "--device pjrt with LoRAs kept at run time: the lowered step has no LoRA "
                                        "branch; use --lora-mode merge (unquantized weights)");
  nn::ParamSource params = nn::ParamSource::from_map(std::move(weights), origin);
  if (!runtime.empty()) params.attach_adapters(lora_adapters(std::move(runtime)));
  return params;
}

void check_loras(const std::vector<translate::LoraSpec>& loras, const translate::Component& comp,
                 const translate::Json& config) {
  for (const auto& l : loras)
    translate::check_lora(translate::plan_lora(*translate::CheckpointSource::open(l.path), comp, config), {});
}

}  // namespace vidax::pipeline
