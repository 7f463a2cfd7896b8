// The HunyuanVideo 1.0 video VAE ("884-16c-hy": official AutoencoderKLCausal3D,
// hyvideo/vae/autoencoder_kl_causal_3d.py + vae.py + unet_causal_3d_blocks.py; diffusers'
// AutoencoderKLHunyuanVideo has the same modules and state_dict names): 8x spatial and 4x temporal
// compression, 16 latent channels.
//
// Every conv is a CausalConv3d: replicate padding (kw/2, kw/2, kh/2, kh/2, kt-1, 0), i.e. the first
// frame is repeated kt-1 times in front and the edge pixels on each spatial side, then an unpadded
// Conv3d (its stride does the down-sampling). Levels down-sample space in the first
// log2(spatial_compression_ratio) levels and time in the two levels before the last (time stride 2
// over 4k+1 frames keeps the first frame on its own: 9 -> 5 -> 3); the decoder mirrors them with a
// nearest up-sampling whose first frame is up-sampled in space only. The mid-block attention is one
// head over all T*H*W positions with the reference's frame-causal mask (a position of frame f sees
// frames 0..f), after a GroupNorm over all positions.
//
// It runs the whole clip at once, as the reference does when tiling is off.
//
// Two layers, kept apart:
// - the official forward (AutoencoderKLCausal3D): encode_moments (quant_conv's moments, whose
//   DiagonalGaussianDistribution is posterior_of) and decode (decode(z).sample), raw: no latent
//   scaling, no clamp. The parity kinds hunyuan.vae.decode / .encode run these.
// - the pipeline's scaling around it (scaling_factor 0.476986, no shift), the step a HunyuanVideo
//   pipeline calls: encode_scaled multiplies the posterior's mode by the factor (the latent the
//   DiT works on, as HunyuanVideo-I2V gives it); decode_scaled divides by it before the decode and
//   maps the image to [0, 1], as the pipeline's decode_latents does (pipeline_hunyuan_video.py:
//   latents / scaling_factor, vae.decode, (image / 2 + 0.5).clamp(0, 1)).
//
// Parameters are taken by the official state_dict names (encoder.down_blocks.0.resnets.0.conv1.conv.weight,
// decoder.mid_block.attentions.0.to_q.weight, quant_conv.weight, ...).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"
#include "nn/params.h"

namespace vidax::hunyuan {

// AutoencoderKLCausal3D's init args (official names; diffusers' AutoencoderKLHunyuanVideo spells
// time_compression_ratio temporal_compression_ratio). Defaults = the published
// hunyuan-video-t2v-720p/vae/config.json.
struct VAEConfig {
  int64_t in_channels = 3;
  int64_t out_channels = 3;
  int64_t latent_channels = 16;
  std::vector<int64_t> block_out_channels{128, 256, 512, 512};
  int64_t layers_per_block = 2;
  int64_t norm_num_groups = 32;
  double scaling_factor = 0.476986;
  int64_t spatial_compression_ratio = 8;
  int64_t time_compression_ratio = 4;  // the reference supports 4 only
  bool mid_block_add_attention = true;
  int64_t sample_size = 256;  // the spatial tile of the reference's tiled decode (pixels)
  int64_t sample_tsize = 64;  // its temporal tile (frames)

  // The official config (AutoencoderKLCausal3D) or diffusers' (AutoencoderKLHunyuanVideo); throws
  // naming a field whose value this implementation does not have (another activation, block type,
  // time compression) or that breaks the model (a width not divisible by the groups).
  static VAEConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;  // official names
  bool operator==(const VAEConfig&) const = default;

  int64_t levels() const { return static_cast<int64_t>(block_out_channels.size()); }
  // Encoder level i halves H and W / halves T (decoder level i doubles them).
  bool spatial_down(int64_t i) const;
  bool temporal_down(int64_t i) const;
  int64_t spatial_factor() const;   // 2^(levels that halve space): 8 for the published VAE
  int64_t temporal_factor() const;  // 4
};

// Which halves to build (a pipeline that only decodes need not load the encoder).
struct VAEParts {
  bool encoder = true;  // encoder.* + quant_conv.*
  bool decoder = true;  // decoder.* + post_quant_conv.*
};

// The reference's tiled encode and decode (AutoencoderKLCausal3D.enable_spatial_tiling /
// enable_temporal_tiling): tiles of sample_size x sample_size pixels (sample_size / 8 latent
// pixels) and of sample_tsize frames (sample_tsize / 4 latent frames, one more overlapping frame
// in front), stepping by (1 - overlap) of the tile; each tile runs alone, the overlaps are blended
// linearly (blend_v / blend_h / blend_t, in row-major order on the already blended neighbours, as
// the reference's in-place blending leaves them) and the tiles cropped. Temporal tiling applies
// when the clip is longer than one temporal tile (spatial tiling inside each temporal tile when
// both are on), spatial when a side is longer than one tile. The result differs from the untiled
// one near the seams, as the reference's does.
struct VAETiling {
  bool spatial = false;
  bool temporal = false;
  static constexpr double kOverlap = 0.25;  // tile_overlap_factor, fixed in the reference
};

// The reference's DiagonalGaussianDistribution(moments): mean = the first latent_channels channels
// of the moments (= mode()), logvar = the rest clamped to [-30, 20].
struct VAEPosterior {
  Tensor mean;
  Tensor logvar;
};
VAEPosterior posterior_of(const Tensor& moments);

// Observes intermediate activations: called with an official module path ("decoder.up_blocks.1",
// "encoder", "quant_conv") and that module's output.
using VAETap = std::function<void(const std::string& module, const Tensor& output)>;

class HunyuanVAE {
 public:
  // compute: F32 or BF16 (parameters are cast to it explicitly; norms and softmax accumulate in
  // fp32). Takes every parameter of the selected parts by official name; call
  // params.expect_all_taken() afterwards for a strict load.
  HunyuanVAE(const VAEConfig& config, nn::ParamSource& params, VAEParts parts = {}, DType compute = DType::F32);
  ~HunyuanVAE();
  HunyuanVAE(HunyuanVAE&&) noexcept;
  HunyuanVAE& operator=(HunyuanVAE&&) noexcept;

  // The official state_dict's names and shapes for `config` and `parts`, in build order (no data).
  static std::vector<std::pair<std::string, Shape>> parameter_shapes(const VAEConfig& config, VAEParts parts = {});

  const VAEConfig& config() const { return config_; }

  // video [B, in_channels, F, H, W], F = 4k+1, H and W multiples of spatial_factor() ->
  // moments [B, 2 latent_channels, k+1, H/8, W/8] (quant_conv's output: mean then logvar).
  Tensor encode_moments(const Tensor& video, const VAETap& tap = {}) const;
  // The pipeline's encode: the posterior's mode (the mean half of the moments) times scaling_factor.
  Tensor encode_scaled(const Tensor& video, const VAETap& tap = {}) const;
  // latent [B, latent_channels, F', h, w] (unscaled) -> video [B, out_channels, 1 + 4 (F'-1), 8h, 8w],
  // not clamped (vae.decode).
  Tensor decode(const Tensor& latent, const VAETap& tap = {}) const;
  // The pipeline's decode: latent / scaling_factor, decode, (image / 2 + 0.5).clamp(0, 1).
  Tensor decode_scaled(const Tensor& z, const VAETap& tap = {}) const;

  // The same, tiled (VAETiling; untiled when the input fits one tile). No taps: each tile runs alone.
  Tensor encode_moments_tiled(const Tensor& video, const VAETiling& tiling) const;
  Tensor encode_scaled_tiled(const Tensor& video, const VAETiling& tiling) const;
  Tensor decode_tiled(const Tensor& latent, const VAETiling& tiling) const;
  Tensor decode_scaled_tiled(const Tensor& z, const VAETiling& tiling) const;

  // Throws naming the nearest valid sizes when a video (F, H, W) or latent (F', h, w) is not one
  // the VAE takes.
  void check_video(const Shape& video) const;
  void check_latent(const Shape& latent) const;

  struct Encoder;
  struct Decoder;

 private:
  // encoder + quant_conv / post_quant_conv + decoder on any input size (the tiles'), no checks.
  Tensor run_encoder(const Tensor& video, const VAETap& tap) const;
  Tensor run_decoder(const Tensor& latent, const VAETap& tap) const;
  Tensor spatial_tiled_encode(const Tensor& video) const;
  Tensor temporal_tiled_encode(const Tensor& video, bool spatial) const;
  Tensor spatial_tiled_decode(const Tensor& latent) const;
  Tensor temporal_tiled_decode(const Tensor& latent, bool spatial) const;
  Tensor mode_scaled(const Tensor& moments) const;
  Tensor to_unit_range(const Tensor& image) const;

  VAEConfig config_;
  DType compute_;
  std::unique_ptr<Encoder> encoder_;
  std::unique_ptr<Decoder> decoder_;
};

// Parity kinds hunyuan.vae.decode and hunyuan.vae.encode (docs/parity.md).
void register_vae_parity_kinds();

}  // namespace vidax::hunyuan
