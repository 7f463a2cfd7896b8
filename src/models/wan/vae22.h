// The Wan 2.2 video VAE (official `WanVAE_` of Wan-Video/Wan2.2 wan/modules/vae2_2.py, wrapped by
// `Wan2_2_VAE`): the TI2V-5B autoencoder, 16x spatial and 4x temporal compression, 48 latent
// channels.
//
// What differs from the Wan 2.1 VAE (vae.h), whose blocks it reuses (vae_blocks.h):
// - the video is patchified 2x2 first (3 -> 12 channels, "b c f (h q) (w r) -> b (c r q) f h w")
//   and the decoder's 12 output channels unpatchified;
// - each encoder level is a Down_ResidualBlock: its residual blocks and Resample plus a parameter-
//   free shortcut, AvgDown3D (space/time to channels, then the mean over channel groups), added to
//   the level's output; each decoder level an Up_ResidualBlock with DupUp3D (channels repeated,
//   then channels to space/time; the first chunk drops its first factor_t - 1 frames);
// - the upsampling convs keep their channels (Wan 2.1's halve them);
// - the decoder has its own width (dec_dim) and the wrapper its own 48 means and stds.
// It runs chunked as the reference: encode in chunks of 1, 4, 4, ... frames, decode one latent frame
// at a time, with the causal feature cache.
#pragma once
#include <cstdint>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/wan/vae.h"

namespace vidax::wan {

// WanVAE_'s init args (vae2_2.py). Defaults = the published Wan2.2_VAE.pth (Wan2_2_VAE's:
// c_dim 160, z_dim 48, dim_mult [1, 2, 4, 4], temperal_downsample [False, True, True]; WanVAE_'s
// dec_dim 256, num_res_blocks 2).
struct Wan22VAEConfig {
  int64_t dim = 160;
  int64_t dec_dim = 256;
  int64_t z_dim = 48;
  std::vector<int64_t> dim_mult{1, 2, 4, 4};
  int64_t num_res_blocks = 2;
  std::vector<double> attn_scales{};  // must be empty (the reference builds no attention from it)
  std::vector<bool> temperal_downsample{false, true, true};
  static constexpr int64_t kPatch = 2;  // patchify(x, patch_size=2), fixed in the reference

  // The official init args (dim, dec_dim, z_dim, dim_mult, num_res_blocks, attn_scales,
  // temperal_downsample, dropout); throws naming a field it does not know the value of.
  static Wan22VAEConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
  int64_t temporal_factor() const;  // 4 for the published VAE
  int64_t spatial_factor() const;   // 16 (patch 2 x three halvings)
};

// Wan2_2_VAE's 48 latent means and stds (the wrapper's constants).
LatentScale wan22_latent_scale();

class Wan22VAE {
 public:
  using Parts = WanVAEParts;
  Wan22VAE(const Wan22VAEConfig& config, const WeightLookup& weights, Parts parts = {}, DType compute = DType::F32);
  ~Wan22VAE();
  Wan22VAE(Wan22VAE&&) noexcept;
  Wan22VAE& operator=(Wan22VAE&&) noexcept;

  const Wan22VAEConfig& config() const { return config_; }
  // The official state_dict's names and shapes for `config` (both halves, in build order),
  // without reading anything: the demo's random weights and the memory plan's counts.
  static std::vector<std::pair<std::string, Shape>> parameter_shapes(const Wan22VAEConfig& config, Parts parts = {});
  const std::vector<std::string>& parameter_names() const { return names_; }

  // video [B, 3, F, H, W], F = 4k+1, H and W multiples of 16 -> mu [B, z_dim, k+1, H/16, W/16].
  Tensor encode(const Tensor& video, const Tap& tap = {}) const;
  // mu [B, z_dim, F', h, w] -> video [B, 3, 1 + 4 (F'-1), 16h, 16w], not clamped.
  Tensor decode(const Tensor& mu, const Tap& tap = {}) const;
  // The wrapper: encode then (mu - mean) * (1/std) as fp32; z / (1/std) + mean, decode, clamp(-1, 1).
  Tensor encode_normalized(const Tensor& video, const LatentScale& scale, const Tap& tap = {}) const;
  Tensor decode_normalized(const Tensor& z, const LatentScale& scale, const Tap& tap = {}) const;

  struct Encoder;
  struct Decoder;

 private:
  Wan22VAEConfig config_;
  DType compute_;
  std::vector<std::string> names_;
  std::unique_ptr<Encoder> encoder_;
  std::unique_ptr<Decoder> decoder_;
  Tensor conv1_w_, conv1_b_, conv2_w_, conv2_b_;
};

// patchify / unpatchify of vae2_2.py (patch 2): [B, C, F, 2h, 2w] <-> [B, 4C, F, h, w], channel
// order (c, w offset, h offset).
Tensor vae22_patchify(const Tensor& x);
Tensor vae22_unpatchify(const Tensor& x);

// Parity kinds wan2.2.vae.decode and wan2.2.vae.encode (docs/parity.md).
void register_vae22_parity_kinds();

}  // namespace vidax::wan
