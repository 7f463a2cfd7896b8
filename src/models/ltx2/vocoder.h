// The LTX-2 vocoder (ltx_core.model.audio_vae.vocoder.Vocoder, HiFi-GAN style, resblock "1"):
// a stereo log-mel spectrogram [B, 2, T, 64] -> waveform [B, 2, T * prod(upsample_rates)].
// conv_pre (128 -> upsample_initial_channel, k7) -> per stage: leaky_relu(0.1), ConvTranspose1d
// (stride r, padding (k - r) / 2), the mean of the stage's ResBlock1s -> leaky_relu(0.01) -> conv_post
// (-> 2 channels, k7) -> tanh (or clamp to [-1, 1]). Parameters by the official state dict names
// (conv_pre.weight, ups.0.weight, resblocks.3.convs1.2.bias, conv_post.weight, ...).
// resblock "AMP1" (BigVGAN v2, the LTX-2.3 generator): no leaky_relu before the upsamples, AMPBlock1s
// whose activations are anti-aliased Snake / SnakeBeta (`activation`), act_post an anti-aliased
// SnakeBeta. VocoderWithBWE (the LTX-2.3 bandwidth extension around two AMP1 generators) is in
// vocoder_bwe.h.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "nn/params.h"

namespace vidax::ltx2 {

// Vocoder.__init__'s arguments, same names and defaults (model_configurator._vocoder_from_config).
struct VocoderConfig {
  std::vector<int64_t> resblock_kernel_sizes{3, 7, 11};
  std::vector<int64_t> upsample_rates{6, 5, 2, 2, 2};
  std::vector<int64_t> upsample_kernel_sizes{16, 15, 8, 4, 4};
  std::vector<std::vector<int64_t>> resblock_dilation_sizes{{1, 3, 5}, {1, 3, 5}, {1, 3, 5}};
  int64_t upsample_initial_channel = 1024;
  std::string resblock = "1";
  int64_t output_sampling_rate = 24000;
  std::string activation = "snake";
  bool use_tanh_at_final = true;
  bool apply_final_activation = true;
  bool use_bias_at_final = true;

  // Unknown keys and unsupported values (resblock other than "1") are errors.
  static VocoderConfig from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
  int64_t final_channels() const;  // upsample_initial_channel / 2^stages
};

class Vocoder {
 public:
  // Takes every parameter (fp32 compute) from params under prefix + official name.
  Vocoder(VocoderConfig cfg, nn::ParamSource& params, const std::string& prefix = "");
  // x: [B, 2, T, 64] (stereo), F32 -> [B, 2, T * prod(upsample_rates)] F32. The reference's mono
  // form [B, T, mel_bins] fails in the reference itself (x.transpose(2, 3)) and is refused here.
  Tensor forward(const Tensor& x) const;
  const VocoderConfig& config() const { return cfg_; }

 private:
  struct Conv {  // Conv1d, its weight prepared for conv1d() below
    Tensor weight;  // [O, C, k]
    std::optional<Tensor> bias;
    int64_t dilation = 1;
  };
  struct Up {  // ConvTranspose1d as a conv over the zero-stuffed input: flipped, transposed weight
    Tensor weight;  // [O, C, k]
    Tensor bias;
    int64_t stride = 1, padding = 0;
  };
  // Activation1d (AMP1): x2 kaiser-sinc upsample, Snake / SnakeBeta, x2 lowpass downsample.
  struct AntiAliasedSnake {
    Tensor alpha;      // exp(alpha) [1, C, 1]
    Tensor inv_scale;  // 1 / (exp(beta or alpha) + 1e-9) [1, C, 1]
    Tensor up_filter;  // [1, 1, 12], taps reversed (the transposed conv as a conv)
    Tensor down_filter;  // [1, 1, 12]
  };
  struct ResBlock {
    std::vector<Conv> convs1, convs2;
    std::vector<AntiAliasedSnake> acts1, acts2;  // AMP1 only
  };
  AntiAliasedSnake take_act(nn::ParamSource& p, const std::string& name, int64_t channels, bool beta) const;
  Tensor act(const Tensor& x, const AntiAliasedSnake& a) const;
  bool amp() const { return cfg_.resblock == "AMP1"; }
  VocoderConfig cfg_;
  Conv conv_pre_, conv_post_;
  std::vector<Up> ups_;
  std::vector<ResBlock> resblocks_;  // stage-major, resblock_kernel_sizes.size() per stage
  std::optional<AntiAliasedSnake> act_post_;  // AMP1: always SnakeBeta
};

// Kind ltx2.vocoder (docs/parity.md): a golden's Vocoder (config = init args, params by official
// names, optionally prefixed `vocoder.` as in the bundled checkpoint), input.x -> output.
void register_vocoder_parity_kinds();

}  // namespace vidax::ltx2
