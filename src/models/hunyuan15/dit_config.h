// The HunyuanVideo 1.5 DiT's configuration (official HunyuanVideo_1_5_DiffusionTransformer,
// hyvideo/models/transformers/hunyuanvideo_1_5_transformer.py, Tencent-Hunyuan/HunyuanVideo-1.5),
// one parser for both spellings:
//  - the official init args (patch_size, in_channels, concat_condition, out_channels, hidden_size,
//    heads_num, mlp_width_ratio, mlp_act_type, mm_double_blocks_depth, mm_single_blocks_depth,
//    rope_dim_list, qkv_bias, qk_norm, qk_norm_type, guidance_embed, use_meanflow,
//    text_projection, use_attention_mask, text_states_dim, text_states_dim_2, text_pool_type,
//    rope_theta, attn_mode, glyph_byT5_v2, vision_projection, vision_states_dim,
//    is_reshape_temporal_channels, use_cond_type_embedding; attn_param, ideal_resolution and
//    ideal_task are read and ignored: they change no dense forward);
//  - diffusers' HunyuanVideo15Transformer3DModel config (in_channels = the embedded channels,
//    out_channels, num_attention_heads, attention_head_dim, num_layers, num_refiner_layers,
//    mlp_ratio, patch_size, patch_size_t, qk_norm, text_embed_dim, text_embed_2_dim,
//    image_embed_dim, rope_theta, rope_axes_dim, use_meanflow; target_size and task_type ignored).
//    diffusers' class always has the ByT5 mapper, the image projection and the condition-type
//    embedding, double-stream blocks only, no pooled-text or guidance embedding.
// Each spelling takes its own class's defaults for a field it leaves out.
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "models/hunyuan/dit_config.h"

namespace vidax::hunyuan15 {

using hunyuan::DiTLayout;

// The fields 1.0's class also takes (patch_size, in_channels, out_channels, hidden_size,
// heads_num, mlp_width_ratio, mlp_act_type, the depths, rope_dim_list, qkv_bias, qk_norm(_type),
// guidance_embed, text_projection, use_attention_mask, text_states_dim(_2), refiner_depth,
// rope_theta, layout) are hunyuan::DiTFields, with the same defaults; in_channels is the latent's.
struct DiTConfig : hunyuan::DiTFields {
  // PatchEmbed's concat mode: x carries [latent, condition latent, mask] = 2 * in + 1 channels
  // (in + in / 2 + 1 with is_reshape_temporal_channels).
  bool concat_condition = true, is_reshape_temporal_channels = false;
  bool use_meanflow = false;  // time_r_in: a second timestep embedding (timestep_r)
  std::optional<std::string> text_pool_type;  // non-null: vector_in embeds text_states_2
  std::string attn_mode = "flash";  // dense modes only (flash*, torch, sageattn); flex-block-attn refused
  bool glyph_byT5_v2 = false;       // byt5_in: ByT5Mapper(1472 -> 2048 -> 2048 -> hidden)
  std::string vision_projection = "none";  // none | linear (vision_in)
  int64_t vision_states_dim = 1280;
  bool use_cond_type_embedding = false;  // nn.Embedding(3, hidden): text 0, byt5 1, vision 2

  // The published 480p / 720p T2V and I2V transformers (hunyuanvideo-1.5 transformer/*/config.json).
  static DiTConfig published();
  static DiTConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;  // the official spelling
  void validate() const;

  // The channels of hidden_states (what img_in.proj takes).
  int64_t embed_channels() const {
    if (!concat_condition) return in_channels;
    return is_reshape_temporal_channels ? in_channels + in_channels / 2 + 1 : 2 * in_channels + 1;
  }
  // The 1.0 DiT's config with the fields its blocks read (the double / single-stream blocks and
  // the token refiner are the same modules in 1.5, their q/k/v projections fused by the key map):
  // the shared fields, in_channels the embedded channels.
  hunyuan::DiTConfig blocks_config() const;
  bool operator==(const DiTConfig&) const = default;
};

// The ByT5Mapper's widths, fixed in the official class (in_dim 1472 = ByT5-small's d_model).
inline constexpr int64_t kByT5InDim = 1472, kByT5HiddenDim = 2048;

// True for a diffusers HunyuanVideo15Transformer3DModel config.
bool is_diffusers_config(const nlohmann::json& j);
// True for either spelling of this model's config (an official one is told from 1.0's by a field
// 1.5 alone has).
bool is_config(const nlohmann::json& j);

}  // namespace vidax::hunyuan15
