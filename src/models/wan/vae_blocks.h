// The building blocks of the Wan video VAEs (wan/modules/vae.py of Wan2.1, shared by vae2_2.py of
// Wan2.2): parameters by official name, frames and the causal feature cache, CausalConv3d, RMS_norm,
// ResidualBlock, AttentionBlock, Resample, the middle and the head. WanVAE (vae.cpp) and Wan22VAE
// (vae22.cpp) assemble their encoders and decoders from these. Internal to the family.
#pragma once
#include <algorithm>
#include <array>
#include <cmath>
#include <functional>
#include <optional>
#include <string>
#include <variant>
#include <vector>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

#include "backend/ops.h"
#include "models/wan/vae.h"

namespace vidax::wan::vae_blocks {

// ============================================================================ parameters

// Reads parameters by official name, checks their shapes and records what was read.
class ParamReader {
 public:
  ParamReader(const WeightLookup& lookup, DType compute, std::vector<std::string>& names)
      : lookup_(lookup), compute_(compute), names_(names) {}
  // A probe: reads nothing, records each parameter's name and shape and hands out Meta tensors of
  // that shape (the state_dict's names and shapes for a config: demo weights, memory plans).
  ParamReader(std::vector<std::pair<std::string, Shape>>& probe, std::vector<std::string>& names)
      : lookup_(no_lookup()), compute_(DType::F32), names_(names), probe_(&probe) {}

  Tensor get(const std::string& name, const Shape& expected) {
    if (probe_) {
      probe_->emplace_back(name, expected);
      names_.push_back(name);
      return Tensor::empty(expected, compute_, Device::Meta);
    }
    Tensor t = lookup_(name);
    VIDAX_CHECK(t.defined(), "Wan VAE: parameter " << name << " is missing");
    VIDAX_CHECK(t.shape() == expected, "Wan VAE: parameter " << name << " has shape " << shape_str(t.shape())
                                                             << ", expected " << shape_str(expected));
    names_.push_back(name);
    // Explicit cast to the compute dtype (the reference runs fp32 whatever the file stores).
    return t.dtype() == compute_ ? t : ops::cast(t, compute_);
  }

 private:
  static const WeightLookup& no_lookup() {
    static const WeightLookup none = [](const std::string&) { return Tensor(); };
    return none;
  }
  const WeightLookup& lookup_;
  DType compute_;
  std::vector<std::string>& names_;
  std::vector<std::pair<std::string, Shape>>* probe_ = nullptr;
};

// ============================================================================ frames and the feature cache

constexpr int64_t kCacheT = 2;  // CACHE_T: frames each causal conv remembers across chunks

// Activations travel as one contiguous [B, C, 1, H, W] tensor per frame, in time order. Every op of
// the VAE is per frame except the causal convs, which read a window of kT frames; so a frame can be
// released the moment nothing reads it any more, and a cache slot keeps its frames by handle
// instead of copying them out of a chunk-sized buffer.
using Frames = std::vector<Tensor>;

inline Frames split_frames(const Tensor& x) {
  Frames f;
  for (int64_t t = 0; t < x.size(2); ++t) f.push_back(ops::copy(x.slice(2, t, t + 1)));
  return f;
}

inline Tensor join_frames(const Frames& f) { return f.size() == 1 ? f.front() : ops::concat(f, 2); }

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
inline Frames conv_sequence(const CausalConv3d& conv, int64_t zeros, const Frames& history, int64_t n,
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
inline Frames cached_conv(const CausalConv3d& conv, FeatCache& cache, size_t slot, int64_t n, const FrameSource& input,
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
// for an integer factor is pixel duplication, + 3x3 conv to C/2, Wan 2.2: to C), applied to each frame; the 3d
// modes add a cached temporal conv (time_conv).
struct Resample {
  enum class Mode { Upsample2d, Upsample3d, Downsample2d, Downsample3d };
  Mode mode = Mode::Upsample2d;
  Tensor conv_w, conv_b;  // the per-frame Conv2d (resample.1) as a [O, C, 1, 3, 3] conv3d
  std::optional<CausalConv3d> time_conv;
  size_t slot = 0;

  // halve_up: the upsampling conv maps C -> C/2 (Wan 2.1); Wan 2.2's keeps C.
  static Resample load(ParamReader& p, const std::string& prefix, int64_t dim, Mode mode, size_t& next_slot,
                       bool halve_up = true) {
    Resample r;
    r.mode = mode;
    const bool up = mode == Mode::Upsample2d || mode == Mode::Upsample3d;
    const int64_t out = up && halve_up ? dim / 2 : dim;
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

inline Frames run_block(const Block& b, Frames x, FeatCache& cache) {
  return std::visit([&](const auto& blk) { return blk.forward(std::move(x), cache); }, b);
}

// Hands the allocator's free heap pages back to the OS. Frames of the low-resolution levels are
// small enough for glibc to serve from its heap, and once freed they would stay resident while the
// full-resolution levels (whose frames are mmapped) run: ~0.1-0.3 GB at 832x480.
inline void release_free_heap() {
#if defined(__GLIBC__)
  malloc_trim(0);
#endif
}

inline void tap_if(const Tap& tap, const std::string& name, const Frames& x) {
  if (tap) tap(name, join_frames(x));
}

// The reference's causal chunking, shared by both VAEs: the encoder sees frames in chunks of
// 1, 4, 4, ... (the video is 4k+1 frames, checked by the caller); the decoder one latent frame per
// chunk. The feature cache carries each conv's last frames from one chunk to the next and is let go
// after the last. `forward(chunk_frames, cache, chunk_index)` runs the encoder or the decoder.
template <class Forward>
Frames encode_chunks(const Tensor& video, size_t num_slots, Forward&& forward) {
  const int64_t num_chunks = 1 + (video.size(2) - 1) / 4;
  FeatCache cache(num_slots);
  Frames latents;
  for (int64_t i = 0; i < num_chunks; ++i) {
    cache.keep = i + 1 < num_chunks;
    Tensor chunk = i == 0 ? video.slice(2, 0, 1) : video.slice(2, 1 + 4 * (i - 1), 1 + 4 * i);
    for (Tensor& f : forward(split_frames(chunk), cache, i)) latents.push_back(std::move(f));
  }
  return latents;
}

template <class Forward>
Frames decode_chunks(const Tensor& x, size_t num_slots, Forward&& forward) {
  const int64_t num_chunks = x.size(2);
  FeatCache cache(num_slots);
  Frames video;
  for (int64_t i = 0; i < num_chunks; ++i) {
    cache.keep = i + 1 < num_chunks;
    for (Tensor& f : forward(Frames{ops::copy(x.slice(2, i, i + 1))}, cache, i)) video.push_back(std::move(f));
  }
  return video;
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


}  // namespace vidax::wan::vae_blocks
