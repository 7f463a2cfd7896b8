// The HunyuanVideo 1.5 DiT as the translator sees it: the engine's parameters and one key map per
// layout. Engine names are the official state_dict names (HunyuanVideo_1_5_DiffusionTransformer)
// except where 1.5 splits what 1.0 fuses: the double blocks' {img,txt}_attn_q / _k / _v are one
// {img,txt}_attn_qkv, the single blocks' linear1_q / _k / _v / _mlp one linear1 and linear2.fc is
// linear2 (the 1.0 blocks' names, whose modules the engine reuses). Layouts:
//  - "original": the official names (the concatenations and the linear2.fc rename, else identity);
//  - "module": the same under "module." (load_hunyuan_state_dict's load_key);
//  - "diffusers": HunyuanVideo15Transformer3DModel (the 1.0 diffusers renames for the shared
//    modules, context_embedder_2 = byt5_in, image_embedder = vision_in, time_embed, cond_type_embed;
//    norm_out stores the final modulation [scale; shift], the original [shift; scale]).
// Not registered with the translator's component list (detection stays 1.0's); loaded by name.
#pragma once
#include "models/hunyuan15/dit_config.h"
#include "translate/component.h"

namespace vidax::hunyuan15 {

translate::ParamSpec dit_params(const DiTConfig& c);
translate::KeyMap dit_keymap(const std::string& layout);

const translate::Component& dit_component();  // "hunyuanvideo1.5-dit"

}  // namespace vidax::hunyuan15
