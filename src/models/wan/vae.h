// The Wan 2.1 video VAE (official `WanVAE_`, Wan-Video/Wan2.1 wan/modules/vae.py): a causal 3D
// convolutional autoencoder, 8x spatial and 4x temporal compression, 16 latent channels.
//
// It only runs the way the reference runs it: chunked, with a per-conv feature cache (CACHE_T = 2
// frames). The temporal down/up-sampling convs exist only in that mode, so the chunked path IS the
// model. Encode takes the video in chunks of 1, 4, 4, ... frames; decode one latent frame at a time.
// Activations are held frame by frame and released as soon as no conv window reads them, so a stage
// holds at most one chunk plus a few frames, and each causal conv's 2 cached frames
// (docs/models/wan-vae.md, Memory).
//
// Parameters are looked up by the official state_dict names (`encoder.conv1.weight`,
// `decoder.upsamples.3.time_conv.bias`, `conv2.weight`, ...); other layouts are translated into these.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace vidax::wan {

// WanVAE_'s init args (official names). Defaults = the published Wan2.1_VAE.pth.
struct WanVAEConfig {
  int64_t dim = 96;  // base channels (diffusers: base_dim)
  int64_t z_dim = 16;
  std::vector<int64_t> dim_mult{1, 2, 4, 4};
  int64_t num_res_blocks = 2;
  std::vector<double> attn_scales{};            // must be empty: the cached reference path has none
  std::vector<bool> temperal_downsample{false, true, true};  // sic, the reference's spelling

  // Reads the official init args or diffusers' AutoencoderKLWan config (base_dim, ...); throws on
  // options this implementation does not have (Wan 2.2's is_residual, patch_size, attention scales).
  static WanVAEConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;  // official names
  // Video frames <-> latent frames: F = 1 + 4 (F' - 1) with the default two temporal halvings.
  int64_t temporal_factor() const;
  int64_t spatial_factor() const;
};

// The WanVAE wrapper's latent statistics: z = (mu - mean) * (1 / std), mu = z / (1 / std) + mean,
// with 1 / std rounded to fp32 first exactly as the wrapper does.
struct LatentScale {
  std::vector<float> mean, std;
  static LatentScale wan21();  // the published 16-channel constants
  static LatentScale from_tensors(const Tensor& mean, const Tensor& std);
};

// Spatial tiling of the decode (`--vae-tile PIXELS`), with the semantics of diffusers'
// AutoencoderKLWan.tiled_decode: tiles of `tile` x `tile` output pixels stepping by `stride`
// (3/4 of the tile: diffusers' defaults are 256 and 192), each tile decoded over all frames
// with its own causal caches; the `tile - stride` overlap is blended linearly into the tile
// below (blend_v) and to the right (blend_h), in row-major order on the blended tiles, then
// each tile is cropped to stride x stride. Tiled only when the frame is larger than one tile.
struct VaeTiling {
  int64_t tile = 256, stride = 192;
  // --vae-tile PIXELS: a multiple of 32 (so the 3/4 stride is whole latent pixels), >= 64.
  static VaeTiling for_tile(int64_t pixels);
  int64_t tile_pixels() const { return tile; }
  int64_t overlap() const { return tile - stride; }
};

// Parameter source: official name -> tensor (throws naming the key when missing).
using WeightLookup = std::function<Tensor(const std::string& name)>;
// Observes intermediate activations: called with an official module path ("decoder.upsamples.3")
// and that module's output for ONE chunk (callers concatenate chunks along time, dim 2).
using Tap = std::function<void(const std::string& module, const Tensor& output)>;

// Which halves of the VAE to build (a pipeline that only decodes need not load the encoder).
struct WanVAEParts {
  bool encoder = true;  // encoder.* + conv1.*
  bool decoder = true;  // decoder.* + conv2.*
};

class WanVAE {
 public:
  using Parts = WanVAEParts;
  // Reads every parameter of the selected parts through `weights` (cast to `compute` dtype when it
  // differs: the reference runs fp32).
  WanVAE(const WanVAEConfig& config, const WeightLookup& weights, Parts parts = {},
         DType compute = DType::F32);
  ~WanVAE();
  WanVAE(WanVAE&&) noexcept;
  WanVAE& operator=(WanVAE&&) noexcept;

  const WanVAEConfig& config() const { return config_; }
  // The official names this instance reads (for strict coverage checks).
  const std::vector<std::string>& parameter_names() const { return names_; }

  // video [B, 3, F, H, W], F = 4k+1 -> mu [B, z_dim, k+1, H/8, W/8] (un-normalized, WanVAE_.encode
  // without the scale step).
  Tensor encode(const Tensor& video, const Tap& tap = {}) const;
  // mu [B, z_dim, F', h, w] (un-normalized) -> video [B, 3, 1 + 4 (F'-1), 8h, 8w], not clamped.
  Tensor decode(const Tensor& mu, const Tap& tap = {}) const;

  // What the WanVAE wrapper does: encode then normalize; denormalize, decode, clamp(-1, 1).
  Tensor encode_normalized(const Tensor& video, const LatentScale& scale, const Tap& tap = {}) const;
  Tensor decode_normalized(const Tensor& z, const LatentScale& scale, const Tap& tap = {}) const;
  // The same decodes in spatial tiles (VaeTiling); whole frames when the frame fits one tile.
  Tensor decode_tiled(const Tensor& mu, const VaeTiling& tiling, const Tap& tap = {}) const;
  Tensor decode_normalized(const Tensor& z, const LatentScale& scale, const VaeTiling* tiling,
                           const Tap& tap = {}) const;
  // How many tiles a latent of h x w latent pixels decodes in (1 when untiled).
  int64_t tile_count(int64_t latent_h, int64_t latent_w, const VaeTiling* tiling) const;

  struct Encoder;
  struct Decoder;

 private:
  WanVAEConfig config_;
  DType compute_;
  std::vector<std::string> names_;
  std::unique_ptr<Encoder> encoder_;
  std::unique_ptr<Decoder> decoder_;
  // WanVAE_'s top-level 1x1x1 convs: conv1 (after the encoder, 2z -> 2z), conv2 (before the decoder).
  Tensor conv1_w_, conv1_b_, conv2_w_, conv2_b_;
};

// Latent normalization on their own (pipelines that keep latents around use these).
Tensor normalize_latent(const Tensor& mu, const LatentScale& scale);
Tensor denormalize_latent(const Tensor& z, const LatentScale& scale);

// Parity kinds wan.vae.decode and wan.vae.encode (DESIGN.md §4).
void register_vae_parity_kinds();

}  // namespace vidax::wan
