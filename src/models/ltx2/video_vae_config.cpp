// VideoVaeConfig::from_json: the checkpoint's `vae` dict as model_configurator reads it.
#include "models/ltx2/video_vae_config.h"

#include <algorithm>

#include "core/error.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

using Json = nlohmann::json;
using translate::strict_get;
using translate::value_or;

namespace {

bool starts_with(const std::string& s, const char* p) { return s.rfind(p, 0) == 0; }

VaePadding padding_of(const std::string& s, const char* field) {
  if (s == "zeros") return VaePadding::Zeros;
  if (s == "reflect") return VaePadding::Reflect;
  if (s == "replicate") return VaePadding::Replicate;
  if (s == "circular") return VaePadding::Circular;
  throw Error(msg() << "LTX-2 video VAE config: " << field << " '" << s
                    << "' (zeros, reflect, replicate or circular: PaddingModeType)");
}

const std::vector<std::string> kEncoderBlocks{"res_x",
                                              "res_x_y",
                                              "compress_time",
                                              "compress_space",
                                              "compress_all",
                                              "compress_all_x_y",
                                              "compress_all_res",
                                              "compress_space_res",
                                              "compress_time_res",
                                              "attn"};
const std::vector<std::string> kDecoderBlocks{"res_x",          "res_x_y",      "compress_time",
                                              "compress_space", "compress_all", "attn"};

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

std::vector<VaeBlock> blocks_of(const Json& j, const char* field, bool decoder) {
  VIDAX_CHECK(j.is_array(),
              "LTX-2 video VAE config: " << field << " must be a list of [name, params], found " << j.dump());
  std::vector<VaeBlock> out;
  for (size_t i = 0; i < j.size(); ++i) {
    const std::string where = std::string(field) + "[" + std::to_string(i) + "]";
    const Json& e = j[i];
    VIDAX_CHECK(e.is_array() && e.size() == 2 && e[0].is_string(),
                "LTX-2 video VAE config: " << where << " must be [name, params], found " << e.dump());
    VaeBlock b;
    b.name = e[0].get<std::string>();
    if (b.name == "attn_res_x")
      throw Error(msg() << "LTX-2 video VAE config: " << where
                        << " 'attn_res_x' is not supported: the reference's own decoder fails to build it "
                           "(UNetMidBlock3D takes no attention_head_dim)");
    const auto& known = decoder ? kDecoderBlocks : kEncoderBlocks;
    VIDAX_CHECK(std::find(known.begin(), known.end(), b.name) != known.end(),
                "LTX-2 video VAE config: " << where << " unknown block '" << b.name << "' (the reference's "
                                           << (decoder ? "_make_decoder_block" : "_make_encoder_block")
                                           << " takes: " << joined(known) << ")");
    const Json& p = e[1];
    if (p.is_number()) {
      b.num_layers = strict_get<int64_t>(p, where);
    } else {
      VIDAX_CHECK(p.is_object(),
                  "LTX-2 video VAE config: " << where << " params must be an int or a dict, found " << p.dump());
      for (const auto& [key, v] : p.items()) {
        const std::string f = where + "." + key;
        if (key == "num_layers") {
          b.num_layers = strict_get<int64_t>(v, f);
        } else if (key == "multiplier") {
          b.multiplier = strict_get<int64_t>(v, f);
        } else if (key == "residual" && decoder && b.name == "compress_all") {
          b.residual = strict_get<bool>(v, f);
        } else if (key == "inject_noise" && decoder && (b.name == "res_x" || b.name == "res_x_y")) {
          b.inject_noise = strict_get<bool>(v, f);
        } else {
          throw Error(msg() << "LTX-2 video VAE config: " << f << " is not a parameter the reference's "
                            << (decoder ? "decoder" : "encoder") << " reads for '" << b.name << "'");
        }
      }
    }
    VIDAX_CHECK(b.name != "res_x" || b.num_layers >= 1,
                "LTX-2 video VAE config: " << where << " num_layers " << b.num_layers << " (>= 1)");
    VIDAX_CHECK(!b.multiplier || *b.multiplier >= 1,
                "LTX-2 video VAE config: " << where << " multiplier " << *b.multiplier << " (>= 1)");
    VIDAX_CHECK(!(b.inject_noise && b.name == "res_x_y"),
                "LTX-2 video VAE config: " << where
                                           << " inject_noise true on res_x_y is not supported: the reference sizes "
                                              "the noise scales by the input width and fails on the narrower output");
    out.push_back(b);
  }
  return out;
}

int64_t factor(const std::vector<VaeBlock>& blocks, bool time) {
  int64_t steps = 0;
  for (const VaeBlock& b : blocks) {
    const bool all = starts_with(b.name, "compress_all");
    steps += all || starts_with(b.name, time ? "compress_time" : "compress_space");
  }
  return int64_t{1} << steps;
}

}  // namespace

std::array<int64_t, 3> VaeBlock::stride() const {
  if (starts_with(name, "compress_all")) return {2, 2, 2};
  if (starts_with(name, "compress_time")) return {2, 1, 1};
  if (starts_with(name, "compress_space")) return {1, 2, 2};
  return {1, 1, 1};
}

VideoVaeConfig VideoVaeConfig::from_json(const Json& in) {
  VIDAX_CHECK(in.is_object(), "LTX-2 video VAE config: expected a JSON object, found " << in.dump());
  const Json& j = in.contains("vae") && in["vae"].is_object() ? in["vae"] : in;
  const std::string cls = value_or<std::string>(j, "_class_name", "CausalVideoAutoencoder");
  VIDAX_CHECK(cls == "CausalVideoAutoencoder",
              "LTX-2 video VAE config: _class_name '"
                  << cls
                  << "' is the DiffusionVideoDecoder (video_vae/diffusion_video_decoder.py), which is not "
                     "supported; only the convolutional CausalVideoAutoencoder (ConvVideoDecoder) runs here");
  VIDAX_CHECK(!j.contains("encoder") && !j.contains("decoder"),
              "LTX-2 video VAE config: a nested 'encoder' / 'decoder' section is the CausalDiffusionVAE layout "
              "(DiffusionVideoDecoder), which is not supported");
  // The keys the configurator reads, and those a published `vae` dict carries that it does not read.
  static const std::vector<std::string> known{"_class_name",          "dims",
                                              "in_channels",          "out_channels",
                                              "latent_channels",      "encoder_blocks",
                                              "decoder_blocks",       "patch_size",
                                              "norm_layer",           "latent_log_var",
                                              "causal_decoder",       "timestep_conditioning",
                                              "spatial_padding_mode", "encoder_spatial_padding_mode",
                                              "decoder_base_channels"};
  static const std::vector<std::string> unread{"scaling_factor", "use_quant_conv", "normalize_latent_channels",
                                               "encoder_base_channels", "decoder_spatial_padding_mode"};
  for (const auto& [key, v] : j.items())
    VIDAX_CHECK(std::find(known.begin(), known.end(), key) != known.end() ||
                    std::find(unread.begin(), unread.end(), key) != unread.end(),
                "LTX-2 video VAE config: unknown key '" << key << "' (the keys model_configurator reads)");

  VideoVaeConfig c;
  VIDAX_CHECK(!j.contains("dims") || !j["dims"].is_array(),
              "LTX-2 video VAE config: dims " << j["dims"].dump()
                                              << " (DualConv3d) is not supported; 3 (CausalConv3d) runs here");
  c.dims = value_or(j, "dims", c.dims);
  VIDAX_CHECK(c.dims == 3, "LTX-2 video VAE config: dims " << j["dims"].dump()
                                                           << " is not supported (3: CausalConv3d; the 2-D and dual "
                                                              "(2, 1) convolutions are not built)");
  c.in_channels = value_or(j, "in_channels", c.in_channels);
  c.out_channels = value_or(j, "out_channels", c.out_channels);
  c.latent_channels = value_or(j, "latent_channels", c.latent_channels);
  if (j.contains("encoder_blocks")) c.encoder_blocks = blocks_of(j["encoder_blocks"], "encoder_blocks", false);
  if (j.contains("decoder_blocks")) c.decoder_blocks = blocks_of(j["decoder_blocks"], "decoder_blocks", true);
  c.patch_size = value_or(j, "patch_size", c.patch_size);
  const std::string norm = value_or<std::string>(j, "norm_layer", "pixel_norm");
  VIDAX_CHECK(norm == "pixel_norm" || norm == "group_norm",
              "LTX-2 video VAE config: norm_layer '" << norm << "' (pixel_norm or group_norm)");
  c.norm_layer = norm == "pixel_norm" ? VaeNorm::PixelNorm : VaeNorm::GroupNorm;
  const std::string lv = value_or<std::string>(j, "latent_log_var", "uniform");
  VIDAX_CHECK(lv != "none",
              "LTX-2 video VAE config: latent_log_var 'none' is not supported: the reference's "
              "encoder keeps half of its latent_channels outputs as means and then fails to "
              "normalise them with latent_channels statistics");
  VIDAX_CHECK(lv == "uniform" || lv == "per_channel" || lv == "constant",
              "LTX-2 video VAE config: latent_log_var '" << lv << "' (uniform, per_channel or constant)");
  c.latent_log_var = lv == "uniform"       ? VaeLogVar::Uniform
                     : lv == "per_channel" ? VaeLogVar::PerChannel
                                           : VaeLogVar::Constant;
  c.causal_decoder = value_or(j, "causal_decoder", c.causal_decoder);
  c.timestep_conditioning = value_or(j, "timestep_conditioning", c.timestep_conditioning);
  const std::optional<std::string> shared =
      j.contains("spatial_padding_mode")
          ? std::optional(strict_get<std::string>(j["spatial_padding_mode"], "spatial_padding_mode"))
          : std::nullopt;
  c.decoder_padding = padding_of(shared.value_or("reflect"), "spatial_padding_mode");
  c.encoder_padding = shared ? padding_of(*shared, "spatial_padding_mode")
                             : padding_of(value_or<std::string>(j, "encoder_spatial_padding_mode", "zeros"),
                                          "encoder_spatial_padding_mode");
  c.decoder_base_channels = value_or(j, "decoder_base_channels", c.decoder_base_channels);

  VIDAX_CHECK(c.in_channels >= 1 && c.out_channels >= 1 && c.latent_channels >= 1 && c.decoder_base_channels >= 1,
              "LTX-2 video VAE config: in_channels, out_channels, latent_channels and decoder_base_channels must be "
              ">= 1");
  VIDAX_CHECK(c.patch_size >= 1, "LTX-2 video VAE config: patch_size " << c.patch_size << " (>= 1)");
  return c;
}

bool is_unused_checkpoint_buffer(const std::string& name) {
  return name == "per_channel_statistics.channel" || name == "per_channel_statistics.mean-of-stds" ||
         name == "per_channel_statistics.mean-of-stds_over_std-of-means";
}

int64_t VideoVaeConfig::encoder_time_factor() const { return factor(encoder_blocks, true); }
int64_t VideoVaeConfig::encoder_space_factor() const { return patch_size * factor(encoder_blocks, false); }
int64_t VideoVaeConfig::decoder_time_factor() const { return factor(decoder_blocks, true); }
int64_t VideoVaeConfig::decoder_space_factor() const { return patch_size * factor(decoder_blocks, false); }

int64_t VideoVaeConfig::decoder_bottleneck_channels() const {
  int64_t m = 1;
  for (const VaeBlock& b : decoder_blocks) {
    if (b.name == "compress_time" || b.name == "compress_space" || b.name == "compress_all")
      m *= b.multiplier.value_or(1);
    if (b.name == "res_x_y") m *= b.multiplier.value_or(2);
  }
  return decoder_base_channels * m;
}

}  // namespace vidax::ltx2
