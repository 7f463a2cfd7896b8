// The LTX-2 latent upsampler with the backend's ops (upsampler.h). Every per-frame Conv2d runs as a
// Conv3d with a [O, C, 1, 3, 3] kernel and no time padding; dims 2 runs the whole network on the
// frames stacked along the batch, [(B F), C, 1, H, W], so that its GroupNorms are per frame too.
#include "models/ltx2/upsampler.h"

#include <algorithm>

#include "backend/ops.h"
#include "core/error.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

using Json = nlohmann::json;
using translate::strict_get;
using translate::value_or;

namespace {

constexpr int64_t kGroups = 32;   // GroupNorm(32, ...) everywhere
constexpr double kNormEps = 1e-5;  // torch.nn.GroupNorm's default
constexpr int64_t kBlur = 5;       // BlurDownsample's kernel_size

// [B, C, F, H, W] <-> [(B F), C, 1, H, W] (dims 2: each frame its own sample).
Tensor frames_to_batch(const Tensor& x) {
  const int64_t B = x.size(0), C = x.size(1), F = x.size(2), H = x.size(3), W = x.size(4);
  return ops::copy(x.permute({0, 2, 1, 3, 4})).view({B * F, C, 1, H, W});
}
Tensor batch_to_frames(const Tensor& x, int64_t B) {
  const int64_t F = x.size(0) / B, C = x.size(1), H = x.size(3), W = x.size(4);
  return ops::copy(x.view({B, F, C, H, W}).permute({0, 2, 1, 3, 4}));
}

}  // namespace

UpsamplerConfig UpsamplerConfig::from_json(const Json& j) {
  VIDAX_CHECK(j.is_object(), "LTX-2 latent upsampler config: expected a JSON object, found " << j.dump());
  static const std::vector<std::string> known{"in_channels",      "mid_channels",      "num_blocks_per_stage",
                                              "dims",             "spatial_upsample",  "temporal_upsample",
                                              "spatial_scale",    "rational_resampler", "_class_name"};
  for (const auto& [key, v] : j.items())
    VIDAX_CHECK(std::find(known.begin(), known.end(), key) != known.end(),
                "LTX-2 latent upsampler config: unknown key '" << key
                                                               << "' (LatentUpsamplerConfigurator.from_metadata's keys)");
  if (j.contains("_class_name")) {
    const std::string cls = strict_get<std::string>(j.at("_class_name"), "_class_name");
    VIDAX_CHECK(cls == "LatentUpsampler", "LTX-2 latent upsampler config: _class_name '" << cls
                                                                                         << "' is not LatentUpsampler");
  }
  UpsamplerConfig c;
  c.in_channels = value_or(j, "in_channels", c.in_channels);
  c.mid_channels = value_or(j, "mid_channels", c.mid_channels);
  c.num_blocks_per_stage = value_or(j, "num_blocks_per_stage", c.num_blocks_per_stage);
  c.dims = value_or(j, "dims", c.dims);
  c.spatial_upsample = value_or(j, "spatial_upsample", c.spatial_upsample);
  c.temporal_upsample = value_or(j, "temporal_upsample", c.temporal_upsample);
  c.spatial_scale = value_or(j, "spatial_scale", c.spatial_scale);
  c.rational_resampler = value_or(j, "rational_resampler", c.rational_resampler);

  VIDAX_CHECK(c.in_channels > 0 && c.mid_channels > 0 && c.num_blocks_per_stage >= 0,
              "LTX-2 latent upsampler config: in_channels " << c.in_channels << ", mid_channels " << c.mid_channels
                                                            << ", num_blocks_per_stage " << c.num_blocks_per_stage
                                                            << " (positive, positive, >= 0)");
  VIDAX_CHECK(c.mid_channels % kGroups == 0, "LTX-2 latent upsampler config: mid_channels "
                                                 << c.mid_channels << " is not a multiple of 32 (GroupNorm(32))");
  VIDAX_CHECK(c.dims == 2 || c.dims == 3, "LTX-2 latent upsampler config: dims " << c.dims << " (2 or 3)");
  VIDAX_CHECK(c.spatial_upsample || c.temporal_upsample,
              "LTX-2 latent upsampler config: either spatial_upsample or temporal_upsample must be true");
  VIDAX_CHECK(!(c.rational_resampler && c.spatial_upsample && c.temporal_upsample),
              "LTX-2 latent upsampler config: rational_resampler with spatial and temporal upsampling (the reference "
              "ignores the resampler there; refused rather than ignored)");
  VIDAX_CHECK(c.dims == 3 || (!c.temporal_upsample && !c.rational_resampler),
              "LTX-2 latent upsampler config: dims 2 supports spatial x2 only (the reference's dims-2 temporal and "
              "rational paths fail in its forward)");
  if (c.spatial_upsample && c.rational_resampler) c.rational();  // validates spatial_scale
  return c;
}

std::pair<int64_t, int64_t> UpsamplerConfig::rational() const {
  if (spatial_scale == 0.75) return {3, 4};
  if (spatial_scale == 1.5) return {3, 2};
  if (spatial_scale == 2.0) return {2, 1};
  if (spatial_scale == 4.0) return {4, 1};
  throw Error(msg() << "LTX-2 latent upsampler config: spatial_scale " << spatial_scale
                    << " is not supported by the rational resampler (0.75, 1.5, 2.0 or 4.0)");
}

LatentUpsampler::Conv LatentUpsampler::take_conv(const vae::Loader& l, const std::string& name, int64_t in,
                                                 int64_t out, bool per_frame) const {
  Conv c;
  if (per_frame)
    c.w = l.get(name + ".weight", {out, in, 3, 3}).reshape({out, in, 1, 3, 3});
  else
    c.w = l.get(name + ".weight", {out, in, 3, 3, 3});
  c.b = l.get(name + ".bias", {out});
  return c;
}

LatentUpsampler::Norm LatentUpsampler::take_norm(const vae::Loader& l, const std::string& name,
                                                 int64_t channels) const {
  return {l.get(name + ".weight", {channels}), l.get(name + ".bias", {channels})};
}

LatentUpsampler::LatentUpsampler(UpsamplerConfig cfg, nn::ParamSource& params, const std::string& prefix,
                                 DType compute)
    : cfg_(std::move(cfg)), compute_(compute) {
  const vae::Loader l{params, prefix, compute};
  const int64_t C = cfg_.in_channels, M = cfg_.mid_channels;
  const bool conv2d = cfg_.dims == 2;  // the network's own convs per frame
  initial_conv_ = take_conv(l, "initial_conv", C, M, conv2d);
  initial_norm_ = take_norm(l, "initial_norm", M);
  const auto blocks = [&](const std::string& stage) {
    std::vector<ResBlock> v;
    for (int64_t i = 0; i < cfg_.num_blocks_per_stage; ++i) {
      const std::string p = stage + "." + std::to_string(i);
      v.push_back({take_conv(l, p + ".conv1", M, M, conv2d), take_conv(l, p + ".conv2", M, M, conv2d),
                   take_norm(l, p + ".norm1", M), take_norm(l, p + ".norm2", M)});
    }
    return v;
  };
  res_blocks_ = blocks("res_blocks");
  if (cfg_.spatial_upsample && cfg_.temporal_upsample) {
    up_conv_ = take_conv(l, "upsampler.0", M, 8 * M, false);
  } else if (cfg_.spatial_upsample && cfg_.rational_resampler) {
    const auto [num, den] = cfg_.rational();
    up_conv_ = take_conv(l, "upsampler.conv", M, num * num * M, true);
    // The fixed binomial kernel is a (persistent) buffer of the state dict: taken from it.
    const Tensor k = l.get("upsampler.blur_down.kernel", {1, 1, kBlur, kBlur});
    if (den > 1) blur_ = k.reshape({1, 1, 1, kBlur, kBlur});
  } else if (cfg_.spatial_upsample) {
    up_conv_ = take_conv(l, "upsampler.0", M, 4 * M, true);
  } else {
    up_conv_ = take_conv(l, "upsampler.0", M, 2 * M, false);
  }
  post_blocks_ = blocks("post_upsample_res_blocks");
  final_conv_ = take_conv(l, "final_conv", M, C, conv2d);
}

Tensor LatentUpsampler::conv(const Tensor& x, const Conv& c) const {
  const int64_t pt = c.w.size(2) == 1 ? 0 : 1;
  return ops::conv3d(x, c.w, c.b, {1, 1, 1}, {pt, 1, 1});
}

Tensor LatentUpsampler::norm(const Tensor& x, const Norm& n) const {
  return ops::group_norm(x, kGroups, n.w, n.b, kNormEps);
}

// ResBlock: SiLU(norm2(conv2(SiLU(norm1(conv1(x))))) + x).
Tensor LatentUpsampler::res_block(const Tensor& x, const ResBlock& r) const {
  const Tensor h = norm(conv(ops::silu(norm(conv(x, r.conv1), r.norm1)), r.conv2), r.norm2);
  return ops::silu(ops::add(h, x));
}

// The upsampler module's output (before the temporal paths drop their first frame).
Tensor LatentUpsampler::upsample(const Tensor& x) const {
  const Tensor h = conv(x, up_conv_);
  if (cfg_.spatial_upsample && cfg_.temporal_upsample) return ops::pixel_shuffle3d(h, {2, 2, 2});
  if (cfg_.temporal_upsample) return ops::pixel_shuffle3d(h, {2, 1, 1});
  if (!cfg_.rational_resampler) return ops::pixel_shuffle3d(h, {1, 2, 2});
  const auto [num, den] = cfg_.rational();
  Tensor y = ops::pixel_shuffle3d(h, {1, num, num});
  if (!blur_) return y;  // den 1: BlurDownsample is the identity
  // Depthwise blur: every channel its own sample through the one [1, 1, 1, 5, 5] kernel.
  const int64_t N = y.size(0), C = y.size(1), F = y.size(2), H = y.size(3), W = y.size(4);
  y = ops::conv3d(y.reshape({N * C, 1, F, H, W}), *blur_, std::nullopt, {1, den, den}, {0, kBlur / 2, kBlur / 2});
  return y.reshape({N, C, F, y.size(3), y.size(4)});
}

Tensor LatentUpsampler::forward(const Tensor& latent, const UpsamplerTap& tap) const {
  VIDAX_CHECK(latent.dim() == 5 && latent.size(1) == cfg_.in_channels,
              "LTX-2 latent upsampler: latent must be [B, " << cfg_.in_channels << ", F, H, W], found "
                                                            << latent.str());
  VIDAX_CHECK(latent.dtype() == compute_, "LTX-2 latent upsampler: latent dtype " << dtype_name(latent.dtype())
                                                                                  << " differs from the compute dtype "
                                                                                  << dtype_name(compute_));
  VIDAX_CHECK(latent.size(2) >= 1 && latent.size(3) >= 1 && latent.size(4) >= 1,
              "LTX-2 latent upsampler: empty latent " << latent.str());
  const int64_t B = latent.size(0);
  const bool per_frame = cfg_.dims == 2;
  const auto emit = [&](const std::string& name, const Tensor& t) {
    if (tap) tap(name, per_frame ? batch_to_frames(t, B) : t);
  };
  Tensor x = per_frame ? frames_to_batch(latent) : latent;
  x = conv(x, initial_conv_);
  emit("initial_conv", x);
  x = ops::silu(norm(x, initial_norm_));
  for (size_t i = 0; i < res_blocks_.size(); ++i) {
    x = res_block(x, res_blocks_[i]);
    emit("res_blocks." + std::to_string(i), x);
  }
  x = upsample(x);
  emit("upsampler", x);
  // The first frame of a temporal upsample is dropped (it encodes one pixel frame).
  if (cfg_.temporal_upsample) x = x.slice(2, 1, x.size(2));
  for (size_t i = 0; i < post_blocks_.size(); ++i) {
    x = res_block(x, post_blocks_[i]);
    emit("post_upsample_res_blocks." + std::to_string(i), x);
  }
  x = conv(x, final_conv_);
  emit("final_conv", x);
  return per_frame ? batch_to_frames(x, B) : x;
}

Tensor upsample_video(const Tensor& latent, const vae::PerChannelStatistics& stats, const LatentUpsampler& upsampler) {
  return stats.normalize(upsampler.forward(stats.un_normalize(latent)));
}

}  // namespace vidax::ltx2
