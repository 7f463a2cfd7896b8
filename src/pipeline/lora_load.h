// LoRAs on a denoiser's parameters at load (docs/lora.md): what `vidax generate --lora FILE[:SCALE]
// --lora-mode merge|runtime|auto --lora-allow-unmatched` does in every family that takes them, so
// that the families share the messages and the report of what went where.
#pragma once
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "nn/params.h"
#include "translate/component.h"
#include "translate/lora.h"

namespace vidax::pipeline {

// The runtime LoRAs (translate::apply_loras, below nn) as the Linears' adapters (nn::LowRankAdapter).
nn::Adapters lora_adapters(translate::LoraDeltas deltas);

// The parameters of one denoiser (`weights`: engine name -> tensor, `comp`'s names for `config`)
// with its LoRAs: each merged into the weights (fp32 sums, one cast back to each parameter's stored
// dtype) or kept beside them as runtime adapters, as lora_opt.mode says. `which` names the denoiser
// in messages ("the DiT", "the high-noise DiT"); on_stage is told, per LoRA, where it went and how
// ("LoRA F (scale S) on the DiT: N target(s) merged, M kept at run time (--lora-mode MODE)") and the
// unmatched keys of an allowed file ("warning: ..."). pjrt: runtime LoRAs are refused (the lowered
// step has no LoRA branch). `origin` labels the parameters in errors.
nn::ParamSource params_with_loras(std::map<std::string, Tensor> weights, const std::vector<translate::LoraSpec>& loras,
                                  const translate::Component& comp, const translate::Json& config,
                                  const translate::LoraOptions& lora_opt, const std::string& origin,
                                  const std::string& which, bool pjrt,
                                  const std::function<void(const std::string&)>& on_stage);

// Parts::check_loras for one denoiser: each file planned against `comp` for `config` and checked
// strictly (keys, shapes); throws naming the problem. Nothing is merged.
void check_loras(const std::vector<translate::LoraSpec>& loras, const translate::Component& comp,
                 const translate::Json& config);

}  // namespace vidax::pipeline
