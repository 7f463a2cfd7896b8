// The LTX-2 audio VAE's blocks with the backend's ops (audio_vae_blocks.h).
#include "models/ltx2/audio_vae_blocks.h"

#include "backend/ops.h"
#include "core/error.h"

namespace vidax::ltx2::audio_vae {

namespace {
constexpr double kEps = 1e-6;  // PixelNorm and GroupNorm alike (build_normalization_layer)
constexpr int64_t kGroups = 32;
}  // namespace

CausalConv2d CausalConv2d::load(const vae::Loader& l, const std::string& prefix, int64_t in, int64_t out, int64_t k,
                                Causality axis) {
  return {l.get(prefix + ".conv.weight", {out, in, k, k}), l.get(prefix + ".conv.bias", {out}), axis, k};
}

Tensor CausalConv2d::operator()(const Tensor& x) const {
  const int64_t p = k - 1;
  // F.pad order: {W before, W after, H before, H after}.
  std::vector<int64_t> pads{p / 2, p - p / 2, p / 2, p - p / 2};
  if (axis == Causality::Height) pads[2] = p, pads[3] = 0;
  if (axis == Causality::Width || axis == Causality::WidthCompatibility) pads[0] = p, pads[1] = 0;
  const Tensor xp = p == 0 ? x : ops::pad(x, pads);
  return ops::conv2d(xp, w, b, {1, 1}, {0, 0});
}

Norm Norm::load(const vae::Loader& l, const std::string& prefix, Kind kind, int64_t channels) {
  Norm n;
  n.kind = kind;
  if (kind == Kind::Group) {
    VIDAX_CHECK(channels % kGroups == 0, "LTX-2 audio VAE: GroupNorm(32) at " << l.prefix << prefix << " over "
                                                                              << channels
                                                                              << " channels (not divisible)");
    n.w = l.get(prefix + ".weight", {channels});
    n.b = l.get(prefix + ".bias", {channels});
  }
  return n;
}

Tensor Norm::operator()(const Tensor& x) const {
  if (kind == Kind::Group) return ops::group_norm(x, kGroups, w, b, kEps);
  // mean over channels: the channels made the last dim for rms_norm, then put back.
  return ops::rms_norm(x.permute({0, 2, 3, 1}), std::nullopt, kEps).permute({0, 3, 1, 2});
}

ResnetBlock ResnetBlock::load(const vae::Loader& l, const std::string& p, int64_t in, int64_t out, Norm::Kind norm,
                              Causality axis) {
  ResnetBlock r;
  r.norm1 = Norm::load(l, p + ".norm1", norm, in);
  r.conv1 = CausalConv2d::load(l, p + ".conv1", in, out, 3, axis);
  r.norm2 = Norm::load(l, p + ".norm2", norm, out);
  r.conv2 = CausalConv2d::load(l, p + ".conv2", out, out, 3, axis);
  if (in != out) r.nin_shortcut = CausalConv2d::load(l, p + ".nin_shortcut", in, out, 1, axis);
  return r;
}

Tensor ResnetBlock::operator()(const Tensor& x) const {
  Tensor h = conv1(ops::silu(norm1(x)));
  h = conv2(ops::silu(norm2(h)));
  return ops::add(nin_shortcut ? (*nin_shortcut)(x) : x, h);
}

AttnBlock AttnBlock::load(const vae::Loader& l, const std::string& p, int64_t c, Norm::Kind norm) {
  AttnBlock a;
  a.norm = Norm::load(l, p + ".norm", norm, c);
  const Shape w{c, c, 1, 1}, b{c};
  a.q_w = l.get(p + ".q.weight", w), a.q_b = l.get(p + ".q.bias", b);
  a.k_w = l.get(p + ".k.weight", w), a.k_b = l.get(p + ".k.bias", b);
  a.v_w = l.get(p + ".v.weight", w), a.v_b = l.get(p + ".v.bias", b);
  a.proj_w = l.get(p + ".proj_out.weight", w), a.proj_b = l.get(p + ".proj_out.bias", b);
  return a;
}

Tensor AttnBlock::operator()(const Tensor& x) const {
  const int64_t B = x.size(0), C = x.size(1), H = x.size(2), W = x.size(3);
  const Tensor h = norm(x);
  // [B, C, H, W] -> [B, H W, 1 head, C]
  const auto tokens = [&](const Tensor& t) {
    return t.reshape({B, C, H * W}).permute({0, 2, 1}).reshape({B, H * W, 1, C});
  };
  const Tensor q = tokens(ops::conv2d(h, q_w, q_b, {1, 1}, {0, 0}));
  const Tensor k = tokens(ops::conv2d(h, k_w, k_b, {1, 1}, {0, 0}));
  const Tensor v = tokens(ops::conv2d(h, v_w, v_b, {1, 1}, {0, 0}));
  const Tensor o = ops::attention(q, k, v).reshape({B, H * W, C}).permute({0, 2, 1}).reshape({B, C, H, W});
  return ops::add(x, ops::conv2d(o, proj_w, proj_b, {1, 1}, {0, 0}));
}

Upsample Upsample::load(const vae::Loader& l, const std::string& prefix, int64_t channels, Causality axis) {
  return {CausalConv2d::load(l, prefix + ".conv", channels, channels, 3, axis)};
}

Tensor Upsample::operator()(const Tensor& x) const {
  const Tensor y = conv(ops::upsample_nearest(x, {2, 2}));
  if (conv.axis == Causality::Height) return y.slice(2, 1, y.size(2)).contiguous();
  if (conv.axis == Causality::Width) return y.slice(3, 1, y.size(3)).contiguous();
  return y;
}

Downsample Downsample::load(const vae::Loader& l, const std::string& prefix, int64_t channels, bool with_conv,
                            Causality axis) {
  VIDAX_CHECK(
      with_conv || axis == Causality::None,
      "LTX-2 audio VAE: causality is only supported when resamp_with_conv is true (" << l.prefix << prefix << ")");
  Downsample d;
  d.axis = axis;
  if (with_conv) {
    d.w = l.get(prefix + ".conv.weight", {channels, channels, 3, 3});
    d.b = l.get(prefix + ".conv.bias", {channels});
  }
  return d;
}

Tensor Downsample::operator()(const Tensor& x) const {
  if (!w) {  // avg_pool2d(kernel 2, stride 2): floor, an odd last row / column dropped
    const int64_t B = x.size(0), C = x.size(1), H = x.size(2) / 2, W = x.size(3) / 2;
    VIDAX_CHECK(H >= 1 && W >= 1, "LTX-2 audio VAE: average pooling needs at least 2 x 2 positions, found " << x.str());
    const Tensor v = x.slice(2, 0, 2 * H).slice(3, 0, 2 * W).contiguous().reshape({B, C, H, 2, W, 2});
    return ops::mean(ops::mean(v, 5), 3);
  }
  std::vector<int64_t> pads{0, 1, 0, 1};
  if (axis == Causality::Height) pads = {0, 1, 2, 0};
  if (axis == Causality::Width) pads = {2, 0, 0, 1};
  if (axis == Causality::WidthCompatibility) pads = {1, 0, 0, 1};
  return ops::conv2d(ops::pad(x, pads), *w, b, {2, 2}, {0, 0});
}

}  // namespace vidax::ltx2::audio_vae
