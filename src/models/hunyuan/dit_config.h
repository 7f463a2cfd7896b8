// The HunyuanVideo 1.0 DiT's configuration (official HYVideoDiffusionTransformer,
// hyvideo/modules/models.py, Tencent/HunyuanVideo fa14b00), one parser for both spellings:
//  - the official init args (patch_size, in_channels, out_channels, hidden_size, heads_num,
//    mlp_width_ratio, mlp_act_type, mm_double_blocks_depth, mm_single_blocks_depth,
//    rope_dim_list, qkv_bias, qk_norm, qk_norm_type, guidance_embed, text_projection,
//    use_attention_mask) plus the text encoders' widths the constructor reads from `args`
//    (text_states_dim, text_states_dim_2);
//  - diffusers' HunyuanVideoTransformer3DModel config (num_attention_heads, attention_head_dim,
//    num_layers, num_single_layers, num_refiner_layers, mlp_ratio, patch_size, patch_size_t,
//    qk_norm, guidance_embeds, text_embed_dim, pooled_projection_dim, rope_theta, rope_axes_dim,
//    image_condition_type).
// Each spelling takes its own class's defaults for a field it leaves out.
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vidax::hunyuan {

// Which spelling a config (and so its checkpoint's names) came in.
enum class DiTLayout { Original, Diffusers };

// The fields the 1.0 and 1.5 DiTs share: the same init args of the official classes (1.0's
// HYVideoDiffusionTransformer, 1.5's HunyuanVideo_1_5_DiffusionTransformer), the same names and
// defaults, the same rules. Each DiT's config derives from it (1.5's in hunyuan15/dit_config.h),
// so each of these facts lives here once: the field, its default, its parsing (official and
// diffusers spelling), its check and its JSON.
struct DiTFields {
  std::array<int64_t, 3> patch_size{1, 2, 2};  // (t, h, w)
  int64_t in_channels = 4, out_channels = 4;   // out_channels: null = in_channels
  int64_t hidden_size = 3072, heads_num = 24;
  double mlp_width_ratio = 4.0;
  std::string mlp_act_type = "gelu_tanh";  // gelu_tanh | gelu | relu | silu
  int64_t mm_double_blocks_depth = 20, mm_single_blocks_depth = 40;
  std::vector<int64_t> rope_dim_list{16, 56, 56};  // (t, h, w) widths, summing to the head dim
  bool qkv_bias = true;                            // double blocks' qkv and attention projections
  bool qk_norm = true;
  std::string qk_norm_type = "rms";  // rms | layer (per head, affine, eps 1e-6)
  bool guidance_embed = false;
  std::string text_projection = "single_refiner";  // single_refiner | linear
  bool use_attention_mask = true;                  // the token refiner's mask (the joint attention always masks)
  int64_t text_states_dim = 4096, text_states_dim_2 = 768;
  // Not init args of the official 1.0 class: SingleTokenRefiner(depth=2) and the rope theta of
  // hyvideo/config.py (--rope-theta 256); diffusers' num_refiner_layers and rope_theta.
  int64_t refiner_depth = 2;
  double rope_theta = 256.0;
  DiTLayout layout = DiTLayout::Original;

  int64_t head_dim() const { return hidden_size / heads_num; }
  int64_t mlp_hidden() const { return static_cast<int64_t>(static_cast<double>(hidden_size) * mlp_width_ratio); }
  int64_t patch_volume() const { return patch_size[0] * patch_size[1] * patch_size[2]; }
  bool operator==(const DiTFields&) const = default;
};

// True when j names one of the init args an official config always has (hidden_size, heads_num,
// mm_double_blocks_depth): what tells an official config from another JSON object.
bool has_official_fields(const nlohmann::json& j);
// The official spelling of the shared fields (each absent one keeps its default; patch_size an
// integer or 3 integers; out_channels absent = in_channels); throws "<who>: ..." on a bad value.
void read_official_fields(const nlohmann::json& j, DiTFields& c, const std::string& who);
// The diffusers spelling of what the two diffusers classes (HunyuanVideoTransformer3DModel,
// HunyuanVideo15Transformer3DModel) spell alike, each with its own class's defaults; the fields
// their blocks fix (GELU-tanh, biased projections, the masked token refiner) set.
struct DiffusersDefaults {
  int64_t heads, head_dim, layers, patch, text_embed_dim;
};
void read_diffusers_fields(const nlohmann::json& j, DiTFields& c, const DiffusersDefaults& d, const std::string& who);
// The shared fields in the official spelling.
nlohmann::json official_fields_json(const DiTFields& c);
// hidden_size % heads_num, sum(rope_dim_list) == head dim, the named options' values, positive widths.
void validate_fields(const DiTFields& c);

struct DiTConfig : DiTFields {
  // HYVideo-T/2-cfgdistill, the published T2V 720p model (16 latent channels, guidance_in).
  static DiTConfig t2v_720p();
  // Either spelling (is_diffusers_config decides); throws naming a field of the wrong type or
  // an unsupported value, and checks the result (validate()).
  static DiTConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const { return official_fields_json(*this); }  // the official spelling
  void validate() const { validate_fields(*this); }
  bool operator==(const DiTConfig&) const = default;
};

// True for a diffusers HunyuanVideoTransformer3DModel config (its class name, else its field names).
bool is_diffusers_config(const nlohmann::json& j);

}  // namespace vidax::hunyuan
