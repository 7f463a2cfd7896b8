#include "models/hunyuan/dit_config.h"

#include "core/error.h"
#include "translate/config_fields.h"

namespace vidax::hunyuan {

using translate::has;
using translate::value_or;
using Json = nlohmann::json;

DiTConfig DiTConfig::t2v_720p() {
  DiTConfig c;  // HUNYUAN_VIDEO_CONFIG["HYVideo-T/2-cfgdistill"], in/out 16 (the 884-16c VAE)
  c.in_channels = c.out_channels = 16;
  c.guidance_embed = true;
  return c;
}

bool is_diffusers_config(const Json& j) {
  if (!j.is_object()) return false;
  if (has(j, "_class_name") && j["_class_name"].is_string())
    return j["_class_name"].get<std::string>() == "HunyuanVideoTransformer3DModel";
  return has(j, "num_attention_heads") || has(j, "attention_head_dim") || has(j, "num_single_layers");
}

bool has_official_fields(const Json& j) {
  return has(j, "hidden_size") || has(j, "heads_num") || has(j, "mm_double_blocks_depth");
}

void read_official_fields(const Json& j, DiTFields& c, const std::string& who) {
  if (has(j, "patch_size") && !j["patch_size"].is_null()) {
    if (j["patch_size"].is_number_integer()) {
      const int64_t p = j["patch_size"].get<int64_t>();
      c.patch_size = {p, p, p};  // PatchEmbed's to_2tuple on an int: the same size per axis
    } else {
      const auto p = value_or<std::vector<int64_t>>(j, "patch_size", {});
      VIDAX_CHECK(p.size() == 3, who << ": patch_size must be 3 integers (t, h, w), got " << j["patch_size"].dump());
      c.patch_size = {p[0], p[1], p[2]};
    }
  }
  c.in_channels = value_or<int64_t>(j, "in_channels", c.in_channels);
  c.out_channels = value_or<int64_t>(j, "out_channels", c.in_channels);
  c.hidden_size = value_or<int64_t>(j, "hidden_size", c.hidden_size);
  c.heads_num = value_or<int64_t>(j, "heads_num", c.heads_num);
  c.mlp_width_ratio = value_or<double>(j, "mlp_width_ratio", c.mlp_width_ratio);
  c.mlp_act_type = value_or<std::string>(j, "mlp_act_type", c.mlp_act_type);
  c.mm_double_blocks_depth = value_or<int64_t>(j, "mm_double_blocks_depth", c.mm_double_blocks_depth);
  c.mm_single_blocks_depth = value_or<int64_t>(j, "mm_single_blocks_depth", c.mm_single_blocks_depth);
  c.rope_dim_list = value_or<std::vector<int64_t>>(j, "rope_dim_list", c.rope_dim_list);
  c.qkv_bias = value_or<bool>(j, "qkv_bias", c.qkv_bias);
  c.qk_norm = value_or<bool>(j, "qk_norm", c.qk_norm);
  c.qk_norm_type = value_or<std::string>(j, "qk_norm_type", c.qk_norm_type);
  c.guidance_embed = value_or<bool>(j, "guidance_embed", c.guidance_embed);
  c.text_projection = value_or<std::string>(j, "text_projection", c.text_projection);
  c.use_attention_mask = value_or<bool>(j, "use_attention_mask", c.use_attention_mask);
  c.text_states_dim = value_or<int64_t>(j, "text_states_dim", c.text_states_dim);
  c.text_states_dim_2 = value_or<int64_t>(j, "text_states_dim_2", c.text_states_dim_2);
  c.refiner_depth = value_or<int64_t>(j, "refiner_depth", c.refiner_depth);  // the engine's spelling of depth=2
  c.rope_theta = value_or<double>(j, "rope_theta", c.rope_theta);
}

void read_diffusers_fields(const Json& j, DiTFields& c, const DiffusersDefaults& d, const std::string& who) {
  c.layout = DiTLayout::Diffusers;
  c.heads_num = value_or<int64_t>(j, "num_attention_heads", d.heads);
  c.hidden_size = c.heads_num * value_or<int64_t>(j, "attention_head_dim", d.head_dim);
  c.mm_double_blocks_depth = value_or<int64_t>(j, "num_layers", d.layers);
  c.refiner_depth = value_or<int64_t>(j, "num_refiner_layers", 2);
  c.mlp_width_ratio = value_or<double>(j, "mlp_ratio", 4.0);
  const int64_t p = value_or<int64_t>(j, "patch_size", d.patch), pt = value_or<int64_t>(j, "patch_size_t", 1);
  c.patch_size = {pt, p, p};
  const std::string qk = value_or<std::string>(j, "qk_norm", "rms_norm");
  VIDAX_CHECK(qk == "rms_norm", who << ": diffusers qk_norm '" << qk
                                    << "' is not supported (rms_norm, as every published checkpoint)");
  c.qk_norm = true;
  c.qk_norm_type = "rms";
  c.text_states_dim = value_or<int64_t>(j, "text_embed_dim", d.text_embed_dim);
  c.rope_theta = value_or<double>(j, "rope_theta", 256.0);
  c.rope_dim_list = value_or<std::vector<int64_t>>(j, "rope_axes_dim", {16, 56, 56});
  // Fixed in diffusers' blocks: GELU-tanh MLPs, biased projections, the token refiner with its mask.
  c.mlp_act_type = "gelu_tanh";
  c.qkv_bias = true;
  c.text_projection = "single_refiner";
  c.use_attention_mask = true;
}

namespace {

DiTConfig from_diffusers(const Json& j) {
  // HunyuanVideoTransformer3DModel.__init__ defaults; `out_channels or in_channels`.
  DiTConfig c;
  read_diffusers_fields(j, c, {.heads = 24, .head_dim = 128, .layers = 20, .patch = 2, .text_embed_dim = 4096}, "HunyuanVideo DiT config");
  c.in_channels = value_or<int64_t>(j, "in_channels", 16);
  // Absent: the default 16; null (or 0): in_channels.
  c.out_channels = has(j, "out_channels") && j["out_channels"].is_null() ? c.in_channels
                                                                         : value_or<int64_t>(j, "out_channels", 16);
  if (c.out_channels == 0) c.out_channels = c.in_channels;
  c.mm_single_blocks_depth = value_or<int64_t>(j, "num_single_layers", 40);
  c.guidance_embed = value_or<bool>(j, "guidance_embeds", true);
  c.text_states_dim_2 = value_or<int64_t>(j, "pooled_projection_dim", 768);
  // latent_concat changes only in_channels (the image latent and mask on channels); token_replace
  // adds a second modulation per block (HunyuanVideoTokenReplace*), which this engine does not build.
  const std::string image = value_or<std::string>(j, "image_condition_type", "");
  VIDAX_CHECK(image.empty() || image == "latent_concat",
              "HunyuanVideo DiT config: image_condition_type '" << image
                                                                << "' is not supported (null or latent_concat)");
  return c;
}

}  // namespace

DiTConfig DiTConfig::from_json(const Json& j) {
  VIDAX_CHECK(j.is_object(), "HunyuanVideo DiT config must be a JSON object, got " << j.dump());
  DiTConfig c;
  if (is_diffusers_config(j)) {
    c = from_diffusers(j);
  } else {
    VIDAX_CHECK(has_official_fields(j),
                "not a HunyuanVideo DiT config (neither HYVideoDiffusionTransformer's init args nor a "
                "HunyuanVideoTransformer3DModel config): "
                    << j.dump());
    read_official_fields(j, c, "HunyuanVideo DiT config");  // HYVideoDiffusionTransformer's defaults
  }
  c.validate();
  return c;
}

void validate_fields(const DiTFields& c) {
  VIDAX_CHECK(c.hidden_size > 0 && c.heads_num > 0 && c.hidden_size % c.heads_num == 0,
              "HunyuanVideo DiT config: hidden_size " << c.hidden_size << " must be divisible by heads_num " << c.heads_num);
  int64_t rope = 0;
  for (int64_t d : c.rope_dim_list) {
    VIDAX_CHECK(d > 0 && d % 2 == 0, "HunyuanVideo DiT config: rope_dim_list entries must be even and positive, got "
                                         << Json(c.rope_dim_list).dump());
    rope += d;
  }
  VIDAX_CHECK(c.rope_dim_list.size() == 3 && rope == c.head_dim(),
              "HunyuanVideo DiT config: rope_dim_list " << Json(c.rope_dim_list).dump()
                                                         << " must be 3 widths summing to the head dim " << c.head_dim());
  for (int64_t p : c.patch_size) VIDAX_CHECK(p > 0, "HunyuanVideo DiT config: patch_size entries must be positive");
  VIDAX_CHECK(c.mlp_act_type == "gelu_tanh" || c.mlp_act_type == "gelu" || c.mlp_act_type == "relu" || c.mlp_act_type == "silu",
              "HunyuanVideo DiT config: mlp_act_type '" << c.mlp_act_type << "' (gelu_tanh, gelu, relu or silu)");
  VIDAX_CHECK(c.qk_norm_type == "rms" || c.qk_norm_type == "layer",
              "HunyuanVideo DiT config: qk_norm_type '" << c.qk_norm_type << "' (rms or layer)");
  VIDAX_CHECK(c.text_projection == "single_refiner" || c.text_projection == "linear",
              "HunyuanVideo DiT config: text_projection '" << c.text_projection << "' (single_refiner or linear)");
  VIDAX_CHECK(c.mlp_width_ratio > 0 && c.mlp_hidden() > 0, "HunyuanVideo DiT config: mlp_width_ratio " << c.mlp_width_ratio);
  VIDAX_CHECK(c.in_channels > 0 && c.out_channels > 0 && c.text_states_dim > 0 && c.text_states_dim_2 > 0 &&
                  c.mm_double_blocks_depth >= 0 && c.mm_single_blocks_depth >= 0 && c.refiner_depth >= 0,
              "HunyuanVideo DiT config: channel counts and widths must be positive, depths >= 0");
}

Json official_fields_json(const DiTFields& c) {
  return Json{{"patch_size", c.patch_size},
              {"in_channels", c.in_channels},
              {"out_channels", c.out_channels},
              {"hidden_size", c.hidden_size},
              {"heads_num", c.heads_num},
              {"mlp_width_ratio", c.mlp_width_ratio},
              {"mlp_act_type", c.mlp_act_type},
              {"mm_double_blocks_depth", c.mm_double_blocks_depth},
              {"mm_single_blocks_depth", c.mm_single_blocks_depth},
              {"rope_dim_list", c.rope_dim_list},
              {"qkv_bias", c.qkv_bias},
              {"qk_norm", c.qk_norm},
              {"qk_norm_type", c.qk_norm_type},
              {"guidance_embed", c.guidance_embed},
              {"text_projection", c.text_projection},
              {"use_attention_mask", c.use_attention_mask},
              {"text_states_dim", c.text_states_dim},
              {"text_states_dim_2", c.text_states_dim_2},
              {"refiner_depth", c.refiner_depth},
              {"rope_theta", c.rope_theta}};
}

}  // namespace vidax::hunyuan
