// Wan 2.2 VAE, read top to bottom like wan/modules/vae2_2.py: config, patchify, the AvgDown3D /
// DupUp3D shortcuts, Down_ResidualBlock / Up_ResidualBlock, Encoder3d, Decoder3d, WanVAE_'s chunked
// encode / decode, the wrapper's constants. The blocks they are made of are Wan 2.1's (vae_blocks.h).
#include "models/wan/vae22.h"

#include "backend/ops.h"
#include "core/host_memory.h"
#include "models/wan/vae_blocks.h"
#include <cmath>
#include <set>

namespace vidax::wan {

using namespace vae_blocks;

// ============================================================================ config

namespace {
Wan22VAEConfig check_levels(const Wan22VAEConfig& c, const nlohmann::json& j);
LatentScale latent_scale_constants();

// diffusers' AutoencoderKLWan config (vae/config.json of a diffusers Wan2.2-TI2V-5B): its names,
// its defaults for what is absent (base_dim 96, decoder_base_dim = base_dim, z_dim 16, ...), and
// what makes it the Wan 2.2 VAE checked: is_residual, 12 channels in and out (patchify 2),
// patch_size 2; latents_mean / latents_std, when given, must be the wrapper's constants the engine
// uses, and the scale factors those of the levels.
Wan22VAEConfig parse_diffusers_config(const nlohmann::json& j) {
  static const std::set<std::string> known{
      "_class_name",    "_diffusers_version", "_name_or_path", "base_dim",    "decoder_base_dim", "z_dim",
      "dim_mult",       "num_res_blocks",     "attn_scales",   "temperal_downsample", "dropout", "latents_mean",
      "latents_std",    "is_residual",        "in_channels",   "out_channels", "patch_size", "scale_factor_temporal",
      "scale_factor_spatial", "clip_output"};
  for (const auto& [k, v] : j.items())
    VIDAX_CHECK(known.count(k), "Wan 2.2 VAE config (diffusers AutoencoderKLWan): unknown field '" << k << "'");
  if (j.contains("_class_name"))
    VIDAX_CHECK(j.at("_class_name") == "AutoencoderKLWan", "Wan 2.2 VAE config: _class_name "
                                                              << j.at("_class_name").dump() << ", not AutoencoderKLWan");
  VIDAX_CHECK(j.value("is_residual", false), "Wan 2.2 VAE config: an AutoencoderKLWan without is_residual is the "
                                             "Wan 2.1 VAE, not the Wan 2.2 one: " << j.dump());
  for (const char* k : {"in_channels", "out_channels"})
    VIDAX_CHECK(j.value(k, 3) == 12, "Wan 2.2 VAE config: " << k << " " << j.value(k, 3)
                                                             << " (the Wan 2.2 VAE patchifies 3 channels into 12)");
  VIDAX_CHECK(!j.contains("patch_size") || j.at("patch_size") == 2,
              "Wan 2.2 VAE config: patch_size " << j.at("patch_size").dump() << " (the Wan 2.2 VAE's is 2)");
  Wan22VAEConfig c;
  c.dim = j.value("base_dim", int64_t{96});
  c.dec_dim = j.contains("decoder_base_dim") && !j.at("decoder_base_dim").is_null() ? j.at("decoder_base_dim").get<int64_t>()
                                                                                       : c.dim;
  c.z_dim = j.value("z_dim", int64_t{16});
  c.dim_mult = j.value("dim_mult", std::vector<int64_t>{1, 2, 4, 4});
  c.num_res_blocks = j.value("num_res_blocks", int64_t{2});
  c.attn_scales = j.value("attn_scales", std::vector<double>{});
  c.temperal_downsample = j.value("temperal_downsample", std::vector<bool>{false, true, true});
  c = check_levels(c, j);
  for (const auto& [k, want] : {std::pair<const char*, int64_t>{"scale_factor_temporal", c.temporal_factor()},
                                {"scale_factor_spatial", c.spatial_factor()}})
    VIDAX_CHECK(!j.contains(k) || j.at(k).is_null() || j.at(k).get<int64_t>() == want,
                "Wan 2.2 VAE config: " << k << " " << j.at(k).dump() << ", but its levels give " << want);
  const LatentScale ref = latent_scale_constants();
  for (const auto& [k, values] : {std::pair<const char*, const std::vector<float>*>{"latents_mean", &ref.mean},
                                  {"latents_std", &ref.std}}) {
    if (!j.contains(k)) continue;
    const auto given = j.at(k).get<std::vector<double>>();
    bool same = given.size() == values->size();
    for (size_t i = 0; same && i < given.size(); ++i) same = std::fabs(given[i] - (*values)[i]) <= 1e-6;
    VIDAX_CHECK(same, "Wan 2.2 VAE config: " << k << " differs from Wan2_2_VAE's constants, which the engine uses "
                                                "(a VAE with other latent statistics is not supported)");
  }
  return c;
}

Wan22VAEConfig parse_config(const nlohmann::json& j) {
  if (j.contains("_class_name") || j.contains("base_dim")) return parse_diffusers_config(j);
  static const std::set<std::string> known{"dim",         "dec_dim",  "z_dim",         "dim_mult",
                                           "num_res_blocks", "attn_scales", "temperal_downsample", "dropout"};
  for (const auto& [k, v] : j.items())
    VIDAX_CHECK(known.count(k), "Wan 2.2 VAE config: unknown field '" << k << "' (WanVAE_ of vae2_2.py takes dim, "
                                                                         "dec_dim, z_dim, dim_mult, num_res_blocks, "
                                                                         "attn_scales, temperal_downsample, dropout)");
  Wan22VAEConfig c;
  c.dim = j.value("dim", c.dim);
  c.dec_dim = j.value("dec_dim", c.dec_dim);
  c.z_dim = j.value("z_dim", c.z_dim);
  c.dim_mult = j.value("dim_mult", c.dim_mult);
  c.num_res_blocks = j.value("num_res_blocks", c.num_res_blocks);
  c.attn_scales = j.value("attn_scales", c.attn_scales);
  c.temperal_downsample = j.value("temperal_downsample", c.temperal_downsample);
  return check_levels(c, j);
}

Wan22VAEConfig check_levels(const Wan22VAEConfig& c, const nlohmann::json& j) {
  VIDAX_CHECK(c.dim > 0 && c.dec_dim > 0 && c.z_dim > 0 && c.num_res_blocks > 0,
              "Wan 2.2 VAE config: dim, dec_dim, z_dim, num_res_blocks must be positive: " << j.dump());
  VIDAX_CHECK(c.dim_mult.size() >= 2 && c.dim_mult.size() <= 4,
              "Wan 2.2 VAE config: dim_mult needs 2..4 levels, found " << c.dim_mult.size());
  for (int64_t m : c.dim_mult) VIDAX_CHECK(m > 0, "Wan 2.2 VAE config: dim_mult entries must be positive");
  VIDAX_CHECK(c.temperal_downsample.size() + 1 == c.dim_mult.size(),
              "Wan 2.2 VAE config: temperal_downsample needs len(dim_mult) - 1 = " << c.dim_mult.size() - 1
                                                                                  << " entries, found "
                                                                                  << c.temperal_downsample.size());
  VIDAX_CHECK(c.attn_scales.empty(), "Wan 2.2 VAE config: attn_scales must be empty (found "
                                         << nlohmann::json(c.attn_scales).dump() << ")");
  return c;
}
}  // namespace

Wan22VAEConfig Wan22VAEConfig::from_json(const nlohmann::json& j) {
  VIDAX_CHECK(j.is_object(), "Wan 2.2 VAE config: expected a JSON object, found " << j.dump());
  try {
    return parse_config(j);
  } catch (const nlohmann::json::exception& e) {
    throw Error(msg() << "Wan 2.2 VAE config: " << e.what() << " in " << j.dump());
  }
}

nlohmann::json Wan22VAEConfig::to_json() const {
  return {{"dim", dim},
          {"dec_dim", dec_dim},
          {"z_dim", z_dim},
          {"dim_mult", dim_mult},
          {"num_res_blocks", num_res_blocks},
          {"attn_scales", attn_scales},
          {"temperal_downsample", temperal_downsample},
          {"dropout", 0.0}};
}

int64_t Wan22VAEConfig::temporal_factor() const {
  int64_t f = 1;
  for (bool t : temperal_downsample) f *= t ? 2 : 1;
  return f;
}

int64_t Wan22VAEConfig::spatial_factor() const { return kPatch << (dim_mult.size() - 1); }

LatentScale wan22_latent_scale() { return latent_scale_constants(); }

namespace {
LatentScale latent_scale_constants() {
  // wan/modules/vae2_2.py, class Wan2_2_VAE.
  return {{-0.2289f, -0.0052f, -0.1323f, -0.2339f, -0.2799f, 0.0174f, 0.1838f,  0.1557f,  -0.1382f, 0.0542f,
           0.2813f,  0.0891f,  0.1570f,  -0.0098f, 0.0375f,  -0.1825f, -0.2246f, -0.1207f, -0.0698f, 0.5109f,
           0.2665f,  -0.2108f, -0.2158f, 0.2502f,  -0.2055f, -0.0322f, 0.1109f,  0.1567f,  -0.0729f, 0.0899f,
           -0.2799f, -0.1230f, -0.0313f, -0.1649f, 0.0117f,  0.0723f,  -0.2839f, -0.2083f, -0.0520f, 0.3748f,
           0.0152f,  0.1957f,  0.1433f,  -0.2944f, 0.3573f,  -0.0548f, -0.1681f, -0.0667f},
          {0.4765f, 1.0364f, 0.4514f, 1.1677f, 0.5313f, 0.4990f, 0.4818f, 0.5013f, 0.8158f, 1.0344f,
           0.5894f, 1.0901f, 0.6885f, 0.6165f, 0.8454f, 0.4978f, 0.5759f, 0.3523f, 0.7135f, 0.6804f,
           0.5833f, 1.4146f, 0.8986f, 0.5659f, 0.7069f, 0.5338f, 0.4889f, 0.4917f, 0.4069f, 0.4999f,
           0.6866f, 0.4093f, 0.5709f, 0.6065f, 0.6415f, 0.4944f, 0.5726f, 1.2042f, 0.5458f, 1.6887f,
           0.3971f, 1.0600f, 0.3943f, 0.5537f, 0.5444f, 0.4089f, 0.7468f, 0.7744f}};
}
}  // namespace

// ============================================================================ patchify

Tensor vae22_patchify(const Tensor& x) {
  VIDAX_CHECK(x.dim() == 5 && x.size(3) % 2 == 0 && x.size(4) % 2 == 0,
              "Wan 2.2 VAE patchify: expected [B, C, F, H, W] with even H and W, found " << x.str());
  const int64_t B = x.size(0), C = x.size(1), F = x.size(2), h = x.size(3) / 2, w = x.size(4) / 2;
  const Tensor xc = x.is_contiguous() ? x : ops::copy(x);
  // b c f (h q) (w r) -> b (c r q) f h w
  return ops::copy(xc.view({B, C, F, h, 2, w, 2}).permute({0, 1, 6, 4, 2, 3, 5})).view({B, 4 * C, F, h, w});
}

Tensor vae22_unpatchify(const Tensor& x) {
  VIDAX_CHECK(x.dim() == 5 && x.size(1) % 4 == 0,
              "Wan 2.2 VAE unpatchify: expected [B, 4C, F, h, w], found " << x.str());
  const int64_t B = x.size(0), C = x.size(1) / 4, F = x.size(2), h = x.size(3), w = x.size(4);
  const Tensor xc = x.is_contiguous() ? x : ops::copy(x);
  // b (c r q) f h w -> b c f (h q) (w r)
  return ops::copy(xc.view({B, C, 2, 2, F, h, w}).permute({0, 1, 4, 5, 3, 6, 2})).view({B, C, F, 2 * h, 2 * w});
}

namespace {

// ============================================================================ shortcuts

// AvgDown3D(in, out, factor_t, factor_s): zero frames in front up to a multiple of factor_t, then
// each (factor_t, factor_s, factor_s) cell to channels (order c, t, h, w: pixel_unshuffle3d's) and
// the mean over groups of in * factor / out consecutive channels.
struct AvgDown3D {
  int64_t in = 0, out = 0, ft = 1, fs = 1;

  Tensor operator()(const Frames& frames) const {
    Tensor x = join_frames(frames);
    const int64_t pad_t = (ft - x.size(2) % ft) % ft;
    if (pad_t > 0) x = ops::pad(x, {0, 0, 0, 0, pad_t, 0});
    if (ft * fs * fs > 1) x = ops::pixel_unshuffle3d(x, {ft, fs, fs});
    const int64_t group = in * ft * fs * fs / out;
    if (group == 1) return x;
    return ops::mean(x.view({x.size(0), out, group, x.size(2), x.size(3), x.size(4)}), 2);
  }
};

// DupUp3D(in, out, factor_t, factor_s): each channel repeated out * factor / in times
// (repeat_interleave), then channels to (factor_t, factor_s, factor_s) cells (pixel_shuffle3d's
// order); on the first chunk the first factor_t - 1 frames are dropped.
struct DupUp3D {
  int64_t in = 0, out = 0, ft = 1, fs = 1;

  Tensor operator()(const Frames& frames, bool first_chunk) const {
    Tensor x = join_frames(frames);
    const int64_t repeats = out * ft * fs * fs / in;
    if (repeats > 1) {
      const Tensor u = x.unsqueeze(2);  // [B, C, 1, T, H, W]
      x = ops::concat(std::vector<Tensor>(static_cast<size_t>(repeats), u), 2)
              .view({x.size(0), x.size(1) * repeats, x.size(2), x.size(3), x.size(4)});
    }
    x = ops::pixel_shuffle3d(x, {ft, fs, fs});
    if (first_chunk && ft > 1) x = ops::copy(x.slice(2, ft - 1, x.size(2)));
    return x;
  }
};

// Adds the shortcut (one tensor over the chunk) to the main path's frames.
Frames add_shortcut(Frames main, const Tensor& shortcut) {
  VIDAX_CHECK(shortcut.size(2) == static_cast<int64_t>(main.size()),
              "Wan 2.2 VAE: the shortcut has " << shortcut.size(2) << " frames, the main path " << main.size());
  for (size_t t = 0; t < main.size(); ++t)
    main[t] = ops::add(main[t], shortcut.slice(2, static_cast<int64_t>(t), static_cast<int64_t>(t) + 1));
  return main;
}

// Down_ResidualBlock: ResidualBlocks (and the level's Resample) + AvgDown3D of the level's input.
struct DownLevel {
  std::vector<Block> blocks;
  AvgDown3D shortcut;

  Frames forward(Frames x, FeatCache& cache) const {
    const Tensor skip = shortcut(x);  // the chunk as it enters the level (x_copy)
    for (const Block& b : blocks) x = run_block(b, std::move(x), cache);
    return add_shortcut(std::move(x), skip);
  }
};

// Up_ResidualBlock: ResidualBlocks (and the level's Resample) + DupUp3D of the level's input
// when the level upsamples.
struct UpLevel {
  std::vector<Block> blocks;
  std::optional<DupUp3D> shortcut;

  Frames forward(Frames x, FeatCache& cache, bool first_chunk) const {
    Tensor skip;
    if (shortcut) skip = (*shortcut)(x, first_chunk);
    for (const Block& b : blocks) x = run_block(b, std::move(x), cache);
    return shortcut ? add_shortcut(std::move(x), skip) : x;
  }
};

}  // namespace

// ============================================================================ Encoder3d

struct Wan22VAE::Encoder {
  CausalConv3d conv1;
  size_t conv1_slot = 0;
  std::vector<DownLevel> downsamples;
  Middle middle;
  Head head;
  size_t num_slots = 0;

  Encoder(ParamReader& p, const Wan22VAEConfig& c) {
    size_t slot = 0;
    std::vector<int64_t> dims{c.dim};
    for (int64_t m : c.dim_mult) dims.push_back(c.dim * m);
    conv1 = CausalConv3d::load(p, "encoder.conv1", 3 * 4, dims[0], {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
    conv1_slot = slot++;
    const size_t levels = c.dim_mult.size();
    for (size_t i = 0; i < levels; ++i) {
      const bool down = i + 1 != levels, t_down = i < c.temperal_downsample.size() && c.temperal_downsample[i];
      const std::string prefix = name(i) + ".downsamples.";
      DownLevel level;
      level.shortcut = {dims[i], dims[i + 1], t_down ? 2 : 1, down ? 2 : 1};
      VIDAX_CHECK((dims[i] * level.shortcut.ft * level.shortcut.fs * level.shortcut.fs) % dims[i + 1] == 0,
                  "Wan 2.2 VAE: AvgDown3D of level " << i << " needs in * factor divisible by out (" << dims[i]
                                                     << ", " << dims[i + 1] << ")");
      int64_t in_dim = dims[i];
      for (int64_t r = 0; r < c.num_res_blocks; ++r) {
        level.blocks.emplace_back(
            ResidualBlock::load(p, prefix + std::to_string(level.blocks.size()), in_dim, dims[i + 1], slot));
        in_dim = dims[i + 1];
      }
      if (down) {
        auto mode = t_down ? Resample::Mode::Downsample3d : Resample::Mode::Downsample2d;
        level.blocks.emplace_back(
            Resample::load(p, prefix + std::to_string(level.blocks.size()), dims[i + 1], mode, slot, false));
      }
      downsamples.push_back(std::move(level));
    }
    middle = Middle::load(p, "encoder.middle", dims.back(), slot);
    head = Head::load(p, "encoder.head", dims.back(), 2 * c.z_dim, slot);
    num_slots = slot;
  }

  static std::string name(size_t i) { return "encoder.downsamples." + std::to_string(i); }

  Frames forward(Frames chunk, FeatCache& cache, const Tap& tap) const {
    Frames x = cached_conv(conv1, cache, conv1_slot, static_cast<int64_t>(chunk.size()),
                           [&](int64_t i) { return std::move(chunk[static_cast<size_t>(i)]); });
    tap_if(tap, "encoder.conv1", x);
    for (size_t i = 0; i < downsamples.size(); ++i) {
      x = downsamples[i].forward(std::move(x), cache);
      tap_if(tap, name(i), x);
    }
    x = middle.forward(std::move(x), cache, "encoder.middle", tap);
    x = head.forward(std::move(x), cache);
    tap_if(tap, "encoder.head.2", x);
    return x;
  }
};

// ============================================================================ Decoder3d

struct Wan22VAE::Decoder {
  CausalConv3d conv1;
  size_t conv1_slot = 0;
  Middle middle;
  std::vector<UpLevel> upsamples;
  Head head;
  size_t num_slots = 0;

  Decoder(ParamReader& p, const Wan22VAEConfig& c) {
    size_t slot = 0;
    // dims = dec_dim * ([dim_mult[-1]] + reversed(dim_mult)); temporal upsampling = reversed downsampling.
    std::vector<int64_t> dims{c.dec_dim * c.dim_mult.back()};
    for (auto it = c.dim_mult.rbegin(); it != c.dim_mult.rend(); ++it) dims.push_back(c.dec_dim * *it);
    const std::vector<bool> t_up(c.temperal_downsample.rbegin(), c.temperal_downsample.rend());
    conv1 = CausalConv3d::load(p, "decoder.conv1", c.z_dim, dims[0], {3, 3, 3}, {1, 1, 1}, {1, 1, 1});
    conv1_slot = slot++;
    middle = Middle::load(p, "decoder.middle", dims[0], slot);
    const size_t levels = c.dim_mult.size();
    for (size_t i = 0; i < levels; ++i) {
      const bool up = i + 1 != levels, t_upsample = i < t_up.size() && t_up[i];
      const std::string prefix = name(i) + ".upsamples.";
      UpLevel level;
      if (up) {
        level.shortcut = DupUp3D{dims[i], dims[i + 1], t_upsample ? 2 : 1, 2};
        VIDAX_CHECK((dims[i + 1] * level.shortcut->ft * 4) % dims[i] == 0,
                    "Wan 2.2 VAE: DupUp3D of level " << i << " needs out * factor divisible by in (" << dims[i]
                                                     << ", " << dims[i + 1] << ")");
      }
      int64_t in_dim = dims[i];
      for (int64_t r = 0; r < c.num_res_blocks + 1; ++r) {
        level.blocks.emplace_back(
            ResidualBlock::load(p, prefix + std::to_string(level.blocks.size()), in_dim, dims[i + 1], slot));
        in_dim = dims[i + 1];
      }
      if (up) {
        auto mode = t_upsample ? Resample::Mode::Upsample3d : Resample::Mode::Upsample2d;
        level.blocks.emplace_back(
            Resample::load(p, prefix + std::to_string(level.blocks.size()), dims[i + 1], mode, slot, false));
      }
      upsamples.push_back(std::move(level));
    }
    head = Head::load(p, "decoder.head", dims.back(), 3 * 4, slot);
    num_slots = slot;
  }

  static std::string name(size_t i) { return "decoder.upsamples." + std::to_string(i); }

  Frames forward(Frames chunk, FeatCache& cache, bool first_chunk, const Tap& tap) const {
    Frames x = cached_conv(conv1, cache, conv1_slot, static_cast<int64_t>(chunk.size()),
                           [&](int64_t i) { return std::move(chunk[static_cast<size_t>(i)]); });
    tap_if(tap, "decoder.conv1", x);
    x = middle.forward(std::move(x), cache, "decoder.middle", tap);
    for (size_t i = 0; i < upsamples.size(); ++i) {
      x = upsamples[i].forward(std::move(x), cache, first_chunk);
      tap_if(tap, name(i), x);
      release_free_heap();
    }
    x = head.forward(std::move(x), cache);
    tap_if(tap, "decoder.head.2", x);
    return x;
  }
};

// ============================================================================ WanVAE_

Wan22VAE::Wan22VAE(const Wan22VAEConfig& config, const WeightLookup& weights, Parts parts, DType compute)
    : config_(config), compute_(compute) {
  VIDAX_CHECK(parts.encoder || parts.decoder, "Wan 2.2 VAE: build at least the encoder or the decoder");
  VIDAX_CHECK(compute == DType::F32 || compute == DType::BF16 || compute == DType::F16,
              "Wan 2.2 VAE: compute dtype must be a float type, found " << dtype_name(compute));
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

std::vector<std::pair<std::string, Shape>> Wan22VAE::parameter_shapes(const Wan22VAEConfig& config, Parts parts) {
  std::vector<std::pair<std::string, Shape>> shapes;
  std::vector<std::string> names;
  ParamReader p(shapes, names);
  if (parts.encoder) {
    (void)Encoder(p, config);
    (void)CausalConv3d::load(p, "conv1", 2 * config.z_dim, 2 * config.z_dim, {1, 1, 1});
  }
  if (parts.decoder) {
    (void)Decoder(p, config);
    (void)CausalConv3d::load(p, "conv2", config.z_dim, config.z_dim, {1, 1, 1});
  }
  return shapes;
}

Wan22VAE::~Wan22VAE() = default;
Wan22VAE::Wan22VAE(Wan22VAE&&) noexcept = default;
Wan22VAE& Wan22VAE::operator=(Wan22VAE&&) noexcept = default;

Tensor Wan22VAE::encode(const Tensor& video_in, const Tap& tap) const {
  VIDAX_CHECK(encoder_, "Wan 2.2 VAE: encode called on an instance built without the encoder");
  const host_memory::ScopedLimit no_block_cache(0);  // as WanVAE::decode
  const int64_t s = config_.spatial_factor();
  VIDAX_CHECK(video_in.dim() == 5 && video_in.size(1) == 3,
              "Wan 2.2 VAE encode: expected a video [B, 3, F, H, W], found " << video_in.str());
  VIDAX_CHECK(video_in.size(3) % s == 0 && video_in.size(4) % s == 0,
              "Wan 2.2 VAE encode: height and width must be multiples of " << s << ", found " << video_in.str());
  const int64_t frames = video_in.size(2);
  VIDAX_CHECK(frames >= 1 && (frames - 1) % 4 == 0,
              "Wan 2.2 VAE encode: the frame count must be 4k+1 (1, 5, 9, ...), found " << frames);
  const Tensor video = vae22_patchify(video_in.dtype() == compute_ ? video_in : ops::cast(video_in, compute_));
  const Frames latents = encode_chunks(video, encoder_->num_slots, [&](Frames chunk, FeatCache& cache, int64_t) {
    return encoder_->forward(std::move(chunk), cache, tap);
  });
  Tensor h = ops::conv3d(join_frames(latents), conv1_w_, conv1_b_, {1, 1, 1}, {0, 0, 0});
  if (tap) tap("conv1", h);
  return ops::copy(h.slice(1, 0, config_.z_dim));  // mu
}

Tensor Wan22VAE::decode(const Tensor& mu_in, const Tap& tap) const {
  VIDAX_CHECK(decoder_, "Wan 2.2 VAE: decode called on an instance built without the decoder");
  const host_memory::ScopedLimit no_block_cache(0);
  VIDAX_CHECK(mu_in.dim() == 5 && mu_in.size(1) == config_.z_dim,
              "Wan 2.2 VAE decode: expected a latent [B, " << config_.z_dim << ", F, H, W], found " << mu_in.str());
  Tensor mu = mu_in.dtype() == compute_ ? mu_in : ops::cast(mu_in, compute_);
  Tensor x = ops::conv3d(mu, conv2_w_, conv2_b_, {1, 1, 1}, {0, 0, 0});
  if (tap) tap("conv2", x);
  // DupUp3D drops its first frames in the first chunk only.
  return vae22_unpatchify(join_frames(decode_chunks(x, decoder_->num_slots, [&](Frames chunk, FeatCache& cache, int64_t i) {
    return decoder_->forward(std::move(chunk), cache, i == 0, tap);
  })));
}

Tensor Wan22VAE::encode_normalized(const Tensor& video, const LatentScale& scale, const Tap& tap) const {
  Tensor z = normalize_latent(encode(video, tap), scale);
  return z.dtype() == DType::F32 ? z : ops::cast(z, DType::F32);
}

Tensor Wan22VAE::decode_normalized(const Tensor& z, const LatentScale& scale, const Tap& tap) const {
  Tensor zc = z.dtype() == compute_ ? z : ops::cast(z, compute_);
  Tensor video = decode(denormalize_latent(zc, scale), tap);
  if (video.dtype() != DType::F32) video = ops::cast(video, DType::F32);
  return ops::clamp(video, -1.0, 1.0);
}

}  // namespace vidax::wan
