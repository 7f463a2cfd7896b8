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
  hunyuan::read_diffusers_fields(j, c, {.heads = 16, .head_dim = 128, .layers = 54, .patch = 1, .text_embed_dim = 3584}, kWho);
  c.in_channels = value_or<int64_t>(j, "in_channels", 65);  // the embedded channels: no concat rule applies
  c.concat_condition = false;
  c.out_channels = value_or<int64_t>(j, "out_channels", 32);
  if (c.out_channels == 0) c.out_channels = c.in_channels;
  c.mm_single_blocks_depth = 0;
  const int64_t byt5 = value_or<int64_t>(j, "text_embed_2_dim", kByT5InDim);
  VIDAX_CHECK(byt5 == kByT5InDim, kWho << ": text_embed_2_dim " << byt5 << " (the official ByT5Mapper takes "
                                       << kByT5InDim << ")");
  c.vision_states_dim = value_or<int64_t>(j, "image_embed_dim", 1152);
  c.use_meanflow = value_or<bool>(j, "use_meanflow", false);
  // Fixed in diffusers' class.
  c.guidance_embed = false;
  c.text_pool_type.reset();
  c.glyph_byT5_v2 = true;
  c.vision_projection = "linear";
  c.use_cond_type_embedding = true;
  return c;
}

DiTConfig from_official(const Json& j) {
  DiTConfig c;
  hunyuan::read_official_fields(j, c, kWho);  // the same defaults as 1.0's class
  c.concat_condition = value_or<bool>(j, "concat_condition", true);
  c.is_reshape_temporal_channels = value_or<bool>(j, "is_reshape_temporal_channels", false);
  c.use_meanflow = value_or<bool>(j, "use_meanflow", false);
  if (has(j, "text_pool_type") && !j["text_pool_type"].is_null())
    c.text_pool_type = value_or<std::string>(j, "text_pool_type", "");
  c.attn_mode = value_or<std::string>(j, "attn_mode", "flash");
  c.glyph_byT5_v2 = value_or<bool>(j, "glyph_byT5_v2", false);
  c.vision_projection = value_or<std::string>(j, "vision_projection", "none");
  c.vision_states_dim = value_or<int64_t>(j, "vision_states_dim", 1280);
  c.use_cond_type_embedding = value_or<bool>(j, "use_cond_type_embedding", false);
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
    VIDAX_CHECK(hunyuan::has_official_fields(j),
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
  static_cast<hunyuan::DiTFields&>(b) = *this;
  b.in_channels = embed_channels();
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
  Json j = hunyuan::official_fields_json(*this);
  j.update(Json{{"concat_condition", concat_condition},
                {"is_reshape_temporal_channels", is_reshape_temporal_channels},
                {"use_meanflow", use_meanflow},
                {"text_pool_type", text_pool_type ? Json(*text_pool_type) : Json(nullptr)},
                {"attn_mode", attn_mode},
                {"glyph_byT5_v2", glyph_byT5_v2},
                {"vision_projection", vision_projection},
                {"vision_states_dim", vision_states_dim},
                {"use_cond_type_embedding", use_cond_type_embedding}});
  return j;
}

}  // namespace vidax::hunyuan15
