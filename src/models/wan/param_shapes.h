// The state_dict names and shapes of the reference Wan 2.1 modules for given
// init args (Wan-Video/Wan2.1 wan/modules/{model,vae,t5}.py): what the demo
// maker writes, checked by tests against key lists made by the reference code.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace vidax::wan {

using ParamShapes = std::vector<std::pair<std::string, Shape>>;

ParamShapes wan_dit_param_shapes(const nlohmann::json& dit);  // WanModel (its model_type's parameters)
ParamShapes wan_vae_param_shapes(const nlohmann::json& vae);  // WanVAE_
ParamShapes umt5_param_shapes(const nlohmann::json& t5);      // T5Encoder (shared_pos false)
ParamShapes clip_visual_param_shapes(const nlohmann::json& clip);  // XLMRobertaCLIP.visual as I2V reads it

}  // namespace vidax::wan
