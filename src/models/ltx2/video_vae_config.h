// The LTX-2 video VAE's configuration: the `vae` dict of the bundled checkpoint's metadata
// (`config.vae`), read as ltx_core's model_configurator reads it (_build_conv_video_decoder for
// the decoder, _prepare_video_encoder_kwargs for the encoder, flat CausalVideoAutoencoder layout),
// with its defaults. The block lists are the checkpoint's own: ["res_x", {"num_layers": 5}],
// ["compress_all", {"residual": true, "multiplier": 2}], ...; the decoder's list is in encoder
// order (the decoder runs it reversed, as the reference does).
//
// What is refused, with an error naming it: the DiffusionVideoDecoder (`_class_name` other than
// CausalVideoAutoencoder, or the nested `encoder` / `decoder` layout of CausalDiffusionVAE), 2-D and
// dual (2, 1) convolutions (`dims` other than 3), `attn_res_x` (the reference's own constructor
// fails on it: UNetMidBlock3D takes no attention_head_dim), inject_noise on res_x_y (the reference
// fails on it: its noise scales have the input's width) and latent_log_var "none" (the reference's
// encoder halves its channels then normalises them with the full statistics and fails).
#pragma once
#include <array>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace vidax::ltx2 {

enum class VaeNorm { PixelNorm, GroupNorm };
enum class VaePadding { Zeros, Reflect, Replicate, Circular };
enum class VaeLogVar { PerChannel, Uniform, Constant };

// One entry of encoder_blocks / decoder_blocks: the name and its parameters (an int is num_layers).
struct VaeBlock {
  std::string name;
  int64_t num_layers = 1;             // res_x
  std::optional<int64_t> multiplier;  // the reference's default depends on the block and side
  bool residual = false;              // decoder compress_all
  bool inject_noise = false;          // decoder res_x / res_x_y

  // Time and space strides of a compress_* block ({1, 1, 1} otherwise), from its name.
  std::array<int64_t, 3> stride() const;
};

struct VideoVaeConfig {
  int64_t dims = 3;
  int64_t in_channels = 3;   // encoder input (RGB)
  int64_t out_channels = 3;  // decoder output (RGB)
  int64_t latent_channels = 128;
  std::vector<VaeBlock> encoder_blocks;
  std::vector<VaeBlock> decoder_blocks;
  int64_t patch_size = 4;
  VaeNorm norm_layer = VaeNorm::PixelNorm;
  VaeLogVar latent_log_var = VaeLogVar::Uniform;
  bool causal_decoder = false;
  bool timestep_conditioning = true;  // the configurator's default (diffusers' AutoencoderKLLTX2Video: false)
  VaePadding decoder_padding = VaePadding::Reflect;  // spatial_padding_mode (default reflect)
  // spatial_padding_mode when given, else encoder_spatial_padding_mode, else zeros (the
  // configurator reads the shared key first for the flat layout).
  VaePadding encoder_padding = VaePadding::Zeros;
  int64_t decoder_base_channels = 128;

  // The `vae` config dict, or a checkpoint metadata config holding it under "vae". Throws naming a
  // key or value this implementation does not run (see the header comment) or an unknown key.
  static VideoVaeConfig from_json(const nlohmann::json& j);

  // Scale factors derived from a block list (SpatioTemporalScaleFactors.from_blocks): time
  // 2^(compress_time* + compress_all*), space patch_size * 2^(compress_space* + compress_all*).
  int64_t encoder_time_factor() const;
  int64_t encoder_space_factor() const;
  int64_t decoder_time_factor() const;
  int64_t decoder_space_factor() const;
  // The decoder's widest width (conv_in's output): decoder_base_channels times the multipliers of
  // its compress_* (default 1) and res_x_y (default 2) blocks.
  int64_t decoder_bottleneck_channels() const;
};

// Checkpoint buffers no module of the reference has, which its non-strict load_state_dict leaves
// unused: per_channel_statistics.channel and .mean-of-stds (the LTX-2.0 checkpoint carries both;
// diffusers' converter drops them too) and .mean-of-stds_over_std-of-means (LTX-Video's). `name`
// as the module sees it (no vae. prefix). A strict loader drops these and nothing else.
bool is_unused_checkpoint_buffer(const std::string& name);

}  // namespace vidax::ltx2
