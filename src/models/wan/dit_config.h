// Wan 2.1 DiT configuration: the official WanModel init args
// (wan/modules/model.py) or diffusers' WanTransformer3DModel config, parsed
// into one struct. The model-defining fields are read by the translator's parser
// (translate::wan::DitConfig::from_json, with each class's defaults: the official
// config.json omits patch_size, text_dim, qk_norm, cross_attn_norm, window_size,
// which WanModel lists in ignore_for_config); from_json adds the engine's own
// fields (layout, RoPE table length, image width) and checks what runs. The
// struct's defaults are WanModel's.
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vidax::wan {

enum class DiTLayout { Original, Diffusers };  // which parameter names the config came with

struct DiTConfig {
  std::string model_type = "t2v";  // t2v | i2v | flf2v | ti2v | vace
  std::array<int64_t, 3> patch_size{1, 2, 2};
  int64_t text_len = 512;  // context rows after zero-padding (diffusers: 512, hard-coded there)
  int64_t in_dim = 16;
  int64_t dim = 2048;
  int64_t ffn_dim = 8192;
  int64_t freq_dim = 256;
  int64_t text_dim = 4096;
  int64_t out_dim = 16;
  int64_t num_heads = 16;
  int64_t num_layers = 32;
  bool qk_norm = true;
  bool cross_attn_norm = true;
  double eps = 1e-6;
  int64_t rope_max_seq_len = 1024;  // positions per axis in the RoPE table (rope_params(1024, ...))
  // I2V / FLF2V: CLIP feature width (MLPProj(1280, dim)) and tokens per image.
  int64_t image_dim = 1280;
  int64_t image_tokens = 257;
  DiTLayout layout = DiTLayout::Original;
  // VACE (VaceWanModel): vace block j runs beside the main blocks and its hint is added to the
  // output of blocks.vace_layers[j]; the vace context has vace_in_dim channels.
  std::vector<int64_t> vace_layers;
  int64_t vace_in_dim = 0;

  int64_t head_dim() const { return dim / num_heads; }
  bool has_image_input() const { return model_type == "i2v" || model_type == "flf2v"; }
  bool is_vace() const { return model_type == "vace"; }
  int64_t patch_volume() const { return patch_size[0] * patch_size[1] * patch_size[2]; }
  // RoPE split of the head dim in real channels: t, h, w = d - 4*(d/6), 2*(d/6), 2*(d/6).
  std::array<int64_t, 3> rope_axis_dims() const;

  // Either spelling; throws vidax::Error on a config that is neither or is inconsistent.
  static DiTConfig from_json(const nlohmann::json& j);
  // "wan2.1-t2v-1.3b" | "wan2.1-t2v-14b"
  static DiTConfig preset(const std::string& name);
  void validate() const;
  nlohmann::json to_json() const;  // official spelling
};

}  // namespace vidax::wan
