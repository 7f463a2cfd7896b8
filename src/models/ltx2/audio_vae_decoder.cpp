// AudioDecoder (audio_vae.h): AudioDecoder.forward with the blocks of audio_vae_blocks.h.
#include <algorithm>

#include "backend/ops.h"
#include "core/error.h"
#include "models/ltx2/audio_vae.h"

namespace vidax::ltx2 {

namespace {
constexpr int64_t kLatentDownsample = 4;  // LATENT_DOWNSAMPLE_FACTOR
}  // namespace

AudioDecoder::AudioDecoder(AudioVaeConfig cfg, nn::ParamSource& params, const std::string& prefix, DType compute)
    : cfg_(std::move(cfg)), compute_(compute) {
  // The ch statistics multiply the patchified latent [B, T, z_channels * mel bins] (torch
  // broadcasting): one per value, or a single one (ch = 1) for all of them.
  VIDAX_CHECK(cfg_.ch == 1 || cfg_.ch % cfg_.z_channels == 0,
              "LTX-2 audio VAE decoder: ch " << cfg_.ch << " is not a multiple of z_channels " << cfg_.z_channels
                                             << ": the per-channel statistics (ch of them) apply to the latent's "
                                                "z_channels x mel bins values per frame (or one to all, ch = 1)");
  const vae::Loader l{params, prefix, compute};
  const auto norm = cfg_.norm_type;
  const auto axis = cfg_.causality_axis;
  stat_std_ = l.get("per_channel_statistics.std-of-means", {cfg_.ch});
  stat_mean_ = l.get("per_channel_statistics.mean-of-means", {cfg_.ch});
  const int64_t levels = static_cast<int64_t>(cfg_.ch_mult.size());
  const int64_t base = cfg_.ch * cfg_.ch_mult.back();
  conv_in_ = audio_vae::CausalConv2d::load(l, "conv_in", cfg_.z_channels, base, 3, axis);
  mid_block_1_ = audio_vae::ResnetBlock::load(l, "mid.block_1", base, base, norm, axis);
  if (cfg_.mid_block_add_attention) mid_attn_ = audio_vae::AttnBlock::load(l, "mid.attn_1", base, norm);
  mid_block_2_ = audio_vae::ResnetBlock::load(l, "mid.block_2", base, base, norm, axis);
  // build_upsampling_path: from the deepest level; curr_res doubles after each upsample.
  up_.resize(levels);
  int64_t in = base;
  int64_t res = cfg_.resolution >> (levels - 1);
  for (int64_t level = levels - 1; level >= 0; --level) {
    Level& s = up_[level];
    const int64_t out = cfg_.ch * cfg_.ch_mult[level];
    const bool attn =
        std::find(cfg_.attn_resolutions.begin(), cfg_.attn_resolutions.end(), res) != cfg_.attn_resolutions.end();
    const std::string p = "up." + std::to_string(level);
    for (int64_t i = 0; i <= cfg_.num_res_blocks; ++i) {
      s.blocks.push_back(audio_vae::ResnetBlock::load(l, p + ".block." + std::to_string(i), in, out, norm, axis));
      in = out;
      if (attn) s.attns.push_back(audio_vae::AttnBlock::load(l, p + ".attn." + std::to_string(i), out, norm));
    }
    if (level != 0) {
      s.upsample = audio_vae::Upsample::load(l, p + ".upsample", out, axis);
      res *= 2;
    }
  }
  norm_out_ = audio_vae::Norm::load(l, "norm_out", norm, in);
  conv_out_ = audio_vae::CausalConv2d::load(l, "conv_out", in, cfg_.out_ch, 3, axis);
}

int64_t AudioDecoder::target_frames(int64_t latent_frames) const {
  const int64_t t = latent_frames * kLatentDownsample;
  return cfg_.causality_axis == audio_vae::Causality::None ? t : std::max<int64_t>(t - (kLatentDownsample - 1), 1);
}

Tensor AudioDecoder::forward(const Tensor& sample, const AudioVaeTap& tap) const {
  VIDAX_CHECK(sample.dim() == 4 && sample.size(1) == cfg_.z_channels && sample.size(2) >= 1 && sample.size(3) >= 1 &&
                  (cfg_.ch == 1 || sample.size(1) * sample.size(3) == cfg_.ch),
              "LTX-2 audio VAE decoder: expected a latent [B, "
                  << cfg_.z_channels << ", frames, " << cfg_.ch / cfg_.z_channels << "], found " << sample.str());
  VIDAX_CHECK(dtype_is_float(sample.dtype()),
              "LTX-2 audio VAE decoder: the latent must be floating point, found " << sample.str());
  const auto emit = [&tap](const std::string& name, const Tensor& t) {
    if (tap) tap(name, t);
  };
  const int64_t C = sample.size(1), T = sample.size(2), F = sample.size(3);
  // patchify (b c t f -> b t (c f)), x * std + mean, unpatchify: one statistic per (c, f), or one for all.
  const Tensor x = sample.dtype() == compute_ ? sample : ops::cast(sample, compute_);
  const Shape stat_shape = cfg_.ch == 1 ? Shape{1, 1, 1, 1} : Shape{1, C, 1, F};
  Tensor h = ops::add(ops::mul(x, stat_std_.reshape(stat_shape)), stat_mean_.reshape(stat_shape));
  h = conv_in_(h);
  emit("conv_in", h);
  h = mid_block_1_(h);
  if (mid_attn_) h = (*mid_attn_)(h);
  h = mid_block_2_(h);
  emit("mid.block_2", h);
  for (int64_t level = static_cast<int64_t>(up_.size()) - 1; level >= 0; --level) {
    const Level& s = up_[level];
    const std::string p = "up." + std::to_string(level);
    for (size_t i = 0; i < s.blocks.size(); ++i) {
      h = s.blocks[i](h);
      if (i + 1 == s.blocks.size()) emit(p + ".block." + std::to_string(i), h);  // before its attention
      if (!s.attns.empty()) h = s.attns[i](h);
    }
    if (s.upsample) {
      h = (*s.upsample)(h);
      emit(p + ".upsample", h);
    }
  }
  h = conv_out_(ops::silu(norm_out_(h)));
  emit("conv_out", h);
  // _adjust_output_shape: crop to the target, then zero-pad time and mel bins up to it.
  const int64_t want_t = target_frames(T), want_f = cfg_.mel_bins.value_or(F);
  const int64_t keep_t = std::min(h.size(2), want_t), keep_f = std::min(h.size(3), want_f);
  h = h.slice(2, 0, keep_t).slice(3, 0, keep_f);
  if (keep_t < want_t || keep_f < want_f) return ops::pad(h, {0, want_f - keep_f, 0, want_t - keep_t});
  return h.contiguous();
}

}  // namespace vidax::ltx2
