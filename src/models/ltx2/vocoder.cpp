// The LTX-2 vocoder's forward with the backend's ops (vocoder.h). Conv1d and ConvTranspose1d are
// not backend ops: both run as conv2d over a length-1 axis (audio_dsp.h: a dilated conv over the
// sequence split into dilation phases, a transposed conv as a conv over the zero-stuffed input).
#include "models/ltx2/vocoder.h"

#include <algorithm>

#include "backend/ops.h"
#include "core/error.h"
#include "models/ltx2/audio_dsp.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

using Json = nlohmann::json;
using translate::strict_get;
using translate::value_or;
using dsp::as_conv_weight;
using dsp::conv1d;
using dsp::conv_transpose1d;

namespace {

constexpr double kLreluSlope = 0.1;  // resnet.LRELU_SLOPE (the stages and the resblocks)
constexpr double kPostSlope = 0.01;  // nn.LeakyReLU() default (act_post)

Tensor leaky_relu(const Tensor& x, double slope) {  // max(x, 0) + slope * min(x, 0)
  return ops::axpby(1.0, ops::relu(x), -slope, ops::relu(ops::scale(x, -1.0)));
}

Tensor take_conv_weight(nn::ParamSource& p, const std::string& name, int64_t o, int64_t c, int64_t k) {
  return p.take(name, {o, c, k}).to(DType::F32).contiguous();
}

}  // namespace

VocoderConfig VocoderConfig::from_json(const Json& j) {
  VIDAX_CHECK(j.is_object(), "LTX-2 vocoder config: expected a JSON object, found " << j.dump());
  static const std::vector<std::string> known{
      "resblock_kernel_sizes", "upsample_rates",    "upsample_kernel_sizes",  "resblock_dilation_sizes",
      "upsample_initial_channel", "resblock",        "output_sampling_rate",   "activation",
      "use_tanh_at_final",        "apply_final_activation", "use_bias_at_final"};
  for (const auto& [key, v] : j.items())
    VIDAX_CHECK(std::find(known.begin(), known.end(), key) != known.end(),
                "LTX-2 vocoder config: unknown key '" << key << "' (Vocoder's init args)");
  VocoderConfig c;
  c.resblock_kernel_sizes = value_or(j, "resblock_kernel_sizes", c.resblock_kernel_sizes);
  c.upsample_rates = value_or(j, "upsample_rates", c.upsample_rates);
  c.upsample_kernel_sizes = value_or(j, "upsample_kernel_sizes", c.upsample_kernel_sizes);
  c.resblock_dilation_sizes = value_or(j, "resblock_dilation_sizes", c.resblock_dilation_sizes);
  c.upsample_initial_channel = value_or(j, "upsample_initial_channel", c.upsample_initial_channel);
  c.resblock = value_or(j, "resblock", c.resblock);
  c.output_sampling_rate = value_or(j, "output_sampling_rate", c.output_sampling_rate);
  c.activation = value_or(j, "activation", c.activation);
  c.use_tanh_at_final = value_or(j, "use_tanh_at_final", c.use_tanh_at_final);
  c.apply_final_activation = value_or(j, "apply_final_activation", c.apply_final_activation);
  c.use_bias_at_final = value_or(j, "use_bias_at_final", c.use_bias_at_final);

  VIDAX_CHECK(c.resblock == "1" || c.resblock == "AMP1",
              "LTX-2 vocoder config: resblock '" << c.resblock
                                                 << "' is not supported (\"1\": LTX-2's HiFi-GAN, \"AMP1\": LTX-2.3's BigVGAN v2; "
                                                    "the reference's ResBlock2 path is not a published vocoder)");
  VIDAX_CHECK(c.activation == "snake" || c.activation == "snakebeta",
              "LTX-2 vocoder config: activation '" << c.activation << "' (snake or snakebeta)");
  VIDAX_CHECK(!c.upsample_rates.empty() && c.upsample_rates.size() == c.upsample_kernel_sizes.size(),
              "LTX-2 vocoder config: upsample_rates (" << c.upsample_rates.size() << ") and upsample_kernel_sizes ("
                                                       << c.upsample_kernel_sizes.size()
                                                       << ") must be non-empty and of one length");
  for (size_t i = 0; i < c.upsample_rates.size(); ++i)
    VIDAX_CHECK(c.upsample_rates[i] >= 1 && c.upsample_kernel_sizes[i] >= c.upsample_rates[i],
                "LTX-2 vocoder config: upsample stage " << i << " needs rate >= 1 and kernel >= rate, found rate "
                                                        << c.upsample_rates[i] << " kernel "
                                                        << c.upsample_kernel_sizes[i]);
  VIDAX_CHECK(!c.resblock_kernel_sizes.empty() && c.resblock_kernel_sizes.size() == c.resblock_dilation_sizes.size(),
              "LTX-2 vocoder config: resblock_kernel_sizes (" << c.resblock_kernel_sizes.size()
                                                              << ") and resblock_dilation_sizes ("
                                                              << c.resblock_dilation_sizes.size()
                                                              << ") must be non-empty and of one length");
  for (size_t i = 0; i < c.resblock_kernel_sizes.size(); ++i) {
    VIDAX_CHECK(c.resblock_kernel_sizes[i] >= 1, "LTX-2 vocoder config: resblock kernel " << c.resblock_kernel_sizes[i]);
    VIDAX_CHECK(c.resblock_dilation_sizes[i].size() == 3,
                "LTX-2 vocoder config: ResBlock1 takes 3 dilations, resblock_dilation_sizes["
                    << i << "] has " << c.resblock_dilation_sizes[i].size());
    for (int64_t d : c.resblock_dilation_sizes[i])
      VIDAX_CHECK(d >= 1, "LTX-2 vocoder config: dilation " << d << " in resblock_dilation_sizes[" << i << "]");
  }
  VIDAX_CHECK(c.upsample_initial_channel >= 1 &&
                  c.upsample_initial_channel % (int64_t{1} << c.upsample_rates.size()) == 0,
              "LTX-2 vocoder config: upsample_initial_channel " << c.upsample_initial_channel
                                                               << " must be a positive multiple of 2^"
                                                               << c.upsample_rates.size());
  return c;
}

Json VocoderConfig::to_json() const {
  return Json{{"resblock_kernel_sizes", resblock_kernel_sizes},
              {"upsample_rates", upsample_rates},
              {"upsample_kernel_sizes", upsample_kernel_sizes},
              {"resblock_dilation_sizes", resblock_dilation_sizes},
              {"upsample_initial_channel", upsample_initial_channel},
              {"resblock", resblock},
              {"output_sampling_rate", output_sampling_rate},
              {"activation", activation},
              {"use_tanh_at_final", use_tanh_at_final},
              {"apply_final_activation", apply_final_activation},
              {"use_bias_at_final", use_bias_at_final}};
}

int64_t VocoderConfig::final_channels() const {
  return upsample_initial_channel >> static_cast<int64_t>(upsample_rates.size());
}

Vocoder::Vocoder(VocoderConfig cfg, nn::ParamSource& p, const std::string& prefix) : cfg_(std::move(cfg)) {
  const int64_t ch0 = cfg_.upsample_initial_channel;
  conv_pre_ = {take_conv_weight(p, prefix + "conv_pre.weight", ch0, 128, 7),
               p.take(prefix + "conv_pre.bias", {ch0}).to(DType::F32), 1};
  for (size_t i = 0; i < cfg_.upsample_rates.size(); ++i) {
    const int64_t cin = ch0 >> i, cout = ch0 >> (i + 1);
    const int64_t k = cfg_.upsample_kernel_sizes[i], s = cfg_.upsample_rates[i];
    const std::string name = prefix + "ups." + std::to_string(i) + ".";
    ups_.push_back({as_conv_weight(p.take(name + "weight", {cin, cout, k})),
                    p.take(name + "bias", {cout}).to(DType::F32), s, (k - s) / 2});
    for (size_t r = 0; r < cfg_.resblock_kernel_sizes.size(); ++r) {
      const std::string rb = prefix + "resblocks." + std::to_string(resblocks_.size()) + ".";
      const int64_t rk = cfg_.resblock_kernel_sizes[r];
      ResBlock block;
      for (int64_t j = 0; j < 3; ++j) {
        const std::string c1 = rb + "convs1." + std::to_string(j) + ".", c2 = rb + "convs2." + std::to_string(j) + ".";
        block.convs1.push_back({take_conv_weight(p, c1 + "weight", cout, cout, rk),
                                p.take(c1 + "bias", {cout}).to(DType::F32), cfg_.resblock_dilation_sizes[r][j]});
        block.convs2.push_back(
            {take_conv_weight(p, c2 + "weight", cout, cout, rk), p.take(c2 + "bias", {cout}).to(DType::F32), 1});
        if (amp()) {
          const bool beta = cfg_.activation == "snakebeta";
          block.acts1.push_back(take_act(p, rb + "acts1." + std::to_string(j) + ".", cout, beta));
          block.acts2.push_back(take_act(p, rb + "acts2." + std::to_string(j) + ".", cout, beta));
        }
      }
      resblocks_.push_back(std::move(block));
    }
  }
  const int64_t fin = cfg_.final_channels();
  if (amp()) act_post_ = take_act(p, prefix + "act_post.", fin, true);
  conv_post_ = {take_conv_weight(p, prefix + "conv_post.weight", 2, fin, 7), std::nullopt, 1};
  if (cfg_.use_bias_at_final) conv_post_.bias = p.take(prefix + "conv_post.bias", {2}).to(DType::F32);
}

Vocoder::AntiAliasedSnake Vocoder::take_act(nn::ParamSource& p, const std::string& name, int64_t channels,
                                             bool beta) const {
  // alpha_logscale (the only form Vocoder builds): the parameters are logs.
  const Tensor alpha = ops::exp(p.take(name + "act.alpha", {channels}).to(DType::F32)).view({1, channels, 1});
  const Tensor denom = beta ? ops::exp(p.take(name + "act.beta", {channels}).to(DType::F32)).view({1, channels, 1})
                            : alpha;
  AntiAliasedSnake a;
  a.alpha = alpha;
  a.inv_scale = ops::div(Tensor::from_f32({1.0f}, {1}), ops::add_scalar(denom, 1e-9));
  // The filters are buffers of the state dict (persistent): taken, not recomputed.
  a.up_filter = as_conv_weight(p.take(name + "upsample.filter", {1, 1, 12}));
  a.down_filter = p.take(name + "downsample.lowpass.filter", {1, 1, 12}).to(DType::F32).contiguous();
  return a;
}

// Activation1d(Snake[Beta]) with its defaults (ratio 2, kernels 12), one filter for every channel:
// the channels run as a batch of one-channel signals.
Tensor Vocoder::act(const Tensor& x, const AntiAliasedSnake& a) const {
  const int64_t n = x.size(0), c = x.size(1), t = x.size(2);
  // UpSample1d: replicate pad 12 / 2 - 1 = 5, 2 x conv_transpose1d(stride 2), crop 15 on both sides.
  Tensor u = ops::pad(x.reshape({n * c, 1, t}), {5, 5}, ops::PadMode::Replicate);
  u = conv_transpose1d(u, a.up_filter, std::nullopt, 2, 0).slice(2, 15, 15 + 2 * t);
  u = ops::scale(u, 2.0).contiguous().view({n, c, 2 * t});
  // Snake: x + inv_scale * sin(alpha x)^2.
  const Tensor s = ops::sin(ops::mul(u, a.alpha));
  u = ops::add(u, ops::mul(a.inv_scale, ops::mul(s, s)));
  // DownSample1d: replicate pad (5, 6), conv stride 2.
  const Tensor d = ops::pad(u.view({n * c, 1, 2 * t}), {5, 6}, ops::PadMode::Replicate);
  return conv1d(d, a.down_filter, std::nullopt, 1, 0, 0, 2).contiguous().view({n, c, t});
}

Tensor Vocoder::forward(const Tensor& mel) const {
  VIDAX_CHECK(mel.dtype() == DType::F32, "ltx2 vocoder: the mel input must be F32, found " << dtype_name(mel.dtype()));
  // The docstring also names a mono [B, T, mel_bins] input, but the reference's forward fails on it
  // (x.transpose(2, 3) of a 3-D tensor) and conv_pre takes 128 channels: stereo only.
  VIDAX_CHECK(mel.dim() == 4 && mel.size(1) == 2 && mel.size(3) * 2 == 128,
              "ltx2 vocoder: the input must be a stereo mel [B, 2, T, 64], found " << shape_str(mel.shape()));
  // [B, 2, T, 64] -> [B, 2 * 64, T] (channel = stereo side * 64 + mel bin)
  Tensor x = mel.transpose(2, 3).contiguous().view({mel.size(0), 128, mel.size(2)});
  VIDAX_CHECK(x.size(2) >= 1, "ltx2 vocoder: the input has no frames");
  // ResBlock1: padding "same" (torch: the odd sample on the right); AMPBlock1 and conv_pre / post:
  // get_padding(k, d) = d (k - 1) / 2 on both sides (the same for the odd kernels).
  const bool amp_pad = amp();
  auto run = [amp_pad](const Tensor& t, const Conv& c) {
    const int64_t total = c.dilation * (c.weight.size(2) - 1);
    return conv1d(t, c.weight, c.bias, c.dilation, total / 2, amp_pad ? total / 2 : total - total / 2);
  };
  x = run(x, conv_pre_);
  const size_t per_stage = cfg_.resblock_kernel_sizes.size();
  for (size_t i = 0; i < ups_.size(); ++i) {
    const Up& up = ups_[i];
    if (!amp()) x = leaky_relu(x, kLreluSlope);
    x = conv_transpose1d(x, up.weight, up.bias, up.stride, up.padding);
    // The stage's resblocks all read x; their outputs are averaged.
    Tensor acc;
    for (size_t r = 0; r < per_stage; ++r) {
      const ResBlock& block = resblocks_[i * per_stage + r];
      Tensor h = x;
      for (size_t j = 0; j < block.convs1.size(); ++j) {
        Tensor xt = amp() ? run(act(h, block.acts1[j]), block.convs1[j])
                          : run(leaky_relu(h, kLreluSlope), block.convs1[j]);
        xt = amp() ? run(act(xt, block.acts2[j]), block.convs2[j]) : run(leaky_relu(xt, kLreluSlope), block.convs2[j]);
        h = ops::add(xt, h);
      }
      acc = r == 0 ? h : ops::add(acc, h);
    }
    x = ops::scale(acc, 1.0 / static_cast<double>(per_stage));
  }
  x = run(amp() ? act(x, *act_post_) : leaky_relu(x, kPostSlope), conv_post_);
  if (cfg_.apply_final_activation) x = cfg_.use_tanh_at_final ? ops::tanh(x) : ops::clamp(x, -1.0, 1.0);
  return x;
}

}  // namespace vidax::ltx2
