// The HunyuanVideo 1.5 video VAE: the official AutoencoderKLConv3D
// (hyvideo/models/autoencoders/hunyuanvideo_15_vae.py of Tencent-Hunyuan/HunyuanVideo-1.5; diffusers'
// AutoencoderKLHunyuanVideo15 is the same network under other state_dict names): 16x spatial and
// 4x temporal compression, 32 latent channels.
//
// Every 3x3x3 conv is a CausalConv3d (replicate padding, kt-1 frames in front: the 1.0 VAE's,
// hunyuan/vae_blocks.h). Norms are RMS_norm: F.normalize over the channels times sqrt(C) times a
// gamma (no bias). A resnet is norm1, SiLU, conv1, norm2, SiLU, conv2 plus the input (through a
// plain 1x1x1 Conv3d nin_shortcut when the width changes). Down-sampling is not strided: a conv to
// out / factor channels, then each 2x2 (x2 in time) cell moved to the channels ("b c (f r1) (h r2)
// (w r3) -> b (r1 r2 r3 c) f h w"), plus the input shuffled the same way and averaged over groups
// of factor * in / out channels; in the temporal levels the first frame is shuffled in space only
// and its result duplicated (its shortcut averaged over half the group). Up-sampling mirrors it: a
// conv to out * factor channels moved to space (and time), plus the input's channels repeated
// (repeat_interleave) and moved the same way; the first frame in space only, keeping the first half
// of its channels. Levels: the encoder halves space in its first log2(ffactor_spatial) levels and
// time in the last log2(ffactor_temporal) of those; the decoder doubles space in its first
// log2(ffactor_spatial) levels and time in its first log2(ffactor_temporal). The encoder's output
// adds the mid-block's output averaged over groups of channels; the decoder's input conv adds the
// latent's channels repeated. The mid-block attention is one head over all T*H*W positions under
// the frame-causal mask, its q/k/v/proj_out 1x1x1 convs.
//
// Two layers, kept apart (as the 1.0 VAE does):
// - the official forward, raw: encode_moments (the encoder's moments; posterior_of gives the
//   DiagonalGaussianDistribution) and decode (decode(z).sample, no clamp). The parity kinds
//   hunyuan1.5.vae.decode / .encode run these.
// - the pipeline's scaling around it (hyvideo/pipelines/hunyuan_video_pipeline.py):
//   encode_scaled = latent_dist.mode() * scaling_factor (its i2v reference-image latent; no shift),
//   decode_scaled = decode(z / scaling_factor (+ shift_factor when set and non-zero)), then
//   (video / 2 + 0.5).clamp(0, 1).
//
// Parameters are taken by the official state_dict names (encoder.down.0.block.0.conv1.conv.weight,
// decoder.mid.attn_1.q.weight, encoder.norm_out.gamma, ...).
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "models/hunyuan/vae.h"  // VAEParts, VAEPosterior, posterior_of, VAETap: the same for both VAEs
#include "nn/params.h"

namespace vidax::hunyuan15 {

using hunyuan::posterior_of;
using hunyuan::VAEParts;
using hunyuan::VAEPosterior;
using hunyuan::VAETap;

// AutoencoderKLConv3D's init args (official names; diffusers' AutoencoderKLHunyuanVideo15 spells
// ffactor_spatial / ffactor_temporal spatial_compression_ratio / temporal_compression_ratio and has
// no sample_size, sample_tsize, shift_factor). Defaults: the published VAE's structure (diffusers'
// defaults, the values the official pipeline reads: 32 latent channels, 16x / 4x, scaling_factor
// 1.03682, no shift). sample_size is the spatial tile when a tiling gives none.
struct VAEConfig {
  int64_t in_channels = 3;
  int64_t out_channels = 3;
  int64_t latent_channels = 32;
  std::vector<int64_t> block_out_channels{128, 256, 512, 1024, 1024};
  int64_t layers_per_block = 2;
  int64_t ffactor_spatial = 16;
  int64_t ffactor_temporal = 4;
  int64_t sample_size = 256;
  int64_t sample_tsize = 64;  // the reference's temporal tile; its temporal tiling raises, unused
  double scaling_factor = 1.03682;
  std::optional<double> shift_factor;
  bool downsample_match_channel = true;
  bool upsample_match_channel = true;

  // The official config or diffusers'; throws naming a field whose value the network cannot be
  // built with (a factor that is not a power of two, too few levels, widths the shuffles cannot
  // split).
  static VAEConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;  // official names
  bool operator==(const VAEConfig&) const = default;

  int64_t levels() const { return static_cast<int64_t>(block_out_channels.size()); }
  bool spatial_down(int64_t level) const;   // encoder level halves H, W (decoder level doubles them)
  bool encoder_temporal_down(int64_t level) const;
  bool decoder_temporal_up(int64_t level) const;
};

// The reference's spatial tiling (AutoencoderKLConv3D.spatial_tiled_encode / _decode after
// set_tile_sample_min_size(sample_size, overlap) and enable_spatial_tiling): pixel tiles of
// sample_size (latent tiles of sample_size // ffactor_spatial) stepping by int(tile * (1 -
// overlap)), the overlaps blended linearly over int(other tile * overlap) (blend_v then blend_h,
// on already blended neighbours, as the reference's in-place blending leaves them) and the tiles
// cropped to tile - blend. Applied when a side is longer than one tile. Its temporal tiling raises
// in the reference ("not supported for this VAE"): none here either.
struct VAETiling {
  bool spatial = false;
  int64_t sample_size = 0;  // 0: the config's sample_size
  double overlap = 0.25;    // tile_overlap_factor (the constructor's; set_tile_sample_min_size's default is 0.2)
  // What HunyuanVideo15Pipeline.get_vae_inference_config sets for a GPU of more than 21 GB
  // (sample_size 256, overlap 0.125; at most 21 GB: 128, 0.25), used by its decode.
  static VAETiling pipeline() { return {true, 256, 0.125}; }
};

class HunyuanVideo15VAE {
 public:
  // compute: F32 or BF16 (parameters cast to it explicitly; norms and softmax accumulate in fp32).
  // Takes every parameter of the selected parts by official name; call params.expect_all_taken()
  // afterwards for a strict load.
  HunyuanVideo15VAE(const VAEConfig& config, nn::ParamSource& params, VAEParts parts = {},
                    DType compute = DType::F32);
  ~HunyuanVideo15VAE();
  HunyuanVideo15VAE(HunyuanVideo15VAE&&) noexcept;
  HunyuanVideo15VAE& operator=(HunyuanVideo15VAE&&) noexcept;

  // The official state_dict's names and shapes for `config` and `parts`, in build order.
  static std::vector<std::pair<std::string, Shape>> parameter_shapes(const VAEConfig& config, VAEParts parts = {});

  const VAEConfig& config() const { return config_; }

  // video [B, in_channels, F, H, W], F = 4k+1, H and W multiples of 16 -> moments
  // [B, 2 latent_channels, k+1, H/16, W/16] (mean then logvar), the encoder's raw output.
  Tensor encode_moments(const Tensor& video, const VAETap& tap = {}) const;
  // latent [B, latent_channels, F', h, w] (unscaled) -> video [B, out_channels, 1 + 4 (F'-1), 16h, 16w].
  Tensor decode(const Tensor& latent, const VAETap& tap = {}) const;
  // The same, tiled (VAETiling; untiled when the input fits one tile). No taps: each tile runs alone.
  Tensor encode_moments_tiled(const Tensor& video, const VAETiling& tiling) const;
  Tensor decode_tiled(const Tensor& latent, const VAETiling& tiling) const;

  // The pipeline's steps: mode() * scaling_factor; z / scaling_factor (+ shift), decode, to [0, 1]
  // (F32). tiling: the pipeline decodes with VAETiling::pipeline() and encodes untiled.
  Tensor encode_scaled(const Tensor& video, const VAETiling& tiling = {}) const;
  Tensor decode_scaled(const Tensor& z, const VAETiling& tiling = VAETiling::pipeline()) const;

  // Throw naming the nearest valid sizes when a video (C, F, H, W) or latent (C) is not one the VAE takes.
  void check_video(const Shape& video) const;
  void check_latent(const Shape& latent) const;

  struct Encoder;
  struct Decoder;

 private:
  Tensor run_encoder(const Tensor& video, const VAETap& tap) const;
  Tensor run_decoder(const Tensor& latent, const VAETap& tap) const;

  VAEConfig config_;
  DType compute_;
  std::unique_ptr<Encoder> encoder_;
  std::unique_ptr<Decoder> decoder_;
};

// The VAE of a checkpoint folder as published (vae/ with config.json and
// diffusion_pytorch_model.safetensors, the files AutoencoderKLConv3D.from_pretrained and
// AutoencoderKLHunyuanVideo15.from_pretrained read; official or diffusers names, detected), or a
// single .safetensors file with `config` given. Strict: a missing or stray key is an error naming it.
HunyuanVideo15VAE load_vae(const std::string& path, VAEParts parts = {}, DType compute = DType::F32,
                           const std::optional<nlohmann::json>& config = std::nullopt);

}  // namespace vidax::hunyuan15
