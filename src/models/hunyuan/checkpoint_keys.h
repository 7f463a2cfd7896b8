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

// What the 1.0 and 1.5 DiTs name alike (1.5's checkpoint_keys.cpp builds on these), each fact once:
// the engine parameters of one part of the model, added to a spec in the official order ...
void add_text_in_params(translate::ParamSpec& s, const DiTFields& c);   // txt_in: projection or refiner
void add_block_params(translate::ParamSpec& s, const DiTFields& c);     // double_blocks.*, single_blocks.*
void add_final_layer_params(translate::ParamSpec& s, const DiTFields& c);  // final_layer.*
void add_timestep_embedder_params(translate::ParamSpec& s, const std::string& name, int64_t hidden);  // <name>.mlp.{0,2}
// ... and the diffusers rules of the modules both diffusers classes spell alike: x_embedder,
// context_embedder (the token refiner, its q/k/v fused), transformer_blocks (q/k/v fused),
// proj_out, norm_out (stored [scale; shift], the original [shift; scale]).
void add_diffusers_shared_rules(std::vector<translate::Rule>& rules);
// ... and what a checkpoint's shapes say of the shared fields (hidden size, in_channels and patch
// from img_in, text_states_dim, the depths, guidance_embed, the MLP ratio, the head count from the
// q norm, out_channels); a field whose tensor is absent keeps its value.
void infer_shared_fields(const translate::TensorSource& src, const translate::KeyMap& m, DiTFields& c);

const translate::Component& dit_component();  // "hunyuanvideo-dit"

}  // namespace vidax::hunyuan
