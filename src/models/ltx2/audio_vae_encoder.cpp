// AudioEncoder (audio_vae.h): AudioEncoder.forward with the blocks of audio_vae_blocks.h.
#include <algorithm>

#include "backend/ops.h"
#include "core/error.h"
#include "models/ltx2/audio_vae.h"

namespace vidax::ltx2 {

AudioEncoder::AudioEncoder(AudioVaeConfig cfg, nn::ParamSource& params, const std::string& prefix, DType compute)
    : cfg_(std::move(cfg)), compute_(compute) {
  VIDAX_CHECK(cfg_.attn_type != "linear",
              "LTX-2 audio VAE encoder: attn_type 'linear' is not supported "
              "(the reference raises "
              "NotImplementedError for it too)");
  const vae::Loader l{params, prefix, compute};
  const auto norm = cfg_.norm_type;
  const auto axis = cfg_.causality_axis;
  const bool attention = cfg_.attn_type == "vanilla";
  stat_std_ = l.get("per_channel_statistics.std-of-means", {cfg_.ch});
  stat_mean_ = l.get("per_channel_statistics.mean-of-means", {cfg_.ch});
  conv_in_ = audio_vae::CausalConv2d::load(l, "conv_in", cfg_.in_channels, cfg_.ch, 3, axis);
  // build_downsampling_path: level i goes ch * (1, ch_mult...)[i] -> ch * ch_mult[i]; curr_res halves.
  const int64_t levels = static_cast<int64_t>(cfg_.ch_mult.size());
  down_.resize(levels);
  int64_t res = cfg_.resolution;
  int64_t in = cfg_.ch;
  for (int64_t level = 0; level < levels; ++level) {
    Level& s = down_[level];
    in = cfg_.ch * (level == 0 ? 1 : cfg_.ch_mult[level - 1]);
    const int64_t out = cfg_.ch * cfg_.ch_mult[level];
    const bool attn = attention && std::find(cfg_.attn_resolutions.begin(), cfg_.attn_resolutions.end(), res) !=
                                       cfg_.attn_resolutions.end();
    const std::string p = "down." + std::to_string(level);
    for (int64_t i = 0; i < cfg_.num_res_blocks; ++i) {
      s.blocks.push_back(audio_vae::ResnetBlock::load(l, p + ".block." + std::to_string(i), in, out, norm, axis));
      in = out;
      if (attn) s.attns.push_back(audio_vae::AttnBlock::load(l, p + ".attn." + std::to_string(i), out, norm));
    }
    if (level != levels - 1) {
      s.downsample = audio_vae::Downsample::load(l, p + ".downsample", in, cfg_.resamp_with_conv, axis);
      res /= 2;
    }
  }
  mid_block_1_ = audio_vae::ResnetBlock::load(l, "mid.block_1", in, in, norm, axis);
  if (cfg_.mid_block_add_attention && attention) mid_attn_ = audio_vae::AttnBlock::load(l, "mid.attn_1", in, norm);
  mid_block_2_ = audio_vae::ResnetBlock::load(l, "mid.block_2", in, in, norm, axis);
  norm_out_ = audio_vae::Norm::load(l, "norm_out", norm, in);
  conv_out_ =
      audio_vae::CausalConv2d::load(l, "conv_out", in, cfg_.double_z ? 2 * cfg_.z_channels : cfg_.z_channels, 3, axis);
}

Tensor AudioEncoder::forward(const Tensor& spectrogram, const AudioVaeTap& tap) const {
  VIDAX_CHECK(spectrogram.dim() == 4 && spectrogram.size(1) == cfg_.in_channels && spectrogram.size(2) >= 1 &&
                  spectrogram.size(3) >= 1,
              "LTX-2 audio VAE encoder: expected a spectrogram [B, " << cfg_.in_channels << ", time, mel bins], found "
                                                                     << spectrogram.str());
  VIDAX_CHECK(dtype_is_float(spectrogram.dtype()),
              "LTX-2 audio VAE encoder: the spectrogram must be floating point, found " << spectrogram.str());
  const auto emit = [&tap](const std::string& name, const Tensor& t) {
    if (tap) tap(name, t);
  };
  Tensor h = conv_in_(spectrogram.dtype() == compute_ ? spectrogram : ops::cast(spectrogram, compute_));
  emit("conv_in", h);
  for (size_t level = 0; level < down_.size(); ++level) {
    const Level& s = down_[level];
    const std::string p = "down." + std::to_string(level);
    for (size_t i = 0; i < s.blocks.size(); ++i) {
      h = s.blocks[i](h);
      if (i + 1 == s.blocks.size()) emit(p + ".block." + std::to_string(i), h);  // before its attention
      if (!s.attns.empty()) h = s.attns[i](h);
    }
    if (s.downsample) {
      h = (*s.downsample)(h);
      emit(p + ".downsample", h);
    }
  }
  h = mid_block_1_(h);
  if (mid_attn_) h = (*mid_attn_)(h);
  h = mid_block_2_(h);
  emit("mid.block_2", h);
  h = conv_out_(ops::silu(norm_out_(h)));
  emit("conv_out", h);
  // _normalize_latents: torch.chunk(h, 2, 1)[0] (the first ceil(C / 2) channels), then per (c, f).
  const int64_t C = (h.size(1) + 1) / 2, F = h.size(3);
  VIDAX_CHECK(C * F == cfg_.ch, "LTX-2 audio VAE encoder: the latent means have "
                                    << C << " channels x " << F << " mel bins per frame, but there are " << cfg_.ch
                                    << " per-channel statistics (ch): the spectrogram's mel bins "
                                       "do not fit");
  const Tensor means = h.slice(1, 0, C);
  return ops::div(ops::sub(means, stat_mean_.reshape({1, C, 1, F})), stat_std_.reshape({1, C, 1, F}));
}

}  // namespace vidax::ltx2
