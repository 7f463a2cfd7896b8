// The Wan 2.1 checkpoints as the translator sees them (the family's key maps,
// kept with the family; the UMT5 text encoder's are in text/umt5_keys.h): the
// DiT (WanModel) and the VAE (WanVAE_), each with
//  - a typed config that reads the original init args or the diffusers /
//    transformers config.json spelling,
//  - the engine's expected parameters (names = the official checkpoint's
//    state_dict names) with shapes, derived from the config,
//  - key maps for the layouts "original", "diffusers" and "comfyui".
// Sources: Wan2.1 wan/modules/{model,vae}.py; diffusers
// scripts/convert_wan_to_diffusers.py and transformer_wan.py /
// autoencoder_kl_wan.py. Checked against the
// key lists in tests/translate/data (tools/golden/wan_keylists.py).
#pragma once
#include <array>
#include <vector>

#include "translate/component.h"

namespace vidax::translate::wan {

struct DitConfig {
  std::string model_type = "t2v";  // t2v | i2v | flf2v | ti2v | vace
  std::array<int64_t, 3> patch_size{1, 2, 2};
  int64_t text_len = 512, in_dim = 16, dim = 1536, ffn_dim = 8960, freq_dim = 256, text_dim = 4096, out_dim = 16,
          num_heads = 12, num_layers = 30;
  bool qk_norm = true, cross_attn_norm = true;
  double eps = 1e-6;
  // VACE (VaceWanModel): the main blocks that take a hint, in vace block order (vace_blocks.j feeds
  // blocks.vace_layers[j]; the class default is every second layer), and the vace context's channels
  // (default in_dim). Empty / 0 for the other model types.
  std::vector<int64_t> vace_layers;
  int64_t vace_in_dim = 0;

  static DitConfig t2v_1_3b();
  static DitConfig t2v_14b();
  static DitConfig i2v_14b();
  static DitConfig ti2v_5b();  // Wan 2.2 TI2V-5B
  static DitConfig vace_1_3b();  // Wan2.1-VACE-1.3B (config.json: vace_layers 0, 5, .., 25, vace_in_dim 96)
  static DitConfig vace_14b();   // Wan2.1-VACE-14B (vace_layers 0, 5, .., 35)
  // WanModel init args, or a diffusers WanTransformer3DModel config, with the
  // defaults of the class that reads them; throws on neither and on a field of
  // the wrong type. The one parser of these fields: the engine's wan::DiTConfig
  // reads its own extra fields on top of it.
  static DitConfig from_json(const Json& j);
  Json to_json() const;  // WanModel init args
  bool operator==(const DitConfig&) const = default;
};

struct VaeConfig {
  int64_t dim = 96, z_dim = 16, num_res_blocks = 2;
  std::vector<int64_t> dim_mult{1, 2, 4, 4};
  std::vector<double> attn_scales{};
  std::vector<bool> temperal_downsample{false, true, true};

  // WanVAE_ init args, or a diffusers AutoencoderKLWan config (base_dim, ...).
  static VaeConfig from_json(const Json& j);
  Json to_json() const;
  bool operator==(const VaeConfig&) const = default;
};

// True for a diffusers WanTransformer3DModel config (its class name, else its parameter names).
bool is_diffusers_dit_config(const Json& j);

ParamSpec dit_params(const DitConfig& c);
ParamSpec vae_params(const VaeConfig& c);

KeyMap dit_keymap(const std::string& layout);
KeyMap vae_keymap(const std::string& layout, const VaeConfig& c);
// The Wan 2.2 VAE (vae2_2.py's WanVAE_, 48 channels) of `levels` = len(dim_mult) levels of
// `num_res_blocks` residual blocks: "original" (Wan2.2_VAE.pth and ComfyUI's repackaged
// wan2.2_vae.safetensors, the same names) or "diffusers" (AutoencoderKLWan with is_residual:
// down_blocks.{i}.resnets / .downsampler, up_blocks.{i}.resnets / .upsampler).
KeyMap vae22_keymap(const std::string& layout, size_t levels, int64_t num_res_blocks);
// "diffusers" when the names are AutoencoderKLWan's (conv_in of either half), else "original".
std::string vae22_layout_of(const std::vector<std::string>& names);

const Component& dit_component();   // "wan2.1-dit"
const Component& vae_component();          // "wan2.1-vae"
const Component& vae_encoder_component();  // "wan2.1-vae-encoder": encoder.* and conv1.* only
const Component& vae_decoder_component();  // "wan2.1-vae-decoder": conv2.* and decoder.* only
// "wan2.2-vae": the Wan 2.2 VAE (vae22_component.cpp; its parameters are Wan22VAE::parameter_shapes,
// its diffusers names vae22_keymap's), original (= ComfyUI) and diffusers layouts.
const Component& vae22_component();
const Component& vae22_encoder_component();  // "wan2.2-vae-encoder": encoder.* and conv1.* only
const Component& vae22_decoder_component();  // "wan2.2-vae-decoder": decoder.* and conv2.* only

}  // namespace vidax::translate::wan
