// The LTX-2 video VAE's blocks with the backend's ops (video_vae_blocks.h).
#include "models/ltx2/video_vae_blocks.h"

#include <cmath>

#include "backend/ops.h"
#include "core/error.h"

namespace vidax::ltx2::vae {

namespace {

constexpr double kEps = 1e-6;       // the resnets' and conv_norm_out's GroupNorms (resnet_eps)
constexpr double kPixelEps = 1e-8;  // PixelNorm()

int64_t prod(const std::array<int64_t, 3>& s) { return s[0] * s[1] * s[2]; }

// One pixel of padding on both sides of dim d (3: H, 4: W) in a non-zero mode by slices: reflect
// takes the second and the second-to-last pixel, circular the last and the first.
Tensor pad_one(const Tensor& x, int64_t d, VaePadding mode) {
  const int64_t n = x.size(d);
  if (mode == VaePadding::Reflect) {
    VIDAX_CHECK(n >= 2,
                "LTX-2 video VAE: reflect padding needs at least 2 pixels along each spatial axis, found " << x.str());
    return ops::concat({x.slice(d, 1, 2), x, x.slice(d, n - 2, n - 1)}, d);
  }
  return ops::concat({x.slice(d, n - 1, n), x, x.slice(d, 0, 1)}, d);  // circular
}

}  // namespace

Tensor Loader::get(const std::string& name, const Shape& shape) const {
  Tensor t = src.take(prefix + name, shape);
  return t.dtype() == compute || t.device() == Device::Meta ? t : ops::cast(t, compute);
}

CausalConv3d CausalConv3d::load(const Loader& l, const std::string& prefix, int64_t in, int64_t out, VaePadding padding,
                                std::array<int64_t, 3> stride) {
  return {l.get(prefix + ".conv.weight", {out, in, 3, 3, 3}), l.get(prefix + ".conv.bias", {out}), stride, padding};
}

Tensor CausalConv3d::operator()(const Tensor& x, bool causal) const {
  // Time: repeated first (and, non-causal, last) frames; kernel 3.
  const int64_t front = causal ? 2 : 1, back = causal ? 0 : 1;
  if (padding == VaePadding::Replicate)
    return ops::conv3d(ops::pad(x, {1, 1, 1, 1, front, back}, ops::PadMode::Replicate), w, b, stride, {0, 0, 0});
  Tensor xt = ops::pad(x, {0, 0, 0, 0, front, back}, ops::PadMode::Replicate);
  if (padding == VaePadding::Zeros) return ops::conv3d(xt, w, b, stride, {0, 1, 1});
  return ops::conv3d(pad_one(pad_one(xt, 3, padding), 4, padding), w, b, stride, {0, 0, 0});
}

Norm Norm::load(const Loader& l, const std::string& prefix, VaeNorm kind, int64_t channels, int64_t groups) {
  Norm n;
  n.kind = kind;
  n.groups = groups;
  if (kind == VaeNorm::GroupNorm) {
    VIDAX_CHECK(channels % groups == 0, "LTX-2 video VAE: GroupNorm(" << groups << ") at " << l.prefix << prefix
                                                                      << " over " << channels
                                                                      << " channels (not divisible)");
    n.w = l.get(prefix + ".weight", {channels});
    n.b = l.get(prefix + ".bias", {channels});
  }
  return n;
}

Tensor Norm::operator()(const Tensor& x) const {
  if (kind == VaeNorm::GroupNorm) return ops::group_norm(x, groups, w, b, kEps);
  // mean over channels: the channels made the last dim for rms_norm, then put back.
  return ops::rms_norm(x.permute({0, 2, 3, 4, 1}), std::nullopt, kPixelEps).permute({0, 4, 1, 2, 3});
}

ResnetBlock3D ResnetBlock3D::load(const Loader& l, const std::string& p, int64_t in, int64_t out, VaeNorm norm,
                                  VaePadding padding, bool timestep_conditioning, bool inject_noise) {
  ResnetBlock3D r;
  r.norm1 = Norm::load(l, p + ".norm1", norm, in);
  r.conv1 = CausalConv3d::load(l, p + ".conv1", in, out, padding);
  r.norm2 = Norm::load(l, p + ".norm2", norm, out);
  r.conv2 = CausalConv3d::load(l, p + ".conv2", out, out, padding);
  if (in != out) {
    r.norm3 = Norm::load(l, p + ".norm3", VaeNorm::GroupNorm, in, 1);
    r.shortcut_w = l.get(p + ".conv_shortcut.weight", {out, in, 1, 1, 1});
    r.shortcut_b = l.get(p + ".conv_shortcut.bias", {out});
  }
  // The reference sizes the tables and the noise scales by in_channels: only a block that keeps its
  // width can use them (the config refuses the others).
  VIDAX_CHECK(in == out || (!timestep_conditioning && !inject_noise),
              "LTX-2 video VAE: " << l.prefix << p << " changes the width; it has no timestep conditioning or noise");
  if (timestep_conditioning)
    r.scale_shift_table = l.get(p + ".scale_shift_table", {4, in}).reshape({1, 4, in, 1, 1, 1});
  if (inject_noise) {
    r.noise_scale1 = l.get(p + ".per_channel_scale1", {in, 1, 1});
    r.noise_scale2 = l.get(p + ".per_channel_scale2", {in, 1, 1});
  }
  return r;
}

namespace {

// _feed_spatial_noise: h + (randn(H, W)[None] * scale)[None, :, None], the draw in h's dtype.
Tensor add_spatial_noise(const Tensor& h, const Tensor& scale, TorchGenerator* gen) {
  VIDAX_CHECK(gen != nullptr, "LTX-2 video VAE: noise injection (inject_noise) needs a generator");
  const int64_t H = h.size(3), W = h.size(4), C = h.size(1);
  const Tensor noise = gen->randn({H, W}, h.dtype()).view({1, H, W});
  return ops::add(h, ops::mul(noise, scale).reshape({1, C, 1, H, W}));
}

}  // namespace

Tensor ResnetBlock3D::operator()(const Tensor& x, bool causal, const std::optional<Tensor>& temb,
                                 TorchGenerator* gen) const {
  std::optional<Tensor> ada;  // [B, 4, C, 1, 1, 1]: shift1, scale1, shift2, scale2
  if (scale_shift_table) {
    VIDAX_CHECK(temb.has_value(), "LTX-2 video VAE: a timestep-conditioned resnet needs its timestep embedding");
    const int64_t B = x.size(0), C = x.size(1);
    ada = ops::add(*scale_shift_table, temb->reshape({B, 4, C, 1, 1, 1}));
  }
  Tensor h = norm1(x);
  if (ada) h = ops::modulate(h, ada->select(1, 0), ada->select(1, 1));
  h = conv1(ops::silu(h), causal);
  if (noise_scale1) h = add_spatial_noise(h, *noise_scale1, gen);
  h = norm2(h);
  if (ada) h = ops::modulate(h, ada->select(1, 2), ada->select(1, 3));
  h = conv2(ops::silu(h), causal);
  if (noise_scale2) h = add_spatial_noise(h, *noise_scale2, gen);
  const Tensor shortcut = norm3 ? ops::conv3d((*norm3)(x), *shortcut_w, shortcut_b, {1, 1, 1}, {0, 0, 0}) : x;
  return ops::add(shortcut, h);
}

Tensor timestep_sinusoid(const std::vector<float>& t, int64_t dim) {
  const int64_t half = dim / 2, B = static_cast<int64_t>(t.size());
  // exponent = -ln(10000) * arange(half, fp32) / half (the Python float rounded to fp32, each step
  // fp32), freqs = exp(exponent), arg = t * freqs, then [cos(arg), sin(arg)] (sin, cos flipped).
  const float neg_log = static_cast<float>(-std::log(10000.0));
  std::vector<float> v(static_cast<size_t>(B * dim), 0.0f);  // an odd dim keeps one zero column
  for (int64_t k = 0; k < half; ++k) {
    const float e = (neg_log * static_cast<float>(k)) / static_cast<float>(half);
    const float f = static_cast<float>(std::exp(static_cast<double>(e)));
    for (int64_t b = 0; b < B; ++b) {
      const float arg = t[static_cast<size_t>(b)] * f;
      v[static_cast<size_t>(b * dim + k)] = static_cast<float>(std::cos(static_cast<double>(arg)));
      v[static_cast<size_t>(b * dim + half + k)] = static_cast<float>(std::sin(static_cast<double>(arg)));
    }
  }
  return Tensor::from_f32(v, {B, dim});
}

TimestepEmbedder TimestepEmbedder::load(const Loader& l, const std::string& p, int64_t dim) {
  const std::string e = p + ".timestep_embedder.";
  return {l.get(e + "linear_1.weight", {dim, 256}), l.get(e + "linear_1.bias", {dim}),
          l.get(e + "linear_2.weight", {dim, dim}), l.get(e + "linear_2.bias", {dim}), l.compute};
}

Tensor TimestepEmbedder::operator()(const std::vector<float>& t) const {
  const Tensor proj = timestep_sinusoid(t, 256).to(compute);  // timesteps_proj.to(hidden_dtype)
  return ops::linear(ops::silu(ops::linear(proj, w1, b1)), w2, b2);
}

SpaceToDepthDownsample SpaceToDepthDownsample::load(const Loader& l, const std::string& prefix, int64_t in, int64_t out,
                                                    std::array<int64_t, 3> stride, VaePadding padding) {
  const int64_t s = prod(stride);
  VIDAX_CHECK(out % s == 0 && (in * s) % out == 0, "LTX-2 video VAE: SpaceToDepthDownsample at "
                                                       << l.prefix << prefix << " from " << in << " to " << out
                                                       << " channels with stride " << s
                                                       << " (out must divide by the stride and in * stride by out)");
  return {CausalConv3d::load(l, prefix + ".conv", in, out / s, padding), stride, out};
}

Tensor SpaceToDepthDownsample::operator()(const Tensor& x0, bool causal) const {
  const Tensor x = stride[0] == 2 ? ops::concat({x0.slice(2, 0, 1), x0}, 2) : x0;
  const Tensor s2d = ops::pixel_unshuffle3d(x, stride);  // [B, in * s, T', H', W'], channel (c, rt, rh, rw)
  const Shape& sh = s2d.shape();
  const Tensor skip = ops::mean(s2d.view({sh[0], out_channels, sh[1] / out_channels, sh[2], sh[3], sh[4]}), 2);
  return ops::add(ops::pixel_unshuffle3d(conv(x, causal), stride), skip);
}

DepthToSpaceUpsample DepthToSpaceUpsample::load(const Loader& l, const std::string& prefix, int64_t in,
                                                std::array<int64_t, 3> stride, bool residual, int64_t reduction,
                                                VaePadding padding) {
  const int64_t s = prod(stride);
  VIDAX_CHECK((s * in) % reduction == 0 && (s * in / reduction) % s == 0 && (!residual || s % reduction == 0),
              "LTX-2 video VAE: DepthToSpaceUpsample at " << l.prefix << prefix << " of " << in << " channels, stride "
                                                          << s << ", multiplier " << reduction
                                                          << " does not divide into whole channels");
  return {CausalConv3d::load(l, prefix + ".conv", in, s * in / reduction, padding), stride, residual, reduction};
}

Tensor DepthToSpaceUpsample::operator()(const Tensor& x, bool causal) const {
  const auto drop_first = [this](const Tensor& t) { return stride[0] == 2 ? t.slice(2, 1, t.size(2)) : t; };
  Tensor y = drop_first(ops::pixel_shuffle3d(conv(x, causal), stride));
  if (!residual) return y;
  // The input's depth-to-space repeated along the channels (torch .repeat: whole copies in a row).
  const Tensor d2s = ops::pixel_shuffle3d(x, stride);
  const std::vector<Tensor> copies(static_cast<size_t>(prod(stride) / reduction), d2s);
  return ops::add(y, drop_first(copies.size() == 1 ? d2s : ops::concat(copies, 1)));
}

AttnBlock3D AttnBlock3D::load(const Loader& l, const std::string& p, int64_t c) {
  AttnBlock3D a;
  // F.normalize(x, dim=1) * (sqrt(C) * gamma): the product is the reference's fp32 tensor.
  a.gamma = ops::scale(l.get(p + ".norm.gamma", {c, 1, 1}).reshape({1, c, 1, 1}), std::sqrt(static_cast<double>(c)));
  a.qkv_w = l.get(p + ".to_qkv.weight", {3 * c, c, 1, 1}).reshape({3 * c, c});
  a.qkv_b = l.get(p + ".to_qkv.bias", {3 * c});
  a.proj_w = l.get(p + ".proj.weight", {c, c, 1, 1}).reshape({c, c});
  a.proj_b = l.get(p + ".proj.bias", {c});
  return a;
}

Tensor AttnBlock3D::operator()(const Tensor& x) const {
  const int64_t B = x.size(0), C = x.size(1), T = x.size(2), H = x.size(3), W = x.size(4);
  // "b c t h w -> (b t) c h w", the norm over channels, then "bt c h w -> bt (h w) c".
  const Tensor frames = x.permute({0, 2, 1, 3, 4}).reshape({B * T, C, H, W});
  const Tensor normed = ops::mul(ops::l2_normalize(frames, 1), gamma);
  const Tensor tokens = normed.permute({0, 2, 3, 1}).reshape({B * T, H * W, C});
  const Tensor qkv = ops::linear(tokens, qkv_w, qkv_b);  // [BT, HW, 3C]: q, k, v chunks
  const auto head = [&](int64_t i) { return qkv.slice(2, i * C, (i + 1) * C).contiguous().unsqueeze(2); };
  const Tensor o = ops::attention(head(0), head(1), head(2));  // one head of width C, scale 1/sqrt(C)
  const Tensor y = ops::linear(o.reshape({B * T, H * W, C}), proj_w, proj_b);
  return ops::add(x, y.reshape({B, T, H, W, C}).permute({0, 4, 1, 2, 3}));
}

Tensor patchify(const Tensor& x, int64_t p) {
  if (p == 1) return x;
  const Tensor s2d = ops::pixel_unshuffle3d(x, {1, p, p});  // channel (c, ih, iw)
  const Shape& s = s2d.shape();
  const int64_t c = s[1] / (p * p);
  return s2d.view({s[0], c, p, p, s[2], s[3], s[4]}).permute({0, 1, 3, 2, 4, 5, 6}).reshape(s);  // (c, iw, ih)
}

Tensor unpatchify(const Tensor& x, int64_t p) {
  if (p == 1) return x;
  const Shape s = x.shape();
  const int64_t c = s[1] / (p * p);
  const Tensor hw = x.contiguous().view({s[0], c, p, p, s[2], s[3], s[4]}).permute({0, 1, 3, 2, 4, 5, 6}).reshape(s);
  return ops::pixel_shuffle3d(hw, {1, p, p});
}

PerChannelStatistics PerChannelStatistics::load(const Loader& l, const std::string& prefix, int64_t c) {
  return {l.get(prefix + "per_channel_statistics.mean-of-means", {c}).reshape({1, c, 1, 1, 1}),
          l.get(prefix + "per_channel_statistics.std-of-means", {c}).reshape({1, c, 1, 1, 1})};
}

Tensor PerChannelStatistics::normalize(const Tensor& x) const { return ops::div(ops::sub(x, mean), std); }
Tensor PerChannelStatistics::un_normalize(const Tensor& x) const { return ops::add(ops::mul(x, std), mean); }

}  // namespace vidax::ltx2::vae
