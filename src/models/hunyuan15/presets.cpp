#include "models/hunyuan15/presets.h"

#include "core/error.h"
#include "models/hunyuan15/dit_config.h"
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

}  // namespace

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
                    << " (the cfg-distilled, sparse, step-distilled, i2v and super-resolution transformers are not "
                       "built yet)");
}

}  // namespace vidax::hunyuan15
