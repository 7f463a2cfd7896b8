// The LTX-2 video VAE (Lightricks/LTX-2 ltx_core.model.video_vae, commit 400fd31): VideoEncoder
// (video_vae.py) and the convolutional decoder ConvVideoDecoder (conv_video_decoder.py), built from
// the checkpoint's `vae` config (VideoVaeConfig) and run on the whole clip as their forward does,
// or tiled as their tiled_decode / tiled_encode do (video_vae_tiling.cpp). The decoder's timestep
// conditioning and noise injection draw from a TorchGenerator in torch's order.
// LTX-2's published VAE: 128 latent channels, 32x spatial (patchify 4 then three x2 steps) and 8x
// temporal compression; F frames <-> 1 + (F - 1) / 8 latent frames.
//
// Both sides carry the per-channel latent statistics (per_channel_statistics.mean-of-means /
// std-of-means) and apply them themselves, as the reference's forwards do: the encoder returns the
// NORMALIZED posterior means ((mu - mean) / std, the latent the DiT works on), the decoder takes a
// normalized latent and un-normalizes it (x * std + mean) before conv_in. Its output is the raw
// video (about [-1, 1], not clamped); the pipeline's decode_video maps it to [0, 1] afterwards
// ((x + 1) / 2 clamped), which is not part of the forward.
//
// Parameters are taken by the official state_dict names of each half (conv_in.conv.weight,
// up_blocks.2.res_blocks.0.conv1.conv.weight, down_blocks.1.conv.conv.bias, conv_out.conv.weight,
// per_channel_statistics.std-of-means, ...) under a prefix (the parity kinds accept the bundled
// checkpoint's vae.decoder. / vae.encoder. / vae.per_channel_statistics. spellings too).
#pragma once
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "models/ltx2/video_vae_config.h"
#include "nn/params.h"

namespace vidax::ltx2 {

// Observes a module's output by its official path ("conv_in", "up_blocks.3", "conv_out").
using VaeTap = std::function<void(const std::string& module, const Tensor& output)>;

// ConvVideoDecoder.forward's other arguments, read only by a conditioned decoder
// (timestep_conditioning: decode-time noise, timestep embeddings; inject_noise: per-resnet noise).
struct DecoderConditioning {
  std::optional<std::vector<float>> timestep;  // [B]; default: decode_timestep 0.05 for each sample
  TorchGenerator* generator = nullptr;         // the noise's source (torch.Generator): required to draw
};

// TileSizeConfig (ltx_core/tiling.py): per axis a tile size and an overlap in video frames / pixels
// (tile_size 0: the axis is not tiled). TileSizeConfig.default() is frames (80, 24), height and width
// (768, 64).
struct VaeTileSize {
  int64_t tile_size = 0;
  int64_t overlap = 0;
};
struct VaeTiling {
  VaeTileSize frames, height, width;
  // {"frames": [tile_size, overlap], "height": [...], "width": [...]} (absent axes untiled).
  static VaeTiling from_json(const nlohmann::json& j);
};

class VideoDecoder {
 public:
  // Takes every decoder parameter (prefix + official name) and the statistics
  // (prefix + per_channel_statistics.*), cast to compute (F32 or BF16; norms accumulate in fp32).
  VideoDecoder(const VideoVaeConfig& config, nn::ParamSource& params, const std::string& prefix = "",
               DType compute = DType::F32);
  ~VideoDecoder();
  VideoDecoder(VideoDecoder&&) noexcept;

  // ConvVideoDecoder.forward(sample, timestep, generator): a normalized latent [B, latent_channels,
  // F', h, w] -> video [B, out_channels, 1 + t (F' - 1), s h, s w] (t = decoder_time_factor(),
  // s = decoder_space_factor()), in the input's dtype. A conditioned decoder first mixes in noise,
  // sample = 0.025 randn + 0.975 sample (drawn from cond.generator, in torch's order: this draw, then
  // each injecting resnet's two), and embeds timestep * timestep_scale_multiplier; an unconditioned
  // one refuses a timestep (the reference ignores it).
  Tensor forward(const Tensor& sample, const VaeTap& tap = {}, const DecoderConditioning& cond = {}) const;
  bool uses_noise() const;  // timestep_conditioning or any inject_noise: forward needs a generator
  // ConvVideoDecoder.tiled_decode(latent, tiling, generator), its chunks joined along time: the
  // latent cut by the tiling's splits (time: split_temporal_causal; space: split_by_size, in latent
  // units = size / scale factor), each tile decoded alone by forward (in the reference's order: time,
  // then rows, then columns; noise drawn from cond.generator tile after tile), weighted by its
  // trapezoidal masks and summed; divided by the summed masks only when they do not add up to 1.
  // Differs from forward near the seams, as the reference's does. No timestep (decode_video passes none).
  Tensor tiled_decode(const Tensor& latent, const VaeTiling& tiling, const DecoderConditioning& cond = {}) const;
  // Throws naming the problem when `latent` is not a shape forward takes.
  void check_latent(const Shape& latent) const;
  Shape output_shape(const Shape& latent) const;
  const VideoVaeConfig& config() const { return config_; }

  struct Impl;

 private:
  VideoVaeConfig config_;
  DType compute_;
  std::unique_ptr<Impl> impl_;
};

class VideoEncoder {
 public:
  // Takes every encoder parameter (prefix + official name) and the statistics.
  VideoEncoder(const VideoVaeConfig& config, nn::ParamSource& params, const std::string& prefix = "",
               DType compute = DType::F32);
  ~VideoEncoder();
  VideoEncoder(VideoEncoder&&) noexcept;

  // VideoEncoder.forward(sample): video [B, in_channels, F, H, W] in [-1, 1], F = 1 + t k, H and W
  // multiples of s (t = encoder_time_factor(), s = encoder_space_factor()) -> normalized latent
  // means [B, latent_channels, 1 + (F - 1) / t, H / s, W / s], in the input's dtype. The reference
  // crops a frame count that is not 1 + t k (with a warning); here it is an error naming the
  // nearest valid counts.
  Tensor forward(const Tensor& sample, const VaeTap& tap = {}) const;
  // VideoEncoder.tiled_encode(video, tiling): split on the latent grid (time causally), each tile's
  // video slice encoded alone by forward, weighted by its trapezoidal masks (latent units) and
  // summed; divided by the summed masks only when they do not add up to 1. Overlaps of tiled axes
  // must be at least 16 frames / 64 px (the reference's _validate_overlap).
  Tensor tiled_encode(const Tensor& video, const VaeTiling& tiling) const;
  void check_video(const Shape& video) const;
  Shape output_shape(const Shape& video) const;
  const VideoVaeConfig& config() const { return config_; }

  struct Impl;

 private:
  VideoVaeConfig config_;
  DType compute_;
  std::unique_ptr<Impl> impl_;
};

// Kinds ltx2.vae.decode and ltx2.vae.encode (docs/parity.md, docs/models/ltx2.md).
void register_video_vae_parity_kinds();

}  // namespace vidax::ltx2
