// The LTX-2 audio VAE decoder (ltx_core.model.audio_vae.audio_vae.AudioDecoder): a normalized audio latent
// [B, z_channels, frames, latent mel bins] -> a mel spectrogram [B, out_ch, time, mel_bins] (the vocoder's
// input). Un-normalisation with the per-channel statistics over the patchified latent (one statistic per
// (channel, mel bin)), conv_in, mid (resnet, attention, resnet), the up path (per level from the deepest:
// num_res_blocks + 1 resnets, attention where attn_resolutions hits, a 2x nearest upsample + conv that drops
// the first row along the causal axis), norm_out, SiLU, conv_out, then the crop / zero pad to (4 frames - 3
// when causal, else 4 frames) x mel_bins. Parameters by the official state dict names (conv_in.conv.weight,
// up.1.block.0.nin_shortcut.conv.bias, mid.attn_1.q.weight, per_channel_statistics.std-of-means, ...).
// The encoder (AudioEncoder) below.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/ltx2/audio_vae_blocks.h"
#include "nn/params.h"

namespace vidax::ltx2 {

// AudioDecoder's init args as AudioDecoderConfigurator reads them from the checkpoint's `audio_vae` dict
// (model.params.ddconfig, model.params.sampling_rate, preprocessing.stft.{hop_length, causal},
// ddconfig.mel_bins or preprocessing.mel.n_mel_channels or variables.mel_bins), same defaults.
struct AudioVaeConfig {
  int64_t ch = 128;
  int64_t out_ch = 2;
  std::vector<int64_t> ch_mult{1, 2, 4};
  int64_t num_res_blocks = 2;
  std::vector<int64_t> attn_resolutions{8, 16, 32};
  int64_t resolution = 256;
  int64_t z_channels = 8;
  audio_vae::Norm::Kind norm_type = audio_vae::Norm::Kind::Pixel;
  audio_vae::Causality causality_axis = audio_vae::Causality::Height;
  bool mid_block_add_attention = true;
  int64_t sample_rate = 16000;
  int64_t mel_hop_length = 160;
  bool is_causal = true;
  std::optional<int64_t> mel_bins;  // none: the latent's mel bins
  // AudioEncoder's further args (AudioEncoderConfigurator): the decoder ignores them.
  int64_t in_channels = 2;
  bool double_z = true;
  bool resamp_with_conv = true;       // false: 2x2 average pooling (needs causality_axis none)
  std::string attn_type = "vanilla";  // vanilla or none (linear: the reference raises)
  int64_t n_fft = 1024;

  // j: the `audio_vae` dict, or an object holding it under "audio_vae". Unknown ddconfig keys and unsupported
  // values are errors; the other sections' keys the configurator does not read are not read.
  static AudioVaeConfig from_json(const nlohmann::json& j);
};

using AudioVaeTap = std::function<void(const std::string& module, const Tensor& output)>;

class AudioDecoder {
 public:
  // Takes every parameter from params under prefix + official name, computing in `compute`.
  AudioDecoder(AudioVaeConfig cfg, nn::ParamSource& params, const std::string& prefix = "", DType compute = DType::F32);
  // sample [B, z_channels, frames, ch / z_channels] -> [B, out_ch, target frames, mel bins] in the compute
  // dtype. tap (optional) sees the outputs named as the golden's inter.* taps: conv_in, mid.block_2,
  // up.<level>.block.<num_res_blocks> (before its attention), up.<level>.upsample, conv_out.
  Tensor forward(const Tensor& sample, const AudioVaeTap& tap = {}) const;
  const AudioVaeConfig& config() const { return cfg_; }
  // frames -> the spectrogram length the forward returns (_denormalize_latents' target_frames).
  int64_t target_frames(int64_t latent_frames) const;

 private:
  struct Level {
    std::vector<audio_vae::ResnetBlock> blocks;
    std::vector<audio_vae::AttnBlock> attns;  // empty or one per block
    std::optional<audio_vae::Upsample> upsample;
  };
  AudioVaeConfig cfg_;
  DType compute_;
  Tensor stat_mean_, stat_std_;  // [ch]
  audio_vae::CausalConv2d conv_in_, conv_out_;
  audio_vae::ResnetBlock mid_block_1_, mid_block_2_;
  std::optional<audio_vae::AttnBlock> mid_attn_;
  std::vector<Level> up_;  // index = level (0: the finest, run last)
  audio_vae::Norm norm_out_;
};

// AudioEncoder: a mel spectrogram [B, in_channels, time, mel bins] -> the normalized latent means [B,
// ceil(out / 2), frames, bins] (out = 2 z_channels when double_z, else z_channels: the reference keeps
// torch.chunk(x, 2, 1)[0] either way). conv_in, the down path (per level: num_res_blocks resnets, attention
// where attn_resolutions hits, then but for the last level a stride-2 3x3 Conv2d after zero padding (none:
// right / bottom 1; height: top 2, right 1; width: left 2, bottom 1; width-compatibility: left 1, bottom 1),
// or a 2x2 average pool without resamp_with_conv), mid, norm_out, SiLU, conv_out, then (x - mean-of-means) /
// std-of-means per (channel, mel bin) of the patchified latent.
class AudioEncoder {
 public:
  AudioEncoder(AudioVaeConfig cfg, nn::ParamSource& params, const std::string& prefix = "", DType compute = DType::F32);
  // tap sees conv_in, down.<level>.block.<num_res_blocks - 1> (before its attention),
  // down.<level>.downsample, mid.block_2, conv_out.
  Tensor forward(const Tensor& spectrogram, const AudioVaeTap& tap = {}) const;
  const AudioVaeConfig& config() const { return cfg_; }

 private:
  struct Level {
    std::vector<audio_vae::ResnetBlock> blocks;
    std::vector<audio_vae::AttnBlock> attns;
    std::optional<audio_vae::Downsample> downsample;
  };
  AudioVaeConfig cfg_;
  DType compute_;
  Tensor stat_mean_, stat_std_;
  audio_vae::CausalConv2d conv_in_, conv_out_;
  std::vector<Level> down_;
  audio_vae::ResnetBlock mid_block_1_, mid_block_2_;
  std::optional<audio_vae::AttnBlock> mid_attn_;
  audio_vae::Norm norm_out_;
};

// Kind ltx2.audio_vae.decode (docs/parity.md): a golden's AudioDecoder (config = the `audio_vae` dict, params
// by official names, bare or as the bundled checkpoint spells them: audio_vae.decoder.* and
// audio_vae.per_channel_statistics.*), input.sample -> output, inter.*.
void register_audio_vae_parity_kinds();

}  // namespace vidax::ltx2
