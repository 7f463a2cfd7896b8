#include "models/wan/param_shapes.h"

#include "models/wan/checkpoint_keys.h"
#include "models/wan/clip.h"
#include "text/umt5_keys.h"

using nlohmann::json;

namespace vidax::wan {

namespace {

// The translator's parameter specs are the one list of each module's state_dict.
ParamShapes shapes_of(const translate::ParamSpec& spec) {
  ParamShapes p;
  p.reserve(spec.params.size());
  for (const auto& info : spec.params) p.push_back({info.name, info.shape});
  return p;
}

}  // namespace

ParamShapes wan_dit_param_shapes(const json& c) {
  return shapes_of(translate::wan::dit_params(translate::wan::DitConfig::from_json(c)));
}

ParamShapes wan_vae_param_shapes(const json& c) {
  return shapes_of(translate::wan::vae_params(translate::wan::VaeConfig::from_json(c)));
}

ParamShapes umt5_param_shapes(const json& c) {
  return shapes_of(translate::t5::t5_params(translate::t5::T5Config::from_json(c)));
}

ParamShapes clip_visual_param_shapes(const json& c) { return shapes_of(clip_visual_params(ClipVisionConfig::from_json(c))); }

}  // namespace vidax::wan
