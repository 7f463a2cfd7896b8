#include "pipeline/wan_presets.h"

#include "core/error.h"

namespace vidax::pipeline {

using nlohmann::json;

const std::string& wan21_default_negative_prompt() {
  // wan/configs/shared_config.py, sample_neg_prompt (verbatim).
  static const std::string s =
      "色调艳丽，过曝，静态，细节模糊不清，字幕，风格，作品，画作，画面，静止，整体发灰，最差质量，低质量，"
      "JPEG压缩残留，丑陋的，残缺的，多余的手指，画得不好的手部，画得不好的脸部，畸形的，毁容的，形态畸形的肢体，"
      "手指融合，静止不动的画面，杂乱的背景，三条腿，背景人很多，倒着走";
  return s;
}

namespace {

json wan_dit(int64_t dim, int64_t ffn_dim, int64_t heads, int64_t layers, int64_t freq_dim = 256,
             int64_t text_dim = 4096) {
  return json{{"model_type", "t2v"}, {"patch_size", {1, 2, 2}}, {"text_len", 512}, {"in_dim", 16},
              {"dim", dim},          {"ffn_dim", ffn_dim},      {"freq_dim", freq_dim}, {"text_dim", text_dim},
              {"out_dim", 16},       {"num_heads", heads},      {"num_layers", layers}, {"window_size", {-1, -1}},
              {"qk_norm", true},     {"cross_attn_norm", true}, {"eps", 1e-6}};
}

// WanVAE's _video_vae(): dim 96, z_dim 16, dim_mult [1,2,4,4], 2 res blocks, no attention scales.
json wan_vae(int64_t dim) {
  return json{{"dim", dim},           {"z_dim", 16}, {"dim_mult", {1, 2, 4, 4}}, {"num_res_blocks", 2},
              {"attn_scales", json::array()}, {"temperal_downsample", {false, true, true}}};
}

// umt5_xxl(encoder_only=True): T5Encoder args.
json umt5(int64_t vocab, int64_t dim, int64_t dim_attn, int64_t dim_ffn, int64_t heads, int64_t layers) {
  return json{{"vocab", vocab},     {"dim", dim},           {"dim_attn", dim_attn}, {"dim_ffn", dim_ffn},
              {"num_heads", heads}, {"num_layers", layers}, {"num_buckets", 32},    {"shared_pos", false}};
}

std::vector<WanT2VPreset> make_presets() {
  std::vector<WanT2VPreset> v;
  WanT2VPreset small;
  small.name = "wan2.1-t2v-1.3b";
  small.description = "Wan 2.1 text-to-video 1.3B (Wan-AI/Wan2.1-T2V-1.3B), 480p";
  small.dit = wan_dit(1536, 8960, 12, 30);
  small.vae = wan_vae(96);
  small.t5 = umt5(256384, 4096, 4096, 10240, 64, 24);
  small.negative_prompt = wan21_default_negative_prompt();
  v.push_back(small);

  WanT2VPreset big = small;
  big.name = "wan2.1-t2v-14b";
  big.description = "Wan 2.1 text-to-video 14B (Wan-AI/Wan2.1-T2V-14B), 720p or 480p";
  big.height = 720;  // generate.py's default size 1280*720 (W*H)
  big.width = 1280;
  big.dit = wan_dit(5120, 13824, 40, 40);
  v.push_back(big);

  WanT2VPreset tiny = small;
  tiny.name = kTinyDemoModel;
  tiny.description = "tiny random-weight Wan 2.1 architecture written by `vidax make-demo` (noise-like output)";
  tiny.frames = 9;
  tiny.height = 64;
  tiny.width = 96;
  tiny.steps = 8;
  tiny.precision = "fp32";
  tiny.dit = wan_dit(64, 128, 2, 2, /*freq_dim=*/64, /*text_dim=*/32);
  tiny.vae = wan_vae(4);
  tiny.t5 = umt5(/*vocab: set from the demo tokenizer*/ 0, 32, 32, 64, 2, 2);
  tiny.vae_file = "Wan2.1_VAE.safetensors";
  tiny.t5_file = "models_t5_umt5-xxl-enc-bf16.safetensors";
  v.push_back(tiny);
  return v;
}

}  // namespace

const std::vector<WanT2VPreset>& wan_t2v_presets() {
  static const std::vector<WanT2VPreset> presets = make_presets();
  return presets;
}

const WanT2VPreset& wan_t2v_preset(const std::string& name) {
  std::string known;
  for (const auto& p : wan_t2v_presets()) {
    if (p.name == name) return p;
    known += (known.empty() ? "" : ", ") + p.name;
  }
  throw Error(msg() << "unknown model '" << name << "'; known: " << known);
}

}  // namespace vidax::pipeline
