// The HunyuanVideo 1.0 DiT as the translator sees it: the engine's parameters (names = the
// official checkpoint's state_dict names, mp_rank_00_model_states.pt "module") with shapes from the
// config, and one key map per layout: "original" (identity), "module" (the same names under
// "module.", as mp_rank_00_model_states.pt nests them) and "diffusers"
// (HunyuanVideoTransformer3DModel: the renames and splits of diffusers'
// convert_hunyuan_video_transformer_to_diffusers, read backwards: fused q/k/v and the single
// blocks' linear1 are concatenations of diffusers' separate projections, and the final layer's
// modulation is stored [scale; shift] by diffusers, [shift; scale] by the original).
#pragma once
#include "models/hunyuan/dit_config.h"
#include "translate/component.h"

namespace vidax::hunyuan {

translate::ParamSpec dit_params(const DiTConfig& c);
translate::KeyMap dit_keymap(const std::string& layout);

const translate::Component& dit_component();  // "hunyuanvideo-dit"

}  // namespace vidax::hunyuan
