// Wan 2.1 VAE, read top to bottom like wan/modules/vae.py: primitives (CausalConv3d with its
// feature cache, RMS_norm), blocks (ResidualBlock, AttentionBlock, Resample), Encoder3d, Decoder3d,
// then WanVAE_'s chunked encode/decode and the wrapper's latent normalization.
#include "models/wan/vae.h"

#include <algorithm>
#include <cmath>
#include <map>
#include <optional>
#include <variant>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "backend/ops.h"
#include "core/host_memory.h"
#include "models/wan/checkpoint_keys.h"

namespace vidax::wan {

// ============================================================================ config

namespace {
WanVAEConfig parse_config(const nlohmann::json& j) {
  // The model-defining fields, as the one config parser (models/wan/checkpoint_keys.h) reads them
  // in either spelling; this adds what the engine checks on top.
  const translate::wan::VaeConfig m = translate::wan::VaeConfig::from_json(j);
  WanVAEConfig c;
  c.dim = m.dim;
  c.z_dim = m.z_dim;
  c.dim_mult = m.dim_mult;
  c.num_res_blocks = m.num_res_blocks;
  c.attn_scales = m.attn_scales;
  c.temperal_downsample = m.temperal_downsample;
  if (j.contains("base_dim")) {
    // diffusers AutoencoderKLWan: only the Wan 2.1 architecture is this class.
    if (j.contains("decoder_base_dim") && !j.at("decoder_base_dim").is_null())
      VIDAX_CHECK(j.at("decoder_base_dim").get<int64_t>() == c.dim,
                  "Wan VAE config: decoder_base_dim " << j.at("decoder_base_dim") << " != base_dim " << c.dim
                                                      << " is not the Wan 2.1 VAE");
    VIDAX_CHECK(!j.value("is_residual", false),
                "Wan VAE config: is_residual=true is the Wan 2.2 VAE, not supported by the Wan 2.1 VAE");
    VIDAX_CHECK(!j.contains("patch_size") || j.at("patch_size").is_null(),
                "Wan VAE config: patch_size " << j.at("patch_size") << " (Wan 2.2 VAE) is not supported");
    VIDAX_CHECK(j.value("in_channels", 3) == 3 && j.value("out_channels", 3) == 3,
                "Wan VAE config: in_channels/out_channels must be 3");
  }
  // dropout is the identity at inference, whatever its value.

  VIDAX_CHECK(c.dim > 0 && c.z_dim > 0 && c.num_res_blocks > 0,
              "Wan VAE config: dim, z_dim, num_res_blocks must be positive: " << j.dump());
  VIDAX_CHECK(c.dim_mult.size() >= 2 && c.dim_mult.size() <= 4,
              "Wan VAE config: dim_mult needs 2..4 levels (the reference halves the decoder's input "
              "channels at levels 1..3), found " << c.dim_mult.size());
  VIDAX_CHECK(c.temperal_downsample.size() + 1 == c.dim_mult.size(),
              "Wan VAE config: temperal_downsample needs len(dim_mult) - 1 = " << c.dim_mult.size() - 1
                                                                              << " entries, found "
                                                                              << c.temperal_downsample.size());
  // The reference's cached path calls attention blocks with the cache arguments and fails; the
  // published models have none.
  VIDAX_CHECK(c.attn_scales.empty(), "Wan VAE config: attn_scales must be empty (found "
                                         << j.at("attn_scales").dump() << ")");
  return c;
}
}  // namespace

WanVAEConfig WanVAEConfig::from_json(const nlohmann::json& j) {
  VIDAX_CHECK(j.is_object(), "Wan VAE config: expected a JSON object, found " << j.dump());
  try {
    return parse_config(j);
  } catch (const nlohmann::json::exception& e) {  // a field of the wrong type
    throw Error(msg() << "Wan VAE config: " << e.what() << " in " << j.dump());
  }
}

nlohmann::json WanVAEConfig::to_json() const {
  return {{"dim", dim},
          {"z_dim", z_dim},
          {"dim_mult", dim_mult},
          {"num_res_blocks", num_res_blocks},
          {"attn_scales", attn_scales},
          {"temperal_downsample", temperal_downsample},
          {"dropout", 0.0}};
}

int64_t WanVAEConfig::temporal_factor() const {
  int64_t f = 1;
  for (bool t : temperal_downsample) f *= t ? 2 : 1;
  return f;
}

int64_t WanVAEConfig::spatial_factor() const { return int64_t{1} << (dim_mult.size() - 1); }

LatentScale LatentScale::wan21() {
  // wan/modules/vae.py, class WanVAE.
  return {{-0.7571f, -0.7089f, -0.9113f, 0.1075f, -0.1745f, 0.9653f, -0.1517f, 1.5508f, 0.4134f, -0.0715f,
           0.5517f, -0.3632f, -0.1922f, -0.9497f, 0.2503f, -0.2921f},
          {2.8184f, 1.4541f, 2.3275f, 2.6558f, 1.2196f, 1.7708f, 2.6052f, 2.0743f, 3.2687f, 2.1526f, 2.8652f,
           1.5579f, 1.6382f, 1.1253f, 2.8251f, 1.9160f}};
}

LatentScale LatentScale::from_tensors(const Tensor& mean, const Tensor& std) {
  VIDAX_CHECK(mean.dim() == 1 && std.shape() == mean.shape(),
              "Wan VAE latent scale: mean and std must be vectors of one length, found "
                  << shape_str(mean.shape()) << " and " << shape_str(std.shape()));
  return {mean.to_f32_vector(), std.to_f32_vector()};
}

namespace {

// ============================================================================ parameters

// Reads parameters by official name, checks their shapes and records what was read.
class ParamReader {
 public:
  ParamReader(const WeightLookup& lookup, DType compute, std::vector<std::string>& names)
      : lookup_(lookup), compute_(compute), names_(names) {}

  Tensor get(const std::string& name, const Shape& expected) {
    Tensor t = lookup_(name);
    VIDAX_CHECK(t.defined(), "Wan VAE: parameter " << name << " is missing");
    VIDAX_CHECK(t.shape() == expected, "Wan VAE: parameter " << name << " has shape " << shape_str(t.shape())
                                                             << ", expected " << shape_str(expected));
    names_.push_back(name);
    // Explicit cast to the compute dtype (the reference runs fp32 whatever the file stores).
    return t.dtype() == compute_ ? t : ops::cast(t, compute_);
  }

 private:
  const WeightLookup& lookup_;
  DType compute_;
  std::vector<std::string>& names_;
};

// ============================================================================ frames and the feature cache

constexpr int64_t kCacheT = 2;  // CACHE_T: frames each causal conv remembers across chunks

// Activations travel as one contiguous [B, C, 1, H, W] tensor per frame, in time order. Every op of
// the VAE is per frame except the causal convs, which read a window of kT frames; so a frame can be
// released the moment nothing reads it any more, and a cache slot keeps its frames by handle
// instead of copying them out of a chunk-sized buffer.
using Frames = std::vector<Tensor>;

Frames split_frames(const Tensor& x) {
  Frames f;
  for (int64_t t = 0; t < x.size(2); ++t) f.push_back(ops::copy(x.slice(2, t, t + 1)));
  return f;
}

Tensor join_frames(const Frames& f) { return f.size() == 1 ? f.front() : ops::concat(f, 2); }

// Applies `op` to every frame, releasing each input frame as its output is made.
template <class Op>
Frames map_frames(Frames x, const Op& op) {
  for (Tensor& t : x) t = op(std::move(t));
  return x;
}

// One entry of the reference's feat_cache list. Each cached call site owns a fixed slot index
// (the reference's feat_idx counter visits the same sites in the same order every chunk).
struct CacheSlot {
  Frames frames;     // empty = None
  bool rep = false;  // the 'Rep' marker Resample(upsample3d) leaves after the first chunk
};

struct FeatCache {
  std::vector<CacheSlot> slots;
  // False for the last chunk: the reference still refills feat_cache then, but nothing reads it
  // again, so slots are emptied as they are consumed instead (same values, less memory).
  bool keep = true;
  explicit FeatCache(size_t n) : slots(n) {}
  CacheSlot& operator[](size_t i) { return slots[i]; }
};

// ============================================================================ primitives

// CausalConv3d: zero padding 2*p_t frames in front and none behind, p_h / p_w on both spatial
// sides. Cached frames, when given, are prepended and replace as many leading zero frames.
struct CausalConv3d {
  Tensor weight, bias;
  std::array<int64_t, 3> stride{1, 1, 1};
  std::array<int64_t, 3> padding{0, 0, 0};

  static CausalConv3d load(ParamReader& p, const std::string& prefix, int64_t in, int64_t out,
                           std::array<int64_t, 3> kernel, std::array<int64_t, 3> stride = {1, 1, 1},
                           std::array<int64_t, 3> padding = {0, 0, 0}) {
    CausalConv3d c;
    c.weight = p.get(prefix + ".weight", {out, in, kernel[0], kernel[1], kernel[2]});
    c.bias = p.get(prefix + ".bias", {out});
    c.stride = stride;
    c.padding = padding;
    return c;
  }

  // Leading zero frames left once `cached` frames of history stand in for the causal padding.
  int64_t front_zeros(int64_t cached) const {
    const int64_t front = 2 * padding[0] - cached;
    VIDAX_CHECK(front >= 0, "Wan VAE CausalConv3d: " << cached << " cached frames exceed the " << 2 * padding[0]
                                                     << "-frame causal padding");
    return front;
  }

  // One output frame from its window: `zeros` zero frames (the causal padding) then `window`; plus
  // `residual` when defined.
  Tensor frame(const std::vector<Tensor>& window, int64_t zeros, const Tensor& residual = {}) const {
    return ops::causal_conv3d(window, weight, bias, stride, {zeros, padding[1], padding[2]},
                              residual.defined() ? std::optional<Tensor>(residual) : std::nullopt);
  }

  // Frame-wise (kernel 1x1x1, the ResidualBlock shortcut).
  Tensor pointwise(const Tensor& x) const { return ops::conv3d(x, weight, bias, stride, {0, 0, 0}); }
};

using FrameSource = std::function<Tensor(int64_t)>;


// A causal conv over the sequence [`zeros` zero frames, history, n chunk frames]; chunk frame i is
// made by input(i) when first read. Output frames are computed from the last to the first, so a
// chunk frame is released as soon as no remaining output reads it: the conv holds its window plus
// its outputs, never its whole input and output at once. residual(j), when given, is added to output
// j inside the conv (the ResidualBlock's skip). `tail`, when given, receives the last tail_len frames
// of history + chunk (what a cache slot keeps); without it those frames are released too.
Frames conv_sequence(const CausalConv3d& conv, int64_t zeros, const Frames& history, int64_t n,
                     const FrameSource& input, int64_t tail_len, Frames* tail, const FrameSource& residual = {}) {
  const int64_t k = conv.weight.size(2), s = conv.stride[0];
  const int64_t h = static_cast<int64_t>(history.size()), len = zeros + h + n;
  VIDAX_CHECK(len >= k, "Wan VAE CausalConv3d: " << len << " frames (with padding) for a " << k << "-frame kernel");
  Frames made(static_cast<size_t>(n));
  std::vector<bool> was_made(static_cast<size_t>(n), false);
  auto at = [&](int64_t q) -> Tensor {  // frame q of the sequence, q >= zeros
    const int64_t i = q - zeros;
    if (i < h) return history[static_cast<size_t>(i)];
    const size_t c = static_cast<size_t>(i - h);
    if (!was_made[c]) {
      made[c] = input(static_cast<int64_t>(c));
      was_made[c] = true;
    }
    VIDAX_CHECK(made[c].defined(), "Wan VAE: chunk frame " << c << " read after its release");
    return made[c];
  };
  if (tail) {
    tail->clear();
    for (int64_t q = std::max(zeros, len - tail_len); q < len; ++q) tail->push_back(at(q));
  }
  const int64_t n_out = (len - k) / s + 1;
  Frames out(static_cast<size_t>(n_out));
  for (int64_t j = n_out - 1; j >= 0; --j) {
    const int64_t q0 = j * s, z = std::clamp<int64_t>(zeros - q0, 0, k);
    std::vector<Tensor> window;
    for (int64_t q = q0 + z; q < q0 + k; ++q) window.push_back(at(q));
    out[static_cast<size_t>(j)] = conv.frame(window, z, residual ? residual(j) : Tensor());
    window.clear();
    // Outputs before j read frames below (j - 1) s + k only.
    const int64_t still_read = j == 0 ? 0 : (j - 1) * s + k;
    for (int64_t q = std::max(still_read, zeros + h); q < q0 + k; ++q) made[static_cast<size_t>(q - zeros - h)] = Tensor();
  }
  return out;
}

// The reference's pattern around every cached CausalConv3d call (ResidualBlock, Encoder3d and
// Decoder3d conv1/head): run with the slot's frames as history, then remember this conv's last
// CACHE_T input frames (topped up in front with the slot's last frame when the chunk has a single
// frame: the last CACHE_T frames of history + chunk).
Frames cached_conv(const CausalConv3d& conv, FeatCache& cache, size_t slot, int64_t n, const FrameSource& input,
                   const FrameSource& residual = {}) {
  CacheSlot& s = cache[slot];
  Frames tail;
  Frames y = conv_sequence(conv, conv.front_zeros(static_cast<int64_t>(s.frames.size())), s.frames, n, input, kCacheT,
                           cache.keep ? &tail : nullptr, residual);
  s.frames = std::move(tail);
  return y;
}

// RMS_norm: F.normalize over channels (eps 1e-12 on the L2 norm) * sqrt(C) * gamma, in that order.
struct RMSNorm {
  Tensor gamma;  // [C, 1, 1, 1], broadcast over [B, C, T, H, W]
  double scale = 1;

  static RMSNorm load(ParamReader& p, const std::string& name, int64_t dim, bool images) {
    RMSNorm n;
    // images=True (attention) stores [C, 1, 1] for a [(B T), C, H, W] input; the engine normalizes
    // the 5-D tensor directly, which reduces over the same channels at each (b, t, h, w).
    Shape shape = images ? Shape{dim, 1, 1} : Shape{dim, 1, 1, 1};
    n.gamma = p.get(name, shape).reshape({dim, 1, 1, 1});
    n.scale = std::sqrt(static_cast<double>(dim));
    return n;
  }

  Tensor operator()(const Tensor& x) const {
    Tensor y = ops::l2_normalize(x, 1, 1e-12);
    y = ops::scale(y, scale);
    return ops::mul(y, gamma);
  }
  // norm then SiLU in one pass; written over x's frame when the caller hands over its last handle.
  Tensor silu(Tensor x) const { return ops::l2_norm_scale_silu(std::move(x), gamma, scale, 1e-12); }
};

// ============================================================================ blocks

// ResidualBlock(in, out): shortcut (1x1x1 conv when in != out, never cached) +
// RMS -> SiLU -> CausalConv3d(3) -> RMS -> SiLU -> (dropout) -> CausalConv3d(3).
struct ResidualBlock {
  RMSNorm norm1, norm2;
  CausalConv3d conv1, conv2;
  std::optional<CausalConv3d> shortcut;
  size_t slot1 = 0, slot2 = 0;

  static ResidualBlock load(ParamReader& p, const std::string& prefix, int64_t in, int64_t out,
                            size_t& next_slot) {
    ResidualBlock b;
    b.norm1 = RMSNorm::load(p, prefix + ".residual.0.gamma", in, false);
    b.conv1 = CausalConv3d::load(p, prefix + ".residual.2", in, out, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
    b.norm2 = RMSNorm::load(p, prefix + ".residual.3.gamma", out, false);
    b.conv2 = CausalConv3d::load(p, prefix + ".residual.6", out, out, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
    if (in != out) b.shortcut = CausalConv3d::load(p, prefix + ".shortcut", in, out, {1, 1, 1});
    b.slot1 = next_slot++;
    b.slot2 = next_slot++;
    return b;
  }

  // The chunk's input frames stay alive for the residual; the normalized frames are made as conv1
  // first reads them and conv1's output frames are normalized in place as conv2 first reads them;
  // conv2 adds each output frame's residual itself, releasing that input frame.
  Frames forward(Frames x, FeatCache& cache) const {
    const int64_t n = static_cast<int64_t>(x.size());
    Frames y = cached_conv(conv1, cache, slot1, n, [&](int64_t i) { return norm1.silu(x[static_cast<size_t>(i)]); });
    return cached_conv(
        conv2, cache, slot2, n, [&](int64_t i) { return norm2.silu(std::move(y[static_cast<size_t>(i)])); },
        [&](int64_t j) {
          Tensor in = std::move(x[static_cast<size_t>(j)]);
          return shortcut ? shortcut->pointwise(in) : in;
        });
  }
};

// AttentionBlock(C): per frame, single head over the H*W positions, scale 1/sqrt(C);
// the 1x1 Conv2d projections are linears over the channel vector of each position.
struct AttentionBlock {
  RMSNorm norm;
  Tensor qkv_w, qkv_b, proj_w, proj_b;
  int64_t dim = 0;

  static AttentionBlock load(ParamReader& p, const std::string& prefix, int64_t dim) {
    AttentionBlock a;
    a.dim = dim;
    a.norm = RMSNorm::load(p, prefix + ".norm.gamma", dim, true);
    a.qkv_w = p.get(prefix + ".to_qkv.weight", {3 * dim, dim, 1, 1}).reshape({3 * dim, dim});
    a.qkv_b = p.get(prefix + ".to_qkv.bias", {3 * dim});
    a.proj_w = p.get(prefix + ".proj.weight", {dim, dim, 1, 1}).reshape({dim, dim});
    a.proj_b = p.get(prefix + ".proj.bias", {dim});
    return a;
  }

  Tensor forward(const Tensor& x) const {
    const int64_t B = x.size(0), C = x.size(1), T = x.size(2), H = x.size(3), W = x.size(4);
    Tensor tokens = norm(x).permute({0, 2, 3, 4, 1});  // [B, T, H, W, C]
    // q = channels [0, C), k = [C, 2C), v = [2C, 3C) of to_qkv's output.
    Tensor qkv = ops::linear(tokens, qkv_w, qkv_b).view({B * T, H * W, 3 * C});
    Tensor q = qkv.slice(2, 0, C).unsqueeze(2);  // [B*T, H*W, 1 head, C]
    Tensor k = qkv.slice(2, C, 2 * C).unsqueeze(2);
    Tensor v = qkv.slice(2, 2 * C, 3 * C).unsqueeze(2);
    Tensor o = ops::attention(q, k, v).view({B, T, H, W, C});  // scale 1/sqrt(C)
    Tensor out = ops::linear(o, proj_w, proj_b);                 // [B, T, H, W, C]
    return ops::add(out.permute({0, 4, 1, 2, 3}), x);
  }

  Frames forward(Frames x) const {
    return map_frames(std::move(x), [&](const Tensor& f) { return forward(f); });
  }
};

// Resample: spatial 2x down (ZeroPad2d(0,1,0,1) + 3x3 stride-2 conv) or up (nearest-exact 2x, which
// for an integer factor is pixel duplication, + 3x3 conv to C/2), applied to each frame; the 3d
// modes add a cached temporal conv (time_conv).
struct Resample {
  enum class Mode { Upsample2d, Upsample3d, Downsample2d, Downsample3d };
  Mode mode = Mode::Upsample2d;
  Tensor conv_w, conv_b;  // the per-frame Conv2d (resample.1) as a [O, C, 1, 3, 3] conv3d
  std::optional<CausalConv3d> time_conv;
  size_t slot = 0;

  static Resample load(ParamReader& p, const std::string& prefix, int64_t dim, Mode mode, size_t& next_slot) {
    Resample r;
    r.mode = mode;
    const bool up = mode == Mode::Upsample2d || mode == Mode::Upsample3d;
    const int64_t out = up ? dim / 2 : dim;
    r.conv_w = p.get(prefix + ".resample.1.weight", {out, dim, 3, 3}).reshape({out, dim, 1, 3, 3});
    r.conv_b = p.get(prefix + ".resample.1.bias", {out});
    if (mode == Mode::Upsample3d) {
      r.time_conv = CausalConv3d::load(p, prefix + ".time_conv", dim, 2 * dim, {3, 1, 1}, {1, 1, 1}, {1, 0, 0});
      r.slot = next_slot++;
    } else if (mode == Mode::Downsample3d) {
      r.time_conv = CausalConv3d::load(p, prefix + ".time_conv", dim, dim, {3, 1, 1}, {2, 1, 1}, {0, 0, 0});
      r.slot = next_slot++;
    }
    return r;
  }

  Frames forward(Frames x, FeatCache& cache) const {
    if (mode == Mode::Upsample3d) x = time_upsample(std::move(x), cache);
    const bool up = mode == Mode::Upsample2d || mode == Mode::Upsample3d;
    x = map_frames(std::move(x), [&](Tensor f) {
      if (up) {
        f = ops::upsample_nearest(f, {2, 2});
        return ops::conv3d(f, conv_w, conv_b, {1, 1, 1}, {0, 1, 1});
      }
      f = ops::pad(f, {0, 1, 0, 1});
      return ops::conv3d(f, conv_w, conv_b, {1, 2, 2}, {0, 0, 0});
    });
    if (mode == Mode::Downsample3d) x = time_downsample(std::move(x), cache);
    return x;
  }

  // upsample3d: chunk 0 only leaves the 'Rep' marker (its frame is not time-upsampled). From chunk
  // 1 on, time_conv (C -> 2C) runs causally (chunk 1 with plain zero padding) and channel halves
  // [0:C] / [C:2C] become frames 2j / 2j+1. After the 'Rep' chunk the reference caches
  // [zeros, x[-1]] for a 1-frame chunk; keeping [x[-1]] instead leaves that zero frame to the
  // causal padding, which reads the same zeros.
  Frames time_upsample(Frames x, FeatCache& cache) const {
    CacheSlot& s = cache[slot];
    if (!s.rep && s.frames.empty()) {
      s.rep = true;
      return x;
    }
    const Frames history = s.rep ? Frames{} : s.frames;
    Frames tail;
    Frames y = conv_sequence(
        *time_conv, time_conv->front_zeros(static_cast<int64_t>(history.size())), history,
        static_cast<int64_t>(x.size()), [&](int64_t i) { return std::move(x[static_cast<size_t>(i)]); }, kCacheT,
        cache.keep ? &tail : nullptr);
    s.frames = std::move(tail);
    s.rep = false;
    Frames out;
    for (Tensor& f : y) {
      const int64_t C = f.size(1) / 2;
      out.push_back(ops::copy(f.slice(1, 0, C)));
      out.push_back(ops::copy(f.slice(1, C, 2 * C)));
      f = Tensor();
    }
    return out;
  }

  // downsample3d: chunk 0 keeps its (spatially downsampled) frames and skips time_conv; later
  // chunks run time_conv (kernel 3, stride 2, no padding) over [previous chunk's last frame, x].
  Frames time_downsample(Frames x, FeatCache& cache) const {
    CacheSlot& s = cache[slot];
    if (s.frames.empty()) {
      s.frames = {x.back()};  // the reference clones all of x but only ever reads [-1:]
      return x;
    }
    Frames tail;
    Frames y = conv_sequence(
        *time_conv, 0, {s.frames.back()}, static_cast<int64_t>(x.size()),
        [&](int64_t i) { return std::move(x[static_cast<size_t>(i)]); }, 1, cache.keep ? &tail : nullptr);
    s.frames = std::move(tail);
    return y;
  }
};

using Block = std::variant<ResidualBlock, Resample>;

Frames run_block(const Block& b, Frames x, FeatCache& cache) {
  return std::visit([&](const auto& blk) { return blk.forward(std::move(x), cache); }, b);
}

// Hands the allocator's free heap pages back to the OS. Frames of the low-resolution levels are
// small enough for glibc to serve from its heap, and once freed they would stay resident while the
// full-resolution levels (whose frames are mmapped) run: ~0.1-0.3 GB at 832x480.
void release_free_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

void tap_if(const Tap& tap, const std::string& name, const Frames& x) {
  if (tap) tap(name, join_frames(x));
}

// Encoder3d / Decoder3d middle: ResidualBlock, AttentionBlock, ResidualBlock.
struct Middle {
  ResidualBlock res0, res2;
  AttentionBlock attn;

  static Middle load(ParamReader& p, const std::string& prefix, int64_t dim, size_t& next_slot) {
    Middle m;
    m.res0 = ResidualBlock::load(p, prefix + ".0", dim, dim, next_slot);
    m.attn = AttentionBlock::load(p, prefix + ".1", dim);
    m.res2 = ResidualBlock::load(p, prefix + ".2", dim, dim, next_slot);
    return m;
  }

  Frames forward(Frames x, FeatCache& cache, const std::string& prefix, const Tap& tap) const {
    x = res0.forward(std::move(x), cache);
    tap_if(tap, prefix + ".0", x);
    x = attn.forward(std::move(x));
    tap_if(tap, prefix + ".1", x);
    x = res2.forward(std::move(x), cache);
    tap_if(tap, prefix + ".2", x);
    return x;
  }
};

// head: RMS_norm, SiLU, CausalConv3d(3) (indices 0, 1, 2).
struct Head {
  RMSNorm norm;
  CausalConv3d conv;
  size_t slot = 0;

  static Head load(ParamReader& p, const std::string& prefix, int64_t in, int64_t out, size_t& next_slot) {
    Head h;
    h.norm = RMSNorm::load(p, prefix + ".0.gamma", in, false);
    h.conv = CausalConv3d::load(p, prefix + ".2", in, out, {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
    h.slot = next_slot++;
    return h;
  }

  Frames forward(Frames x, FeatCache& cache) const {
    return cached_conv(conv, cache, slot, static_cast<int64_t>(x.size()),
                       [&](int64_t i) { return norm.silu(std::move(x[static_cast<size_t>(i)])); });
  }
};

}  // namespace

// ============================================================================ Encoder3d

struct WanVAE::Encoder {
  CausalConv3d conv1;
  size_t conv1_slot = 0;
  std::vector<Block> downsamples;
  Middle middle;
  Head head;
  size_t num_slots = 0;

  Encoder(ParamReader& p, const WanVAEConfig& c) {
    size_t slot = 0;
    std::vector<int64_t> dims{c.dim};
    for (int64_t m : c.dim_mult) dims.push_back(c.dim * m);
    conv1 = CausalConv3d::load(p, "encoder.conv1", 3, dims[0], {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
    conv1_slot = slot++;
    const size_t levels = c.dim_mult.size();
    int64_t out_dim = dims[0];
    for (size_t i = 0; i < levels; ++i) {
      int64_t in_dim = dims[i];
      out_dim = dims[i + 1];
      for (int64_t r = 0; r < c.num_res_blocks; ++r) {
        downsamples.emplace_back(ResidualBlock::load(p, name(downsamples.size()), in_dim, out_dim, slot));
        in_dim = out_dim;
      }
      if (i + 1 != levels) {
        auto mode = c.temperal_downsample[i] ? Resample::Mode::Downsample3d : Resample::Mode::Downsample2d;
        downsamples.emplace_back(Resample::load(p, name(downsamples.size()), out_dim, mode, slot));
      }
    }
    middle = Middle::load(p, "encoder.middle", out_dim, slot);
    head = Head::load(p, "encoder.head", out_dim, 2 * c.z_dim, slot);
    num_slots = slot;
  }

  static std::string name(size_t i) { return "encoder.downsamples." + std::to_string(i); }

  Frames forward(Frames chunk, FeatCache& cache, const Tap& tap) const {
    Frames x = cached_conv(conv1, cache, conv1_slot, static_cast<int64_t>(chunk.size()),
                           [&](int64_t i) { return std::move(chunk[static_cast<size_t>(i)]); });
    tap_if(tap, "encoder.conv1", x);
    for (size_t i = 0; i < downsamples.size(); ++i) {
      x = run_block(downsamples[i], std::move(x), cache);
      tap_if(tap, name(i), x);
    }
    x = middle.forward(std::move(x), cache, "encoder.middle", tap);
    x = head.forward(std::move(x), cache);
    tap_if(tap, "encoder.head.2", x);
    return x;
  }
};

// ============================================================================ Decoder3d

struct WanVAE::Decoder {
  CausalConv3d conv1;
  size_t conv1_slot = 0;
  Middle middle;
  std::vector<Block> upsamples;
  Head head;
  size_t num_slots = 0;

  Decoder(ParamReader& p, const WanVAEConfig& c) {
    size_t slot = 0;
    // dims = dim * [dim_mult[-1]] + reversed(dim_mult); temporal upsampling = reversed downsampling.
    std::vector<int64_t> dims{c.dim * c.dim_mult.back()};
    for (auto it = c.dim_mult.rbegin(); it != c.dim_mult.rend(); ++it) dims.push_back(c.dim * *it);
    std::vector<bool> temperal_upsample(c.temperal_downsample.rbegin(), c.temperal_downsample.rend());
    conv1 = CausalConv3d::load(p, "decoder.conv1", c.z_dim, dims[0], {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
    conv1_slot = slot++;
    middle = Middle::load(p, "decoder.middle", dims[0], slot);
    const size_t levels = c.dim_mult.size();
    int64_t out_dim = dims[0];
    for (size_t i = 0; i < levels; ++i) {
      // Every level after the first starts from the previous Resample's C/2 output channels.
      int64_t in_dim = i > 0 ? dims[i] / 2 : dims[i];
      out_dim = dims[i + 1];
      for (int64_t r = 0; r < c.num_res_blocks + 1; ++r) {
        upsamples.emplace_back(ResidualBlock::load(p, name(upsamples.size()), in_dim, out_dim, slot));
        in_dim = out_dim;
      }
      if (i + 1 != levels) {
        auto mode = temperal_upsample[i] ? Resample::Mode::Upsample3d : Resample::Mode::Upsample2d;
        upsamples.emplace_back(Resample::load(p, name(upsamples.size()), out_dim, mode, slot));
      }
    }
    head = Head::load(p, "decoder.head", out_dim, 3, slot);
    num_slots = slot;
  }

  static std::string name(size_t i) { return "decoder.upsamples." + std::to_string(i); }

  Frames forward(Frames chunk, FeatCache& cache, const Tap& tap) const {
    Frames x = cached_conv(conv1, cache, conv1_slot, static_cast<int64_t>(chunk.size()),
                           [&](int64_t i) { return std::move(chunk[static_cast<size_t>(i)]); });
    tap_if(tap, "decoder.conv1", x);
    x = middle.forward(std::move(x), cache, "decoder.middle", tap);
    for (size_t i = 0; i < upsamples.size(); ++i) {
      x = run_block(upsamples[i], std::move(x), cache);
      tap_if(tap, name(i), x);
      if (std::holds_alternative<Resample>(upsamples[i])) release_free_heap();
    }
    x = head.forward(std::move(x), cache);
    tap_if(tap, "decoder.head.2", x);
    return x;
  }
};

// ============================================================================ WanVAE_

WanVAE::WanVAE(const WanVAEConfig& config, const WeightLookup& weights, Parts parts, DType compute)
    : config_(config), compute_(compute) {
  VIDAX_CHECK(parts.encoder || parts.decoder, "Wan VAE: build at least the encoder or the decoder");
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16 || compute == DType::F16,
              "Wan VAE: compute dtype must be a float type, found " << dtype_name(compute));
  ParamReader p(weights, compute, names_);
  if (parts.encoder) {
    encoder_ = std::make_unique<Encoder>(p, config_);
    auto c = CausalConv3d::load(p, "conv1", 2 * config_.z_dim, 2 * config_.z_dim, {1, 1, 1});
    conv1_w_ = c.weight;
    conv1_b_ = c.bias;
  }
  if (parts.decoder) {
    decoder_ = std::make_unique<Decoder>(p, config_);
    auto c = CausalConv3d::load(p, "conv2", config_.z_dim, config_.z_dim, {1, 1, 1});
    conv2_w_ = c.weight;
    conv2_b_ = c.bias;
  }
}

WanVAE::~WanVAE() = default;
WanVAE::WanVAE(WanVAE&&) noexcept = default;
WanVAE& WanVAE::operator=(WanVAE&&) noexcept = default;

Tensor WanVAE::encode(const Tensor& video_in, const Tap& tap) const {
  VIDAX_CHECK(encoder_, "Wan VAE: encode called on an instance built without the encoder");
  const host_memory::ScopedLimit no_block_cache(0);  // as in decode()
  VIDAX_CHECK(video_in.dim() == 5 && video_in.size(1) == 3,
              "Wan VAE encode: expected a video [B, 3, F, H, W], found " << video_in.str());
  const int64_t frames = video_in.size(2);
  // The reference encodes chunks of 1, 4, 4, ... frames and silently drops any remainder.
  VIDAX_CHECK(frames >= 1 && (frames - 1) % 4 == 0,
              "Wan VAE encode: the frame count must be 4k+1 (1, 5, 9, ...), found " << frames);
  Tensor video = video_in.dtype() == compute_ ? video_in : ops::cast(video_in, compute_);

  const int64_t num_chunks = 1 + (frames - 1) / 4;
  FeatCache cache(encoder_->num_slots);
  Frames latents;
  for (int64_t i = 0; i < num_chunks; ++i) {
    cache.keep = i + 1 < num_chunks;
    Tensor chunk = i == 0 ? video.slice(2, 0, 1) : video.slice(2, 1 + 4 * (i - 1), 1 + 4 * i);
    for (Tensor& f : encoder_->forward(split_frames(chunk), cache, tap)) latents.push_back(std::move(f));
  }
  Tensor out = join_frames(latents);
  Tensor h = ops::conv3d(out, conv1_w_, conv1_b_, {1, 1, 1}, {0, 0, 0});  // conv1
  if (tap) tap("conv1", h);
  return ops::copy(h.slice(1, 0, config_.z_dim));  // mu; log_var = the other half, unused
}

Tensor WanVAE::decode(const Tensor& mu_in, const Tap& tap) const {
  VIDAX_CHECK(decoder_, "Wan VAE: decode called on an instance built without the decoder");
  // The frames are freed and re-made per chunk at many sizes; cached blocks would add to the
  // decode's peak memory (issue 5 budget: <= 3 GB at 832x480x5), so the block cache is emptied
  // (the DiT's activations go back to the system) and kept off while the VAE runs.
  const host_memory::ScopedLimit no_block_cache(0);
  VIDAX_CHECK(mu_in.dim() == 5 && mu_in.size(1) == config_.z_dim,
              "Wan VAE decode: expected a latent [B, " << config_.z_dim << ", F, H, W], found " << mu_in.str());
  Tensor mu = mu_in.dtype() == compute_ ? mu_in : ops::cast(mu_in, compute_);
  Tensor x = ops::conv3d(mu, conv2_w_, conv2_b_, {1, 1, 1}, {0, 0, 0});  // conv2, all frames
  if (tap) tap("conv2", x);
  // One latent frame per chunk, as the reference.
  const int64_t num_chunks = x.size(2);
  FeatCache cache(decoder_->num_slots);
  Frames video;
  for (int64_t i = 0; i < num_chunks; ++i) {
    cache.keep = i + 1 < num_chunks;
    for (Tensor& f : decoder_->forward({ops::copy(x.slice(2, i, i + 1))}, cache, tap)) video.push_back(std::move(f));
  }
  return join_frames(video);
}

namespace {
// mean and 1/std as [1, z, 1, 1, 1] tensors; 1/std is rounded to fp32 like torch's `1.0 / std`.
std::pair<Tensor, Tensor> scale_tensors(const LatentScale& s, int64_t z_dim, DType dtype) {
  VIDAX_CHECK(static_cast<int64_t>(s.mean.size()) == z_dim && s.std.size() == s.mean.size(),
              "Wan VAE latent scale: " << s.mean.size() << " means / " << s.std.size()
                                       << " stds for z_dim " << z_dim);
  std::vector<float> inv(s.std.size());
  for (size_t i = 0; i < inv.size(); ++i) inv[i] = 1.0f / s.std[i];
  return {Tensor::from_f32(s.mean, {1, z_dim, 1, 1, 1}, dtype), Tensor::from_f32(inv, {1, z_dim, 1, 1, 1}, dtype)};
}
}  // namespace

Tensor normalize_latent(const Tensor& mu, const LatentScale& scale) {
  auto [mean, inv_std] = scale_tensors(scale, mu.size(1), mu.dtype());
  return ops::mul(ops::sub(mu, mean), inv_std);  // (mu - mean) * (1/std)
}

Tensor denormalize_latent(const Tensor& z, const LatentScale& scale) {
  auto [mean, inv_std] = scale_tensors(scale, z.size(1), z.dtype());
  return ops::add(ops::div(z, inv_std), mean);  // z / (1/std) + mean
}

Tensor WanVAE::encode_normalized(const Tensor& video, const LatentScale& scale, const Tap& tap) const {
  Tensor z = normalize_latent(encode(video, tap), scale);
  return z.dtype() == DType::F32 ? z : ops::cast(z, DType::F32);  // the wrapper's .float()
}

Tensor WanVAE::decode_normalized(const Tensor& z, const LatentScale& scale, const Tap& tap) const {
  Tensor zc = z.dtype() == compute_ ? z : ops::cast(z, compute_);
  Tensor video = decode(denormalize_latent(zc, scale), tap);
  if (video.dtype() != DType::F32) video = ops::cast(video, DType::F32);  // .float()
  return ops::clamp(video, -1.0, 1.0);                                     // .clamp_(-1, 1)
}

// ---- tiled decode (diffusers AutoencoderKLWan.tiled_decode) ------------------------------

VaeTiling VaeTiling::for_tile(int64_t pixels) {
  VIDAX_CHECK(pixels >= 64 && pixels % 32 == 0,
              "--vae-tile " << pixels << ": the tile must be a multiple of 32 pixels, at least 64 (e.g. 256, "
                            "diffusers' default)");
  return VaeTiling{pixels, pixels / 4 * 3};
}

namespace {

// b with its first rows (dim 3) or columns (dim 4) blended from a's last ones:
// b[y] = a[-e + y] * (1 - y / e) + b[y] * (y / e), e = min(a's, b's size, extent).
Tensor blend(const Tensor& a, const Tensor& b, int64_t extent, int64_t dim) {
  const int64_t e = std::min({a.size(dim), b.size(dim), extent});
  if (e <= 0) return b;
  std::vector<float> wb(static_cast<size_t>(e)), wa(static_cast<size_t>(e));
  for (int64_t y = 0; y < e; ++y) {
    wb[static_cast<size_t>(y)] = static_cast<float>(static_cast<double>(y) / static_cast<double>(e));
    wa[static_cast<size_t>(y)] = static_cast<float>(1.0 - static_cast<double>(y) / static_cast<double>(e));
  }
  Shape ws(5, 1);
  ws[static_cast<size_t>(dim)] = e;
  const Tensor tb = Tensor::from_f32(wb, ws, b.dtype()), ta = Tensor::from_f32(wa, ws, b.dtype());
  const Tensor head = ops::add(ops::mul(ops::copy(a.slice(dim, a.size(dim) - e, a.size(dim))), ta),
                               ops::mul(ops::copy(b.slice(dim, 0, e)), tb));
  if (e == b.size(dim)) return head;
  return ops::concat({head, ops::copy(b.slice(dim, e, b.size(dim)))}, dim);
}

}  // namespace

int64_t WanVAE::tile_count(int64_t latent_h, int64_t latent_w, const VaeTiling* tiling) const {
  const int64_t sf = config_.spatial_factor();
  if (!tiling || (latent_h * sf <= tiling->tile && latent_w * sf <= tiling->tile)) return 1;
  const int64_t step = tiling->stride / sf;
  return ((latent_h + step - 1) / step) * ((latent_w + step - 1) / step);
}

Tensor WanVAE::decode_tiled(const Tensor& mu, const VaeTiling& t, const Tap& tap) const {
  VIDAX_CHECK(mu.dim() == 5 && mu.size(1) == config_.z_dim,
              "Wan VAE decode: expected a latent [B, " << config_.z_dim << ", F, H, W], found " << mu.str());
  const int64_t sf = config_.spatial_factor(), h = mu.size(3), w = mu.size(4);
  // diffusers tiles only when the latent is larger than one tile.
  if (tile_count(h, w, &t) == 1) return decode(mu, tap);
  const int64_t tl = t.tile / sf, step = t.stride / sf, blend_px = t.overlap();
  std::vector<Tensor> prev_row, out_rows;
  for (int64_t i = 0; i < h; i += step) {
    std::vector<Tensor> row, cropped;
    for (int64_t j = 0; j < w; j += step) {
      const Tensor part = ops::copy(mu.slice(3, i, std::min(h, i + tl)).slice(4, j, std::min(w, j + tl)));
      Tensor tile = decode(part, tap);
      if (!prev_row.empty()) tile = blend(prev_row[row.size()], tile, blend_px, 3);
      if (!row.empty()) tile = blend(row.back(), tile, blend_px, 4);
      cropped.push_back(ops::copy(tile.slice(3, 0, std::min(t.stride, tile.size(3)))
                                      .slice(4, 0, std::min(t.stride, tile.size(4)))));
      row.push_back(std::move(tile));
    }
    out_rows.push_back(ops::concat(cropped, 4));
    prev_row = std::move(row);  // row i + 1 blends with these (already blended) tiles
  }
  const Tensor video = ops::concat(out_rows, 3);
  return ops::copy(video.slice(3, 0, h * sf).slice(4, 0, w * sf));
}

Tensor WanVAE::decode_normalized(const Tensor& z, const LatentScale& scale, const VaeTiling* tiling,
                                 const Tap& tap) const {
  if (!tiling) return decode_normalized(z, scale, tap);
  Tensor zc = z.dtype() == compute_ ? z : ops::cast(z, compute_);
  Tensor video = decode_tiled(denormalize_latent(zc, scale), *tiling, tap);
  if (video.dtype() != DType::F32) video = ops::cast(video, DType::F32);
  return ops::clamp(video, -1.0, 1.0);
}

}  // namespace vidax::wan
