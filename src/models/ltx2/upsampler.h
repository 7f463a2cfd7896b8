// The LTX-2 latent upsampler (ltx_core.model.upsampler.LatentUpsampler): a video VAE latent
// [B, C, F, H, W] (un-normalized: the caller's upsample_video() below un-normalizes and normalizes
// it with the video VAE's per-channel statistics, as the reference's upsample_video does) -> the
// upsampled latent. initial_conv (k3, pad 1) -> GroupNorm(32) -> SiLU -> res_blocks -> upsampler ->
// post_upsample_res_blocks -> final_conv. The upsampler is one of: spatial x2 (a per-frame Conv2d to
// 4 C + 2-D pixel shuffle), the rational resampler (a per-frame Conv2d to num^2 C, pixel shuffle by
// num, the 5x5 binomial blur at stride den: x0.75, x1.5, x2, x4), temporal x2 (a Conv3d to 2 C +
// time shuffle, the first frame dropped) or both x2 (a Conv3d to 8 C + 3-D shuffle, the first frame
// dropped). dims 3 runs every other conv as a Conv3d over the clip; dims 2 runs every conv and norm
// per frame (spatial x2 only: the reference's other dims-2 paths fail in its own forward).
// Parameters by the official state dict names (initial_conv.weight, res_blocks.0.norm2.bias,
// upsampler.0.weight / upsampler.conv.weight + upsampler.blur_down.kernel, final_conv.bias, ...).
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/ltx2/video_vae_blocks.h"
#include "nn/params.h"

namespace vidax::ltx2 {

// LatentUpsamplerConfigurator.from_metadata's `config` keys, same names and defaults (the published
// x2 checkpoint: 128 / 512 / 4 / dims 3 / spatial). Unknown keys are errors; `_class_name`, when
// present, must be LatentUpsampler.
struct UpsamplerConfig {
  int64_t in_channels = 128;
  int64_t mid_channels = 512;
  int64_t num_blocks_per_stage = 4;
  int64_t dims = 3;
  bool spatial_upsample = true;
  bool temporal_upsample = false;
  double spatial_scale = 2.0;
  bool rational_resampler = false;

  static UpsamplerConfig from_json(const nlohmann::json& j);
  // The rational resampler's (num, den) for spatial_scale (_rational_for_scale).
  std::pair<int64_t, int64_t> rational() const;
};

// (module path, the module's output): initial_conv, res_blocks.<i>, upsampler (the temporal
// upsamplers' output before the first frame is dropped), post_upsample_res_blocks.<i>, final_conv;
// always [B, C, F, H, W] (a dims-2 per-frame tensor is given in that layout).
using UpsamplerTap = std::function<void(const std::string& module, const Tensor& output)>;

class LatentUpsampler {
 public:
  // Takes every parameter from params under prefix + official name, cast to compute.
  LatentUpsampler(UpsamplerConfig cfg, nn::ParamSource& params, const std::string& prefix = "",
                  DType compute = DType::F32);
  // latent [B, in_channels, F, H, W] in the compute dtype -> [B, in_channels, F', H', W']:
  // spatial x s: H' = H s, W' = W s (rational: the blur's stride-den conv of H num); temporal:
  // F' = 2 F - 1.
  Tensor forward(const Tensor& latent, const UpsamplerTap& tap = {}) const;
  const UpsamplerConfig& config() const { return cfg_; }

 private:
  struct Conv {  // weight [O, C, 3, 3, 3] (Conv3d) or [O, C, 1, 3, 3] (a per-frame Conv2d)
    Tensor w, b;
  };
  struct Norm {  // GroupNorm(32, eps 1e-5)
    Tensor w, b;
  };
  struct ResBlock {
    Conv conv1, conv2;
    Norm norm1, norm2;
  };
  Conv take_conv(const vae::Loader& l, const std::string& name, int64_t in, int64_t out, bool per_frame) const;
  Norm take_norm(const vae::Loader& l, const std::string& name, int64_t channels) const;
  Tensor conv(const Tensor& x, const Conv& c) const;
  Tensor norm(const Tensor& x, const Norm& n) const;
  Tensor res_block(const Tensor& x, const ResBlock& r) const;
  Tensor upsample(const Tensor& x) const;
  UpsamplerConfig cfg_;
  DType compute_;
  Conv initial_conv_, final_conv_, up_conv_;
  Norm initial_norm_;
  std::vector<ResBlock> res_blocks_, post_blocks_;
  std::optional<Tensor> blur_;  // the rational resampler's blur_down.kernel [1, 1, 1, 5, 5] (den > 1)
};

// upsample_video: stats.normalize(upsampler(stats.un_normalize(latent))): a normalized latent (the
// video VAE encoder's output, the DiT's latent) in, a normalized latent out; stats are the video
// VAE's per_channel_statistics (the reference takes them from the VideoEncoder).
Tensor upsample_video(const Tensor& latent, const vae::PerChannelStatistics& stats, const LatentUpsampler& upsampler);

// Kind ltx2.upsampler (docs/parity.md): a golden's LatentUpsampler (config = the checkpoint
// metadata's `config`), input.latent -> output, inter.<module path>.
void register_upsampler_parity_kinds();

}  // namespace vidax::ltx2
