// VAEConfig: AutoencoderKLConv3D's init args (official) or AutoencoderKLHunyuanVideo15's (diffusers),
// the level rules of Encoder / Decoder __init__, and the width rules the shuffles need.
#include <set>

#include "core/error.h"
#include "models/hunyuan15/vae.h"
#include "models/hunyuan/vae_blocks.h"
#include "translate/config_fields.h"

namespace vidax::hunyuan15 {

using Json = nlohmann::json;
using translate::value_or;

namespace {

int64_t log2_exact(int64_t v, const char* field) {
  return hunyuan::vae_blocks::log2_exact("HunyuanVideo 1.5 VAE config", v, field);
}

// Checks one Downsample(in, out, temporal) / Upsample(in, out, temporal) can be built and run.
void check_down(int64_t in, int64_t out, bool temporal, int64_t level) {
  const int64_t factor = temporal ? 8 : 4;
  VIDAX_CHECK(out % factor == 0 && (factor * in) % out == 0 && (!temporal || (factor * in / out) % 2 == 0),
              "HunyuanVideo 1.5 VAE config: encoder level " << level << " down-samples " << in << " -> " << out
                                                            << " channels; the shuffle needs out a multiple of "
                                                            << factor << " and " << factor << " * in / out a whole"
                                                            << (temporal ? " even" : "") << " number");
}
void check_up(int64_t in, int64_t out, bool temporal, int64_t level) {
  const int64_t factor = temporal ? 8 : 4;
  VIDAX_CHECK(in % factor == 0 && (factor * out) % in == 0 && (!temporal || (factor * out / in) % 2 == 0),
              "HunyuanVideo 1.5 VAE config: decoder level " << level << " up-samples " << in << " -> " << out
                                                            << " channels; the shuffle needs in a multiple of "
                                                            << factor << " and " << factor << " * out / in a whole"
                                                            << (temporal ? " even" : "") << " number");
}

}  // namespace

VAEConfig VAEConfig::from_json(const Json& j) {
  VIDAX_CHECK(j.is_object(), "HunyuanVideo 1.5 VAE config: expected a JSON object, found " << j.dump());
  static const std::set<std::string> kKnown = {
      "in_channels", "out_channels", "latent_channels", "block_out_channels", "layers_per_block",
      "ffactor_spatial", "ffactor_temporal", "spatial_compression_ratio", "temporal_compression_ratio",
      "sample_size", "sample_tsize", "scaling_factor", "shift_factor", "downsample_match_channel",
      "upsample_match_channel"};
  for (const auto& [k, v] : j.items())
    VIDAX_CHECK(k.rfind('_', 0) == 0 || kKnown.count(k), "HunyuanVideo 1.5 VAE config: unknown field '"
                                                             << k << "' (AutoencoderKLConv3D / AutoencoderKLHunyuanVideo15)");
  if (auto it = j.find("_class_name"); it != j.end() && it->is_string())
    VIDAX_CHECK(*it == "AutoencoderKLConv3D" || *it == "AutoencoderKLHunyuanVideo15",
                "HunyuanVideo 1.5 VAE config: _class_name " << it->dump()
                                                            << " (AutoencoderKLConv3D, AutoencoderKLHunyuanVideo15)");
  VAEConfig c;
  c.in_channels = value_or<int64_t>(j, "in_channels", c.in_channels);
  c.out_channels = value_or<int64_t>(j, "out_channels", c.out_channels);
  c.latent_channels = value_or<int64_t>(j, "latent_channels", c.latent_channels);
  c.block_out_channels = value_or<std::vector<int64_t>>(j, "block_out_channels", c.block_out_channels);
  c.layers_per_block = value_or<int64_t>(j, "layers_per_block", c.layers_per_block);
  c.ffactor_spatial =
      value_or<int64_t>(j, "ffactor_spatial", value_or<int64_t>(j, "spatial_compression_ratio", c.ffactor_spatial));
  c.ffactor_temporal =
      value_or<int64_t>(j, "ffactor_temporal", value_or<int64_t>(j, "temporal_compression_ratio", c.ffactor_temporal));
  c.sample_size = value_or<int64_t>(j, "sample_size", c.sample_size);
  c.sample_tsize = value_or<int64_t>(j, "sample_tsize", c.sample_tsize);
  c.scaling_factor = value_or<double>(j, "scaling_factor", c.scaling_factor);
  if (auto it = j.find("shift_factor"); it != j.end() && !it->is_null())
    c.shift_factor = translate::strict_get<double>(*it, "shift_factor");
  c.downsample_match_channel = value_or<bool>(j, "downsample_match_channel", c.downsample_match_channel);
  c.upsample_match_channel = value_or<bool>(j, "upsample_match_channel", c.upsample_match_channel);

  for (auto [v, name] : {std::pair{c.in_channels, "in_channels"}, std::pair{c.out_channels, "out_channels"},
                         std::pair{c.latent_channels, "latent_channels"},
                         std::pair{c.layers_per_block, "layers_per_block"}, std::pair{c.sample_size, "sample_size"}})
    VIDAX_CHECK(v >= 1, "HunyuanVideo 1.5 VAE config: " << name << " must be >= 1, found " << v);
  for (int64_t ch : c.block_out_channels)
    VIDAX_CHECK(ch >= 1, "HunyuanVideo 1.5 VAE config: block_out_channels entry " << ch << " must be >= 1");
  VIDAX_CHECK(c.scaling_factor > 0, "HunyuanVideo 1.5 VAE config: scaling_factor must be > 0, found " << c.scaling_factor);
  const int64_t ls = log2_exact(c.ffactor_spatial, "ffactor_spatial");
  const int64_t lt = log2_exact(c.ffactor_temporal, "ffactor_temporal");
  VIDAX_CHECK(lt <= ls, "HunyuanVideo 1.5 VAE config: ffactor_temporal " << c.ffactor_temporal
                                                                         << " exceeds ffactor_spatial " << c.ffactor_spatial);
  VIDAX_CHECK(c.levels() >= ls + 1, "HunyuanVideo 1.5 VAE config: " << c.levels() << " levels (block_out_channels) "
                                                                    << "cannot down-sample " << c.ffactor_spatial
                                                                    << "x (at least " << ls + 1 << ", the last one "
                                                                    << "not down-sampling)");
  const int64_t top = c.block_out_channels.back();
  VIDAX_CHECK(top % (2 * c.latent_channels) == 0, "HunyuanVideo 1.5 VAE config: the last block_out_channels entry "
                                                      << top << " is not a multiple of 2 * latent_channels "
                                                      << 2 * c.latent_channels << " (the encoder's output shortcut)");
  VIDAX_CHECK(top % c.latent_channels == 0, "HunyuanVideo 1.5 VAE config: " << top << " is not a multiple of latent_channels");
  // The widths each (down|up)sampler sees (Encoder / Decoder __init__).
  // A level's sampler takes the level's width (its resnets' output) to the next level's (or keeps it).
  const auto& ch = c.block_out_channels;
  const std::vector<int64_t> rev(ch.rbegin(), ch.rend());
  for (int64_t i = 0; i < c.levels(); ++i) {
    if (!c.spatial_down(i)) continue;
    const auto u = static_cast<size_t>(i);
    check_down(ch[u], c.downsample_match_channel ? ch[u + 1] : ch[u], c.encoder_temporal_down(i), i);
    check_up(rev[u], c.upsample_match_channel ? rev[u + 1] : rev[u], c.decoder_temporal_up(i), i);
  }
  return c;
}

Json VAEConfig::to_json() const {
  return Json{{"in_channels", in_channels},
              {"out_channels", out_channels},
              {"latent_channels", latent_channels},
              {"block_out_channels", block_out_channels},
              {"layers_per_block", layers_per_block},
              {"ffactor_spatial", ffactor_spatial},
              {"ffactor_temporal", ffactor_temporal},
              {"sample_size", sample_size},
              {"sample_tsize", sample_tsize},
              {"scaling_factor", scaling_factor},
              {"shift_factor", shift_factor ? Json(*shift_factor) : Json(nullptr)},
              {"downsample_match_channel", downsample_match_channel},
              {"upsample_match_channel", upsample_match_channel}};
}

// Encoder: add_spatial_downsample = i < log2(ffactor_spatial); add_temporal_downsample = that and
// i >= log2(ffactor_spatial // ffactor_temporal). Decoder: add_spatial_upsample = i <
// log2(ffactor_spatial), add_temporal_upsample = i < log2(ffactor_temporal).
bool VAEConfig::spatial_down(int64_t i) const { return i < log2_exact(ffactor_spatial, "ffactor_spatial"); }
bool VAEConfig::encoder_temporal_down(int64_t i) const {
  return spatial_down(i) && i >= log2_exact(ffactor_spatial / ffactor_temporal, "ffactor_spatial / ffactor_temporal");
}
bool VAEConfig::decoder_temporal_up(int64_t i) const { return i < log2_exact(ffactor_temporal, "ffactor_temporal"); }

}  // namespace vidax::hunyuan15
