#include "models/hunyuan15/presets.h"

#include "core/error.h"
#include "models/hunyuan15/dit_config.h"
#include "models/hunyuan15/siglip.h"
#include "models/hunyuan15/vae.h"
#include "text/qwen2_config.h"

namespace vidax::hunyuan15 {

namespace {

Preset t2v(const char* name, const char* description, const char* version, int64_t height, int64_t width,
           double shift) {
  Preset p;
  p.variant.name = name;
  p.variant.description = description;
  p.variant.tasks = {"t2v"};
  pipeline::Defaults& d = p.variant.defaults;
  d.frames = 121;
  d.height = height;
  d.width = width;
  d.steps = 50;
  d.guidance = 6.0;
  d.shift = shift;
  d.sampler = "flow_match_euler";
  d.fps = 24;
  d.precision = "bf16";
  d.negative_prompt = "";
  p.transformer_version = version;
  p.dit = DiTConfig::published().to_json();
  p.vae = VAEConfig{}.to_json();
  p.llm = text::Qwen25VLTextConfig::qwen25_vl_7b().to_json();
  // google/byt5-small's config.json (the encoder's fields; vocab_size before the Glyph tokens).
  p.byt5 = {{"model_type", "t5"},  {"vocab_size", 384},     {"d_model", 1472},
            {"d_kv", 64},          {"d_ff", 3584},          {"num_layers", 12},
            {"num_heads", 6},      {"relative_attention_num_buckets", 32},
            {"relative_attention_max_distance", 128}, {"feed_forward_proj", "gated-gelu"},
            {"layer_norm_epsilon", 1e-6}, {"is_gated_act", true}};
  return p;
}

// An image-to-video variant: the t2v one's parts, the i2v transformer, the SigLIP, the bucket base as
// the default size (presets.h).
Preset i2v(const char* name, const char* description, const char* version, int64_t base, double shift,
           double guidance, int64_t steps) {
  Preset p = t2v(name, description, version, base, base, shift);
  p.variant.tasks = {"i2v"};
  p.variant.defaults.guidance = guidance;
  p.variant.defaults.steps = steps;
  nlohmann::json dit = p.dit;
  dit["ideal_task"] = "i2v";
  dit["ideal_resolution"] = std::string(version).substr(0, std::string(version).find('_'));
  p.dit = dit;
  p.siglip = SiglipVisionConfig::so400m_patch14_384().to_json();
  p.siglip_processor = SiglipProcessorConfig{}.to_json();
  return p;
}

// A tiny random-weight architecture for `vidax make-demo` (demo.h): the published structure (patch 1,
// concat condition, ByT5 glyphs, the vision projection, condition types, double blocks only) at tiny
// widths; its videos are noise.
Preset tiny_demo() {
  Preset p = t2v(kT2VTinyDemo,
                 "tiny random-weight HunyuanVideo 1.5 t2v architecture written by `vidax make-demo` (noise-like "
                 "output)",
                 "480p_t2v", 32, 32, 5.0);
  p.variant.demo = true;
  pipeline::Defaults& d = p.variant.defaults;
  d.frames = 5;
  d.steps = 4;
  d.precision = "fp32";
  p.dit = {{"patch_size", {1, 1, 1}},    {"in_channels", 4},          {"out_channels", 4},
           {"hidden_size", 32},          {"heads_num", 2},            {"mlp_width_ratio", 4.0},
           {"mlp_act_type", "gelu_tanh"}, {"mm_double_blocks_depth", 2}, {"mm_single_blocks_depth", 0},
           {"rope_dim_list", {4, 6, 6}}, {"qkv_bias", true},          {"qk_norm", true},
           {"qk_norm_type", "rms"},      {"guidance_embed", false},   {"text_projection", "single_refiner"},
           {"use_attention_mask", true}, {"text_states_dim", 32},     {"rope_theta", 256},
           {"attn_mode", "torch"},       {"glyph_byT5_v2", true},     {"vision_projection", "linear"},
           {"vision_states_dim", 24},    {"use_cond_type_embedding", true}, {"ideal_resolution", "480p"},
           {"ideal_task", "t2v"}};
  VAEConfig vae;
  vae.latent_channels = 4;
  vae.block_out_channels = {4, 4, 8, 8, 8};
  vae.layers_per_block = 1;
  vae.sample_size = 64;
  vae.sample_tsize = 16;
  p.vae = vae.to_json();
  p.text_len = 64;
  // The demo Qwen2.5-VL text model (its vocabulary the demo tokenizer's, demo.h) and a one-layer
  // ByT5 of byt5-small's width 1472 (the DiT's byt5_in takes that width).
  text::Qwen25VLTextConfig q = text::Qwen25VLTextConfig::qwen25_vl_7b();
  q.llama.vocab_size = 1024;
  q.llama.hidden_size = 32;
  q.llama.intermediate_size = 64;
  q.llama.num_hidden_layers = 3;
  q.llama.num_attention_heads = 4;
  q.llama.num_key_value_heads = 2;
  q.llama.head_dim = 8;
  q.mrope_section = {1, 1, 2};
  p.llm = q.to_json();
  p.byt5 = {{"model_type", "t5"},  {"vocab_size", 384},     {"d_model", 1472},
            {"d_kv", 16},          {"d_ff", 32},            {"num_layers", 1},
            {"num_heads", 2},      {"relative_attention_num_buckets", 32},
            {"relative_attention_max_distance", 128}, {"feed_forward_proj", "gated-gelu"},
            {"layer_norm_epsilon", 1e-6}, {"is_gated_act", true}};
  return p;
}

// The i2v demo: the t2v demo's parts, its DiT for i2v, a tiny SigLIP of the DiT's vision width (24 x 24
// pixels in 8 x 8 patches: 9 tokens).
Preset tiny_i2v_demo() {
  Preset p = tiny_demo();
  p.variant.name = kI2VTinyDemo;
  p.variant.description =
      "tiny random-weight HunyuanVideo 1.5 i2v architecture written by `vidax make-demo` (noise-like output)";
  p.variant.tasks = {"i2v"};
  p.transformer_version = "480p_i2v";
  p.dit["ideal_task"] = "i2v";
  SiglipVisionConfig s;
  s.hidden_size = p.dit.at("vision_states_dim").get<int64_t>();
  s.intermediate_size = 40;
  s.num_hidden_layers = 2;
  s.num_attention_heads = 2;
  s.image_size = 24;
  s.patch_size = 8;
  p.siglip = s.to_json();
  SiglipProcessorConfig proc;
  proc.height = proc.width = 24;
  p.siglip_processor = proc.to_json();
  p.vision_tokens = s.tokens();
  return p;
}

}  // namespace

std::string sibling_variant(const std::string& name) {
  static const std::pair<const char*, const char*> kPairs[] = {
      {kT2V480p, kI2V480p}, {kT2V720p, kI2V720p}, {kT2VTinyDemo, kI2VTinyDemo}};
  for (const auto& [t, i] : kPairs) {
    if (name == t) return i;
    if (name == i) return t;
  }
  return "";
}

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      t2v(kT2V480p,
          "HunyuanVideo 1.5 text-to-video 8.3B (transformer/480p_t2v), 480p: 480x848 (16:9), 121 frames, CFG 6, shift 5",
          "480p_t2v", 480, 848, 5.0),
      t2v(kT2V720p,
          "HunyuanVideo 1.5 text-to-video 8.3B (transformer/720p_t2v), 720p: 720x1280 (16:9), 121 frames, CFG 6, shift "
          "9",
          "720p_t2v", 720, 1280, 9.0),
      tiny_demo(),
      i2v(kI2V480p,
          "HunyuanVideo 1.5 image-to-video 8.3B (transformer/480p_i2v), 480p: the image's bucket of 640 x 640 "
          "(e.g. 480x848 for 16:9), 121 frames, CFG 6, shift 5",
          "480p_i2v", 640, 5.0, 6.0, 50),
      i2v(kI2V720p,
          "HunyuanVideo 1.5 image-to-video 8.3B (transformer/720p_i2v), 720p: the image's bucket of 960 x 960 "
          "(e.g. 720x1280 for 16:9), 121 frames, CFG 6, shift 7",
          "720p_i2v", 960, 7.0, 6.0, 50),
      i2v(kI2V480pDistilled,
          "HunyuanVideo 1.5 image-to-video, CFG-distilled (transformer/480p_i2v_distilled): one pass per step "
          "(guidance 1), shift 5",
          "480p_i2v_distilled", 640, 5.0, 1.0, 50),
      i2v(kI2V720pDistilled,
          "HunyuanVideo 1.5 image-to-video, CFG-distilled (transformer/720p_i2v_distilled): one pass per step "
          "(guidance 1), shift 7",
          "720p_i2v_distilled", 960, 7.0, 1.0, 50),
      i2v(kI2V480pStepDistilled,
          "HunyuanVideo 1.5 image-to-video, step-distilled (transformer/480p_i2v_step_distilled): 12 steps, "
          "guidance 1, shift 7",
          "480p_i2v_step_distilled", 640, 7.0, 1.0, 12),
      tiny_i2v_demo(),
  };
  return all;
}

const Preset& preset(const std::string& name) {
  std::string known;
  for (const auto& p : presets()) {
    if (p.name() == name) return p;
    known += (known.empty() ? "" : ", ") + p.name();
  }
  throw Error(msg() << "unknown HunyuanVideo 1.5 model '" << name << "'; known: " << known
                    << " (the t2v cfg-distilled and step-distilled, the sparse and the super-resolution transformers "
                       "are not built yet)");
}

}  // namespace vidax::hunyuan15
