#include "models/hunyuan15/dit_config.h"

#include "core/error.h"
#include "translate/config_fields.h"

namespace vidax::hunyuan15 {

using translate::has;
using translate::value_or;
using Json = nlohmann::json;

namespace {

constexpr const char* kWho = "HunyuanVideo 1.5 DiT config";

// Fields only the 1.5 class takes (1.0's HYVideoDiffusionTransformer has none of them).
constexpr const char* kOwnFields[] = {"glyph_byT5_v2", "vision_projection", "use_cond_type_embedding",
                                      "concat_condition", "use_meanflow", "text_pool_type",
                                      "is_reshape_temporal_channels", "vision_states_dim"};

DiTConfig from_diffusers(const Json& j) {
  // HunyuanVideo15Transformer3DModel.__init__ defaults; `out_channels or in_channels`.
  DiTConfig c;
  c.layout = DiTLayout::Diffusers;
  c.in_channels = value_or<int64_t>(j, "in_channels", 65);  // the embedded channels: no concat rule applies
  c.concat_condition = false;
  c.out_channels = value_or<int64_t>(j, "out_channels", 32);
  if (c.out_channels == 0) c.out_channels = c.in_channels;
  c.heads_num = value_or<int64_t>(j, "num_attention_heads", 16);
  c.hidden_size = c.heads_num * value_or<int64_t>(j, "attention_head_dim", 128);
  c.mm_double_blocks_depth = value_or<int64_t>(j, "num_layers", 54);
  c.mm_single_blocks_depth = 0;
  c.refiner_depth = value_or<int64_t>(j, "num_refiner_layers", 2);
  c.mlp_width_ratio = value_or<double>(j, "mlp_ratio", 4.0);
  const int64_t p = value_or<int64_t>(j, "patch_size", 1), pt = value_or<int64_t>(j, "patch_size_t", 1);
  c.patch_size = {pt, p, p};
  const std::string qk = value_or<std::string>(j, "qk_norm", "rms_norm");
  VIDAX_CHECK(qk == "rms_norm", kWho << ": diffusers qk_norm '" << qk << "' is not supported (rms_norm)");
  c.qk_norm = true;
  c.qk_norm_type = "rms";
  c.text_states_dim = value_or<int64_t>(j, "text_embed_dim", 3584);
  const int64_t byt5 = value_or<int64_t>(j, "text_embed_2_dim", kByT5InDim);
  VIDAX_CHECK(byt5 == kByT5InDim, kWho << ": text_embed_2_dim " << byt5 << " (the official ByT5Mapper takes "
                                       << kByT5InDim << ")");
  c.vision_states_dim = value_or<int64_t>(j, "image_embed_dim", 1152);
  c.rope_theta = value_or<double>(j, "rope_theta", 256.0);
  c.rope_dim_list = value_or<std::vector<int64_t>>(j, "rope_axes_dim", {16, 56, 56});
  c.use_meanflow = value_or<bool>(j, "use_meanflow", false);
  // Fixed in diffusers' class.
  c.mlp_act_type = "gelu_tanh";
  c.qkv_bias = true;
  c.guidance_embed = false;
  c.text_projection = "single_refiner";
  c.use_attention_mask = true;
  c.text_pool_type.reset();
  c.glyph_byT5_v2 = true;
  c.vision_projection = "linear";
  c.use_cond_type_embedding = true;
  return c;
}

DiTConfig from_official(const Json& j) {
  DiTConfig c;
  if (has(j, "patch_size") && !j["patch_size"].is_null()) {
    if (j["patch_size"].is_number_integer()) {
      const int64_t p = j["patch_size"].get<int64_t>();
      c.patch_size = {p, p, p};
    } else {
      const auto p = value_or<std::vector<int64_t>>(j, "patch_size", {});
      VIDAX_CHECK(p.size() == 3, kWho << ": patch_size must be 3 integers (t, h, w), got " << j["patch_size"].dump());
      c.patch_size = {p[0], p[1], p[2]};
    }
  }
  c.in_channels = value_or<int64_t>(j, "in_channels", 4);
  c.concat_condition = value_or<bool>(j, "concat_condition", true);
  c.is_reshape_temporal_channels = value_or<bool>(j, "is_reshape_temporal_channels", false);
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
  c.use_meanflow = value_or<bool>(j, "use_meanflow", false);
  c.text_projection = value_or<std::string>(j, "text_projection", "single_refiner");
  c.use_attention_mask = value_or<bool>(j, "use_attention_mask", true);
  c.text_states_dim = value_or<int64_t>(j, "text_states_dim", 4096);
  c.text_states_dim_2 = value_or<int64_t>(j, "text_states_dim_2", 768);
  if (has(j, "text_pool_type") && !j["text_pool_type"].is_null())
    c.text_pool_type = value_or<std::string>(j, "text_pool_type", "");
  c.rope_theta = value_or<double>(j, "rope_theta", 256.0);
  c.attn_mode = value_or<std::string>(j, "attn_mode", "flash");
  c.glyph_byT5_v2 = value_or<bool>(j, "glyph_byT5_v2", false);
  c.vision_projection = value_or<std::string>(j, "vision_projection", "none");
  c.vision_states_dim = value_or<int64_t>(j, "vision_states_dim", 1280);
  c.use_cond_type_embedding = value_or<bool>(j, "use_cond_type_embedding", false);
  c.refiner_depth = value_or<int64_t>(j, "refiner_depth", 2);  // the engine's spelling of depth=2 (to_json)
  return c;
}

}  // namespace

DiTConfig DiTConfig::published() {
  // diffusers' HunyuanVideo15Transformer3DModel defaults (the published 480p / 720p transformers)
  // in the official spelling: 32 latent channels (+ 32 condition + 1 mask), 16 heads of 128, 54
  // double-stream blocks, Qwen2.5-VL-7B's 3584-wide states, ByT5 glyphs, SigLIP's 1152-wide tokens.
  DiTConfig c;
  c.patch_size = {1, 1, 1};
  c.in_channels = c.out_channels = 32;
  c.hidden_size = 2048;
  c.heads_num = 16;
  c.mm_double_blocks_depth = 54;
  c.mm_single_blocks_depth = 0;
  c.text_states_dim = 3584;
  c.glyph_byT5_v2 = true;
  c.vision_projection = "linear";
  c.vision_states_dim = 1152;
  c.use_cond_type_embedding = true;
  return c;
}

bool is_diffusers_config(const Json& j) {
  return j.is_object() && has(j, "_class_name") && j["_class_name"].is_string() &&
         j["_class_name"].get<std::string>() == "HunyuanVideo15Transformer3DModel";
}

bool is_config(const Json& j) {
  if (is_diffusers_config(j)) return true;
  if (!j.is_object()) return false;
  if (has(j, "_class_name") && j["_class_name"].is_string())
    return j["_class_name"].get<std::string>() == "HunyuanVideo_1_5_DiffusionTransformer";
  for (const char* f : kOwnFields)
    if (has(j, f)) return true;
  return false;
}

DiTConfig DiTConfig::from_json(const Json& j) {
  VIDAX_CHECK(j.is_object(), kWho << " must be a JSON object, got " << j.dump());
  DiTConfig c;
  if (is_diffusers_config(j)) {
    c = from_diffusers(j);
  } else {
    VIDAX_CHECK(has(j, "hidden_size") || has(j, "heads_num") || has(j, "mm_double_blocks_depth"),
                "not a HunyuanVideo 1.5 DiT config (neither HunyuanVideo_1_5_DiffusionTransformer's init args nor a "
                "HunyuanVideo15Transformer3DModel config): "
                    << j.dump());
    c = from_official(j);
  }
  c.validate();
  return c;
}

hunyuan::DiTConfig DiTConfig::blocks_config() const {
  hunyuan::DiTConfig b;
  b.patch_size = patch_size;
  b.in_channels = embed_channels();
  b.out_channels = out_channels;
  b.hidden_size = hidden_size;
  b.heads_num = heads_num;
  b.mlp_width_ratio = mlp_width_ratio;
  b.mlp_act_type = mlp_act_type;
  b.mm_double_blocks_depth = mm_double_blocks_depth;
  b.mm_single_blocks_depth = mm_single_blocks_depth;
  b.rope_dim_list = rope_dim_list;
  b.qkv_bias = qkv_bias;
  b.qk_norm = qk_norm;
  b.qk_norm_type = qk_norm_type;
  b.guidance_embed = guidance_embed;
  b.text_projection = text_projection;
  b.use_attention_mask = use_attention_mask;
  b.text_states_dim = text_states_dim;
  b.text_states_dim_2 = text_states_dim_2;
  b.refiner_depth = refiner_depth;
  b.rope_theta = rope_theta;
  return b;
}

void DiTConfig::validate() const {
  blocks_config().validate();  // the shared fields' rules (head dim, rope widths, activations, norms)
  VIDAX_CHECK(attn_mode == "flash" || attn_mode == "flash2" || attn_mode == "flash3" || attn_mode == "torch" ||
                  attn_mode == "sageattn",
              kWho << ": attn_mode '" << attn_mode
                   << "' is not supported (the dense modes flash, flash2, flash3, torch, sageattn; the sparse "
                      "flex-block-attn / SSTA path is not built)");
  VIDAX_CHECK(vision_projection == "none" || vision_projection == "linear",
              kWho << ": vision_projection '" << vision_projection << "' (none or linear)");
  VIDAX_CHECK(vision_states_dim > 0, kWho << ": vision_states_dim must be positive");
  // The official constructor asserts these two.
  VIDAX_CHECK(!use_cond_type_embedding || glyph_byT5_v2,
              kWho << ": use_cond_type_embedding needs glyph_byT5_v2 (the official class asserts it)");
}

Json DiTConfig::to_json() const {
  return Json{{"patch_size", patch_size},
              {"in_channels", in_channels},
              {"concat_condition", concat_condition},
              {"is_reshape_temporal_channels", is_reshape_temporal_channels},
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
              {"use_meanflow", use_meanflow},
              {"text_projection", text_projection},
              {"use_attention_mask", use_attention_mask},
              {"text_states_dim", text_states_dim},
              {"text_states_dim_2", text_states_dim_2},
              {"text_pool_type", text_pool_type ? Json(*text_pool_type) : Json(nullptr)},
              {"rope_theta", rope_theta},
              {"attn_mode", attn_mode},
              {"glyph_byT5_v2", glyph_byT5_v2},
              {"vision_projection", vision_projection},
              {"vision_states_dim", vision_states_dim},
              {"use_cond_type_embedding", use_cond_type_embedding},
              {"refiner_depth", refiner_depth}};
}

}  // namespace vidax::hunyuan15
