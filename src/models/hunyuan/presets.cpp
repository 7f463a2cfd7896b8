#include "models/hunyuan/presets.h"

#include "core/error.h"
#include "models/hunyuan/dit_config.h"
#include "models/hunyuan/vae.h"

namespace vidax::hunyuan {

namespace {

Preset t2v(const char* name, const char* description, int64_t height, int64_t width) {
  Preset p;
  p.variant.name = name;
  p.variant.description = description;
  p.variant.tasks = {"t2v"};
  pipeline::Defaults& d = p.variant.defaults;
  d.frames = 129;
  d.height = height;
  d.width = width;
  d.steps = 50;
  d.guidance = 6.0;  // --embedded-cfg-scale
  d.shift = 7.0;     // --flow-shift
  d.sampler = "flow_match_euler";
  d.fps = 24;
  d.precision = "bf16";
  // Encoded only with --cfg-scale > 1 (at 1, inference.py sets it to "" and makes no negative pass):
  // hyvideo/constants.py NEGATIVE_PROMPT, which inference.py uses when none is given.
  d.negative_prompt =
      "Aerial view, aerial view, overexposed, low quality, deformation, a poor composition, bad hands, bad teeth, "
      "bad eyes, bad limbs, distortion";
  p.dit = DiTConfig::t2v_720p().to_json();
  p.vae = VAEConfig{}.to_json();
  return p;
}

// A tiny random-weight architecture for `vidax make-demo` (demo.h): the whole pipeline (both
// tokenizers, both text encoders, the DiT with its token refiner and guidance embedding, the VAE
// decoder tiled as the reference) in seconds; its videos are noise.
Preset tiny_demo() {
  Preset p = t2v(kT2VTinyDemo,
                 "tiny random-weight HunyuanVideo 1.0 architecture written by `vidax make-demo` (noise-like output)",
                 32, 32);
  p.variant.demo = true;
  pipeline::Defaults& d = p.variant.defaults;
  d.frames = 5;
  d.steps = 4;
  d.precision = "fp32";
  p.dit = {{"patch_size", {1, 2, 2}},     {"in_channels", 16},        {"out_channels", 16},
           {"hidden_size", 32},           {"heads_num", 2},           {"mlp_width_ratio", 2.0},
           {"mlp_act_type", "gelu_tanh"}, {"mm_double_blocks_depth", 1}, {"mm_single_blocks_depth", 1},
           {"rope_dim_list", {4, 6, 6}},  {"qkv_bias", true},         {"qk_norm", true},
           {"qk_norm_type", "rms"},       {"guidance_embed", true},   {"text_projection", "single_refiner"},
           {"use_attention_mask", true},  {"text_states_dim", 32},    {"text_states_dim_2", 16}};
  VAEConfig vae;
  vae.block_out_channels = {4, 4, 8, 8};
  vae.layers_per_block = 1;
  vae.norm_num_groups = 2;
  vae.sample_size = 32;
  p.vae = vae.to_json();
  p.text_len = 32;
  // The demo tokenizers' vocabularies (demo.h): the LLM's table has room to spare (as
  // llava-llama-3-8b's 128320 rows for 128257 tokens), CLIP's is exactly 2 x 256 byte symbols + 2.
  p.llm = {{"model_type", "llama"},       {"vocab_size", 1024},           {"hidden_size", 32},
           {"intermediate_size", 64},     {"num_hidden_layers", 3},    {"num_attention_heads", 4},
           {"num_key_value_heads", 2},    {"head_dim", 8},             {"max_position_embeddings", 512},
           {"rms_norm_eps", 1e-5},        {"hidden_act", "silu"},
           {"rope_parameters", {{"rope_type", "default"}, {"rope_theta", 500000.0}}}};
  p.clip = {{"model_type", "clip_text_model"}, {"vocab_size", 514},     {"hidden_size", 16},
            {"intermediate_size", 32},         {"num_hidden_layers", 2}, {"num_attention_heads", 2},
            {"max_position_embeddings", 77},   {"hidden_act", "quick_gelu"}, {"layer_norm_eps", 1e-5},
            {"eos_token_id", 2}};
  return p;
}

}  // namespace

const std::vector<Preset>& presets() {
  static const std::vector<Preset> all = {
      t2v(kT2V720p, "HunyuanVideo 1.0 text-to-video 13B (HYVideo-T/2-cfgdistill), 720p: 720x1280, 129 frames", 720,
          1280),
      t2v(kT2V544p, "HunyuanVideo 1.0 text-to-video 13B, the README's 540p setting: 544x960, 129 frames", 544, 960),
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
  throw Error(msg() << "unknown HunyuanVideo model '" << name << "'; known: " << known);
}

}  // namespace vidax::hunyuan
