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

namespace {

DiTConfig from_diffusers(const Json& j) {
  // HunyuanVideoTransformer3DModel.__init__ defaults; `out_channels or in_channels`.
  DiTConfig c;
  c.layout = DiTLayout::Diffusers;
  c.in_channels = value_or<int64_t>(j, "in_channels", 16);
  // Absent: the default 16; null (or 0): in_channels.
  c.out_channels = has(j, "out_channels") && j["out_channels"].is_null() ? c.in_channels
                                                                         : value_or<int64_t>(j, "out_channels", 16);
  if (c.out_channels == 0) c.out_channels = c.in_channels;
  c.heads_num = value_or<int64_t>(j, "num_attention_heads", 24);
  c.hidden_size = c.heads_num * value_or<int64_t>(j, "attention_head_dim", 128);
  c.mm_double_blocks_depth = value_or<int64_t>(j, "num_layers", 20);
  c.mm_single_blocks_depth = value_or<int64_t>(j, "num_single_layers", 40);
  c.refiner_depth = value_or<int64_t>(j, "num_refiner_layers", 2);
  c.mlp_width_ratio = value_or<double>(j, "mlp_ratio", 4.0);
  const int64_t p = value_or<int64_t>(j, "patch_size", 2), pt = value_or<int64_t>(j, "patch_size_t", 1);
  c.patch_size = {pt, p, p};
  const std::string qk = value_or<std::string>(j, "qk_norm", "rms_norm");
  VIDAX_CHECK(qk == "rms_norm", "HunyuanVideo DiT config: diffusers qk_norm '" << qk
                                    << "' is not supported (rms_norm, as every published checkpoint)");
  c.qk_norm = true;
  c.qk_norm_type = "rms";
  c.guidance_embed = value_or<bool>(j, "guidance_embeds", true);
  c.text_states_dim = value_or<int64_t>(j, "text_embed_dim", 4096);
  c.text_states_dim_2 = value_or<int64_t>(j, "pooled_projection_dim", 768);
  c.rope_theta = value_or<double>(j, "rope_theta", 256.0);
  c.rope_dim_list = value_or<std::vector<int64_t>>(j, "rope_axes_dim", {16, 56, 56});
  // latent_concat changes only in_channels (the image latent and mask on channels); token_replace
  // adds a second modulation per block (HunyuanVideoTokenReplace*), which this engine does not build.
  const std::string image = value_or<std::string>(j, "image_condition_type", "");
  VIDAX_CHECK(image.empty() || image == "latent_concat",
              "HunyuanVideo DiT config: image_condition_type '" << image
                                                                << "' is not supported (null or latent_concat)");
  // Fixed in diffusers' blocks: GELU-tanh MLPs, biased projections, the token refiner with its mask.
  c.mlp_act_type = "gelu_tanh";
  c.qkv_bias = true;
  c.text_projection = "single_refiner";
  c.use_attention_mask = true;
  return c;
}

DiTConfig from_official(const Json& j) {
  // HYVideoDiffusionTransformer.__init__ defaults (in_channels 4, out_channels None = in_channels,
  // guidance_embed False); text_states_dim(_2) as hyvideo/config.py's defaults.
  DiTConfig c;
  if (has(j, "patch_size") && !j["patch_size"].is_null()) {
    if (j["patch_size"].is_number_integer()) {
      const int64_t p = j["patch_size"].get<int64_t>();
      c.patch_size = {p, p, p};  // PatchEmbed's to_2tuple on an int: the same size per axis
    } else {
      const auto p = value_or<std::vector<int64_t>>(j, "patch_size", {});
      VIDAX_CHECK(p.size() == 3, "HunyuanVideo DiT config: patch_size must be 3 integers (t, h, w), got "
                                     << j["patch_size"].dump());
      c.patch_size = {p[0], p[1], p[2]};
    }
  }
  c.in_channels = value_or<int64_t>(j, "in_channels", 4);
  c.out_channels = value_or<int64_t>(j, "out_channels", c.in_channels);
  c.hidden_size = value_or<int64_t>(j, "hidden_size", 3072);
  c.heads_num = value_or<int64_t>(j, "heads_num", 24);
  c.mlp_width_ratio = value_or<double>(j, "mlp_width_ratio", 4.0);
  c.mlp_act_type = value_or<std::string>(j, "mlp_act_type", "gelu_tanh");
  c.mm_double_blocks_depth = value_or<int64_t>(j, "mm_double_blocks_depth", 20);
  c.mm_single_blocks_depth = value_or<int64_t>(j, "mm_single_blocks_depth", 40);
  c.rope_dim_list = value_or<std::vector<int64_t>>(j, "rope_dim_list", {16, 56, 56});
  c.qkv_bias = value_or<bool>(j, "qkv_bias", true);
  c.qk_norm = value_or<bool>(j, "qk_norm", true);
  c.qk_norm_type = value_or<std::string>(j, "qk_norm_type", "rms");
  c.guidance_embed = value_or<bool>(j, "guidance_embed", false);
  c.text_projection = value_or<std::string>(j, "text_projection", "single_refiner");
  c.use_attention_mask = value_or<bool>(j, "use_attention_mask", true);
  c.text_states_dim = value_or<int64_t>(j, "text_states_dim", 4096);
  c.text_states_dim_2 = value_or<int64_t>(j, "text_states_dim_2", 768);
  c.refiner_depth = value_or<int64_t>(j, "refiner_depth", 2);  // the engine's spelling of depth=2 (to_json)
  c.rope_theta = value_or<double>(j, "rope_theta", 256.0);
  return c;
}

}  // namespace

DiTConfig DiTConfig::from_json(const Json& j) {
  VIDAX_CHECK(j.is_object(), "HunyuanVideo DiT config must be a JSON object, got " << j.dump());
  DiTConfig c;
  if (is_diffusers_config(j)) {
    c = from_diffusers(j);
  } else {
    VIDAX_CHECK(has(j, "hidden_size") || has(j, "heads_num") || has(j, "mm_double_blocks_depth"),
                "not a HunyuanVideo DiT config (neither HYVideoDiffusionTransformer's init args nor a "
                "HunyuanVideoTransformer3DModel config): "
                    << j.dump());
    c = from_official(j);
  }
  c.validate();
  return c;
}

void DiTConfig::validate() const {
  VIDAX_CHECK(hidden_size > 0 && heads_num > 0 && hidden_size % heads_num == 0,
              "HunyuanVideo DiT config: hidden_size " << hidden_size << " must be divisible by heads_num " << heads_num);
  int64_t rope = 0;
  for (int64_t d : rope_dim_list) {
    VIDAX_CHECK(d > 0 && d % 2 == 0, "HunyuanVideo DiT config: rope_dim_list entries must be even and positive, got "
                                         << Json(rope_dim_list).dump());
    rope += d;
  }
  VIDAX_CHECK(rope_dim_list.size() == 3 && rope == head_dim(),
              "HunyuanVideo DiT config: rope_dim_list " << Json(rope_dim_list).dump()
                                                         << " must be 3 widths summing to the head dim " << head_dim());
  for (int64_t p : patch_size) VIDAX_CHECK(p > 0, "HunyuanVideo DiT config: patch_size entries must be positive");
  VIDAX_CHECK(mlp_act_type == "gelu_tanh" || mlp_act_type == "gelu" || mlp_act_type == "relu" || mlp_act_type == "silu",
              "HunyuanVideo DiT config: mlp_act_type '" << mlp_act_type << "' (gelu_tanh, gelu, relu or silu)");
  VIDAX_CHECK(qk_norm_type == "rms" || qk_norm_type == "layer",
              "HunyuanVideo DiT config: qk_norm_type '" << qk_norm_type << "' (rms or layer)");
  VIDAX_CHECK(text_projection == "single_refiner" || text_projection == "linear",
              "HunyuanVideo DiT config: text_projection '" << text_projection << "' (single_refiner or linear)");
  VIDAX_CHECK(mlp_width_ratio > 0 && mlp_hidden() > 0, "HunyuanVideo DiT config: mlp_width_ratio " << mlp_width_ratio);
  VIDAX_CHECK(in_channels > 0 && out_channels > 0 && text_states_dim > 0 && text_states_dim_2 > 0 &&
                  mm_double_blocks_depth >= 0 && mm_single_blocks_depth >= 0 && refiner_depth >= 0,
              "HunyuanVideo DiT config: channel counts and widths must be positive, depths >= 0");
}

Json DiTConfig::to_json() const {
  return Json{{"patch_size", patch_size},
              {"in_channels", in_channels},
              {"out_channels", out_channels},
              {"hidden_size", hidden_size},
              {"heads_num", heads_num},
              {"mlp_width_ratio", mlp_width_ratio},
              {"mlp_act_type", mlp_act_type},
              {"mm_double_blocks_depth", mm_double_blocks_depth},
              {"mm_single_blocks_depth", mm_single_blocks_depth},
              {"rope_dim_list", rope_dim_list},
              {"qkv_bias", qkv_bias},
              {"qk_norm", qk_norm},
              {"qk_norm_type", qk_norm_type},
              {"guidance_embed", guidance_embed},
              {"text_projection", text_projection},
              {"use_attention_mask", use_attention_mask},
              {"text_states_dim", text_states_dim},
              {"text_states_dim_2", text_states_dim_2},
              {"refiner_depth", refiner_depth},
              {"rope_theta", rope_theta}};
}

}  // namespace vidax::hunyuan
