#include "models/ltx2/checkpoint_keys.h"

#include <algorithm>

#include "models/ltx2/dit.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

using translate::Json;
using translate::KeyMap;
using translate::ParamSpec;

// ===========================================================================
// Config
// ===========================================================================

Json dit_config_json(const DiTConfig& c) {
  // The values every official configurator checks (check_config_value), then the sizes.
  Json j{{"dropout", 0.0},
         {"attention_bias", true},
         {"num_vector_embeds", nullptr},
         {"activation_fn", "gelu-approximate"},
         {"num_embeds_ada_norm", 1000},
         {"use_linear_projection", false},
         {"only_cross_attention", false},
         {"cross_attention_norm", true},
         {"double_self_attention", false},
         {"upcast_attention", false},
         {"standardization_norm", "rms_norm"},
         {"norm_elementwise_affine", false},
         {"qk_norm", "rms_norm"},
         {"positional_embedding_type", "rope"},
         {"use_middle_indices_grid", true},
         {"use_audio_video_cross_attention", true},
         {"share_ff", false},
         {"av_cross_ada_norm", true}};
  j["model_type"] = model_type_name(c.model_type);
  j["num_attention_heads"] = c.num_attention_heads;
  j["attention_head_dim"] = c.attention_head_dim;
  j["in_channels"] = c.in_channels;
  j["out_channels"] = c.out_channels;
  j["cross_attention_dim"] = c.cross_attention_dim;
  j["positional_embedding_max_pos"] = c.positional_embedding_max_pos;
  j["ff_bias"] = c.ff_bias;
  j["use_keyframes_abs_pos_embedding"] = c.use_keyframes_abs_pos_embedding;
  j["audio_num_attention_heads"] = c.audio_num_attention_heads;
  j["audio_attention_head_dim"] = c.audio_attention_head_dim;
  j["audio_in_channels"] = c.audio_in_channels;
  j["audio_out_channels"] = c.audio_out_channels;
  j["audio_cross_attention_dim"] = c.audio_cross_attention_dim;
  j["audio_positional_embedding_max_pos"] = c.audio_positional_embedding_max_pos;
  j["audio_ff_bias"] = c.audio_ff_bias;
  j["num_layers"] = c.num_layers;
  j["norm_eps"] = c.norm_eps;
  j["positional_embedding_theta"] = c.positional_embedding_theta;
  j["timestep_scale_multiplier"] = c.timestep_scale_multiplier;
  j["av_ca_timestep_scale_multiplier"] = c.av_ca_timestep_scale_multiplier;
  j["rope_type"] = c.rope_type == RopeLayout::Split ? "split" : "interleaved";
  j["frequencies_precision"] = c.double_precision_rope ? "float64" : "float32";
  j["apply_gated_attention"] = c.apply_gated_attention;
  j["cross_attention_adaln"] = c.cross_attention_adaln;
  j["use_prompt_adaln_single"] = c.use_prompt_adaln_single;
  j["caption_proj_before_connector"] = !c.caption_projection;
  if (c.caption_projection) j["caption_channels"] = c.caption_channels;
  return j;
}

DiTConfig dit_config_19b() {
  DiTConfig c;  // LTXModel's defaults are the 19B sizes (32 x 128 video, 32 x 64 audio, 48 blocks)
  c.double_precision_rope = true;
  c.caption_projection = true;
  c.caption_channels = 3840;
  return c;
}

bool is_diffusers_dit_config(const Json& j) {
  if (!j.is_object()) return false;
  if (translate::has(j, "_class_name") && j["_class_name"].is_string())
    return j["_class_name"].get<std::string>() == "LTX2VideoTransformer3DModel";
  return translate::has(j, "audio_num_attention_heads") &&
         (translate::has(j, "gated_attn") || translate::has(j, "cross_attn_mod") || translate::has(j, "rope_theta"));
}

DiTConfig dit_config_from_diffusers(const Json& j) {
  using translate::value_or;
  VIDAX_CHECK(is_diffusers_dit_config(j), "not a diffusers LTX2VideoTransformer3DModel config: " << j.dump());
  // LTX2VideoTransformer3DModel.__init__'s defaults; the class always builds both streams.
  for (const char* k : {"patch_size", "patch_size_t", "audio_patch_size", "audio_patch_size_t"})
    VIDAX_CHECK(value_or<int64_t>(j, k, 1) == 1, "LTX-2 diffusers config: " << k << " " << j[k].dump()
                                                     << " (LTXModel patchifies with 1; only 1 is an LTX-2 model)");
  VIDAX_CHECK(value_or<bool>(j, "gated_attn", false) == value_or<bool>(j, "audio_gated_attn", false) &&
                  value_or<bool>(j, "cross_attn_mod", false) == value_or<bool>(j, "audio_cross_attn_mod", false),
              "LTX-2 diffusers config: the video and audio streams differ in gated_attn / cross_attn_mod, which "
              "LTXModel sets for both at once (apply_gated_attention, cross_attention_adaln)");
  DiTConfig c;
  c.model_type = ModelType::AudioVideo;
  c.in_channels = value_or<int64_t>(j, "in_channels", 128);
  c.out_channels = value_or<int64_t>(j, "out_channels", c.in_channels);
  c.num_attention_heads = value_or<int64_t>(j, "num_attention_heads", 32);
  c.attention_head_dim = value_or<int64_t>(j, "attention_head_dim", 128);
  c.cross_attention_dim = value_or<int64_t>(j, "cross_attention_dim", 4096);
  c.positional_embedding_max_pos = {value_or<int64_t>(j, "pos_embed_max_pos", 20), value_or<int64_t>(j, "base_height", 2048),
                                    value_or<int64_t>(j, "base_width", 2048)};
  c.apply_gated_attention = value_or<bool>(j, "gated_attn", false);
  c.cross_attention_adaln = value_or<bool>(j, "cross_attn_mod", false);
  c.audio_in_channels = value_or<int64_t>(j, "audio_in_channels", 128);
  c.audio_out_channels = value_or<int64_t>(j, "audio_out_channels", c.audio_in_channels);
  c.audio_num_attention_heads = value_or<int64_t>(j, "audio_num_attention_heads", 32);
  c.audio_attention_head_dim = value_or<int64_t>(j, "audio_attention_head_dim", 64);
  c.audio_cross_attention_dim = value_or<int64_t>(j, "audio_cross_attention_dim", 2048);
  c.audio_positional_embedding_max_pos = {value_or<int64_t>(j, "audio_pos_embed_max_pos", 20)};
  c.num_layers = value_or<int64_t>(j, "num_layers", 48);
  c.norm_eps = value_or<double>(j, "norm_eps", 1e-6);
  c.positional_embedding_theta = value_or<double>(j, "rope_theta", 10000.0);
  c.double_precision_rope = value_or<bool>(j, "rope_double_precision", true);
  c.timestep_scale_multiplier = value_or<int64_t>(j, "timestep_scale_multiplier", 1000);
  c.av_ca_timestep_scale_multiplier = value_or<int64_t>(j, "cross_attn_timestep_scale_multiplier", 1000);
  const std::string rope = value_or<std::string>(j, "rope_type", "interleaved");
  VIDAX_CHECK(rope == "split" || rope == "interleaved", "LTX-2 diffusers config: rope_type '" << rope << "' (split or interleaved)");
  c.rope_type = rope == "split" ? RopeLayout::Split : RopeLayout::Interleaved;
  c.caption_projection = value_or<bool>(j, "use_prompt_embeddings", true);
  c.caption_channels = c.caption_projection ? value_or<int64_t>(j, "caption_channels", 3840) : 0;
  c.ff_bias = value_or<bool>(j, "ff_bias", true);
  c.audio_ff_bias = value_or<bool>(j, "audio_ff_bias", true);
  c.use_prompt_adaln_single = value_or<bool>(j, "use_prompt_adaln_single", true);
  c.use_keyframes_abs_pos_embedding = value_or<bool>(j, "use_keyframes_abs_pos_embedding", false);
  c.validate();
  return c;
}

// ===========================================================================
// Parameters and key maps
// ===========================================================================

ParamSpec dit_params(const DiTConfig& c) {
  ParamSpec s;
  nn::ParamSource probe = nn::ParamSource::generated(
      [&s](const std::string& name, const Shape& shape) {
        s.add(name, shape);
        return Tensor::empty(shape, DType::F32, Device::Meta);
      },
      "shapes");
  const LTXModel model(c, probe, DType::F32);
  return s;
}

namespace {

// engine (official) <- diffusers, from convert_ltx2_transformer_to_diffusers' rename table; every
// other name is the same in both.
const translate::SuffixTable kDiffusers = {
    {"patchify_proj.{p}", "proj_in.{p}"},
    {"audio_patchify_proj.{p}", "audio_proj_in.{p}"},
    {"adaln_single.{x*}", "time_embed.{x}"},
    {"audio_adaln_single.{x*}", "audio_time_embed.{x}"},
    // LTX-2.3's prompt AdaLN (the converter has no rename for it; the diffusers module is prompt_adaln).
    {"prompt_adaln_single.{x*}", "prompt_adaln.{x}"},
    {"audio_prompt_adaln_single.{x*}", "audio_prompt_adaln.{x}"},
    {"av_ca_video_scale_shift_adaln_single.{x*}", "av_cross_attn_video_scale_shift.{x}"},
    {"av_ca_a2v_gate_adaln_single.{x*}", "av_cross_attn_video_a2v_gate.{x}"},
    {"av_ca_audio_scale_shift_adaln_single.{x*}", "av_cross_attn_audio_scale_shift.{x}"},
    {"av_ca_v2a_gate_adaln_single.{x*}", "av_cross_attn_audio_v2a_gate.{x}"},
    {"transformer_blocks.{i}.scale_shift_table_a2v_ca_video", "transformer_blocks.{i}.video_a2v_cross_attn_scale_shift_table"},
    {"transformer_blocks.{i}.scale_shift_table_a2v_ca_audio", "transformer_blocks.{i}.audio_a2v_cross_attn_scale_shift_table"},
    {"transformer_blocks.{i}.{a}.q_norm.{p}", "transformer_blocks.{i}.{a}.norm_q.{p}"},
    {"transformer_blocks.{i}.{a}.k_norm.{p}", "transformer_blocks.{i}.{a}.norm_k.{p}"},
    {"{name*}", "{name}"},
};

}  // namespace

KeyMap dit_keymap(const std::string& layout) {
  if (layout == "original") return translate::original_identity();
  if (layout == "comfyui")
    return translate::with_key_prefix(translate::original_identity(), "model.diffusion_model.", "comfyui");
  if (layout == "diffusers") {
    KeyMap m{"diffusers", {}, {}};
    translate::add_nested(m.rules, "", "", kDiffusers);
    return m;
  }
  throw Error(msg() << "ltx2-dit: unknown layout '" << layout << "' (original, comfyui, diffusers)");
}

// ===========================================================================
// Component
// ===========================================================================

namespace {

// A bare metadata `transformer` dict: keys only LTXModel's config has.
bool is_transformer_dict(const Json& j) {
  using translate::has;
  return j.is_object() && (has(j, "audio_num_attention_heads") || has(j, "positional_embedding_max_pos") ||
                           has(j, "audio_positional_embedding_max_pos")) &&
         !is_diffusers_dit_config(j);
}

class DitComponent : public translate::Component {
 public:
  std::string name() const override { return "ltx2-dit"; }
  std::string family() const override { return "ltx2"; }
  std::vector<std::string> layouts() const override { return {"original", "comfyui", "diffusers"}; }
  Json default_config() const override { return dit_config_json(dit_config_19b()); }
  std::optional<Json> read_config(const Json& j) const override {
    if (!j.is_object()) return std::nullopt;
    if (is_diffusers_dit_config(j)) return dit_config_json(dit_config_from_diffusers(j));
    // The checkpoint metadata's whole config ({"transformer": {...}, "vae": ...}) or its transformer dict.
    if ((translate::has(j, "transformer") && j["transformer"].is_object()) || is_transformer_dict(j))
      return dit_config_json(DiTConfig::from_json(j));
    return std::nullopt;
  }
  Json infer_config(const translate::TensorSource& src, const std::string& layout) const override {
    const KeyMap m = dit_keymap(layout);
    auto info = [&](const std::string& n) { return translate::find_param(src, m, n); };
    auto dim0 = [&](const std::string& n) -> int64_t {
      const translate::TensorInfo* t = info(n);
      return t && !t->shape.empty() ? t->shape[0] : 0;
    };
    auto dim1 = [&](const std::string& n) -> int64_t {
      const translate::TensorInfo* t = info(n);
      return t && t->shape.size() == 2 ? t->shape[1] : 0;
    };
    const std::string b0 = "transformer_blocks.0.";
    DiTConfig c = dit_config_19b();
    // Each stream's width: its patchify projection [D, in], else (the shapes a LoRA implies) its
    // self-attention's query [D, D].
    const int64_t dv = dim0("patchify_proj.weight") ? dim0("patchify_proj.weight") : dim0(b0 + "attn1.to_q.weight");
    const int64_t da = dim0("audio_patchify_proj.weight") ? dim0("audio_patchify_proj.weight")
                                                           : dim0(b0 + "audio_attn1.to_q.weight");
    const bool video = dv > 0 || info(b0 + "attn1.to_q.weight"), audio = da > 0;
    c.model_type = video && audio ? ModelType::AudioVideo : audio ? ModelType::AudioOnly : ModelType::VideoOnly;
    const std::string probe = video ? "attn1.to_q.weight" : "audio_attn1.to_q.weight";
    c.num_layers = translate::count_layers(src, m, probe, "transformer_blocks.");
    c.apply_gated_attention = info(b0 + (video ? "attn1" : "audio_attn1") + ".to_gate_logits.weight") != nullptr;
    // Heads: the gate logits' rows; without gates the checkpoint does not store them: the published
    // head widths (128 video, 64 audio), one head when the width does not divide.
    int64_t heads = dim0(b0 + (video ? "attn1" : "audio_attn1") + ".to_gate_logits.weight");
    if (heads == 0) {
      const int64_t hv = dv % 128 == 0 ? dv / 128 : 0, ha = da % 64 == 0 ? da / 64 : 0;
      heads = video && audio ? (hv > 0 && hv == ha ? hv : 1) : video ? std::max<int64_t>(hv, 1) : std::max<int64_t>(ha, 1);
    }
    if (video) {
      c.num_attention_heads = heads;
      c.attention_head_dim = dv / heads;
      c.cross_attention_dim = dv;
      if (int64_t in = dim1("patchify_proj.weight")) c.in_channels = in;
      if (int64_t out = dim0("proj_out.weight")) c.out_channels = out;
      c.ff_bias = info(b0 + "ff.net.0.proj.bias") || info(b0 + "ff.net.2.bias") ||
                  (!info(b0 + "ff.net.0.proj.weight") && c.ff_bias);
      c.use_keyframes_abs_pos_embedding = info("keyframes_abs_pos_embedding") != nullptr;
    }
    if (audio) {
      c.audio_num_attention_heads = heads;
      c.audio_attention_head_dim = da / heads;
      c.audio_cross_attention_dim = da;
      if (int64_t in = dim1("audio_patchify_proj.weight")) c.audio_in_channels = in;
      if (int64_t out = dim0("audio_proj_out.weight")) c.audio_out_channels = out;
      c.audio_ff_bias = info(b0 + "audio_ff.net.0.proj.bias") || info(b0 + "audio_ff.net.2.bias") ||
                        (!info(b0 + "audio_ff.net.0.proj.weight") && c.audio_ff_bias);
    }
    const std::string s = video ? "" : "audio_";
    c.cross_attention_adaln = dim0(b0 + s + "scale_shift_table") == 9 || info(b0 + s + "prompt_scale_shift_table");
    c.use_prompt_adaln_single = info(s + "prompt_adaln_single.linear.weight") != nullptr || !c.cross_attention_adaln;
    const int64_t caption = dim1(s + "caption_projection.linear_1.weight");
    c.caption_projection = caption > 0 || (!info(s + "patchify_proj.weight") && c.caption_projection);
    c.caption_channels = c.caption_projection ? (caption > 0 ? caption : c.caption_channels) : 0;
    return dit_config_json(c);
  }
  ParamSpec params(const Json& cfg) const override {
    // Detection asks for the default (19B) spec for every file it looks at: built once.
    static const Json dflt = default_config();
    if (cfg == dflt) return published();
    return dit_params(DiTConfig::from_json(cfg));
  }
  KeyMap keymap(const std::string& layout, const Json&) const override { return dit_keymap(layout); }
  std::string variant(const Json& cfg) const override {
    // What the shapes decide: the parameter set (names and shapes) of the published model.
    const ParamSpec got = params(cfg);
    const ParamSpec& ref = published();
    if (got.params.size() != ref.params.size()) return "custom";
    for (size_t i = 0; i < got.params.size(); ++i)
      if (got.params[i].name != ref.params[i].name || got.params[i].shape != ref.params[i].shape)
        return "custom";
    return "19b";
  }

 private:
  static const ParamSpec& published() {
    static const ParamSpec spec = dit_params(dit_config_19b());
    return spec;
  }
};

}  // namespace

const translate::Component& dit_component() {
  static const DitComponent c;
  return c;
}

}  // namespace vidax::ltx2
