// VAEConfig: AutoencoderKLCausal3D's init args (official) or AutoencoderKLHunyuanVideo's (diffusers),
// and the level rules both encoders and decoders follow (EncoderCausal3D / DecoderCausal3D __init__).
#include <set>

#include "core/error.h"
#include "models/hunyuan/vae.h"
#include "models/hunyuan/vae_blocks.h"
#include "translate/config_fields.h"

namespace vidax::hunyuan {

using Json = nlohmann::json;
using translate::strict_get;
using translate::value_or;

namespace {

int64_t log2_exact(int64_t v, const char* field) { return vae_blocks::log2_exact("HunyuanVideo VAE config", v, field); }

void check_block_types(const Json& j, const char* field, const std::set<std::string>& known, int64_t levels) {
  auto it = j.find(field);
  if (it == j.end() || it->is_null()) return;
  const auto types = strict_get<std::vector<std::string>>(*it, field);
  VIDAX_CHECK(static_cast<int64_t>(types.size()) == levels,
              "HunyuanVideo VAE config: " << field << " has " << types.size() << " entries, block_out_channels "
                                          << levels);
  for (const auto& t : types)
    VIDAX_CHECK(known.count(t), "HunyuanVideo VAE config: " << field << " entry '" << t << "' is not supported (the "
                                                            << *known.begin() << " blocks the published VAE uses)");
}

}  // namespace

VAEConfig VAEConfig::from_json(const Json& j) {
  VIDAX_CHECK(j.is_object(), "HunyuanVideo VAE config: expected a JSON object, found " << j.dump());
  static const std::set<std::string> kKnown = {
      "in_channels", "out_channels", "latent_channels", "down_block_types", "up_block_types",
      "block_out_channels", "layers_per_block", "act_fn", "norm_num_groups", "sample_size", "sample_tsize",
      "scaling_factor", "force_upcast", "spatial_compression_ratio", "time_compression_ratio",
      "temporal_compression_ratio", "mid_block_add_attention"};
  for (const auto& [k, v] : j.items())
    VIDAX_CHECK(k.rfind('_', 0) == 0 || kKnown.count(k),
                "HunyuanVideo VAE config: unknown field '" << k << "' (AutoencoderKLCausal3D / AutoencoderKLHunyuanVideo)");
  VAEConfig c;
  c.in_channels = value_or<int64_t>(j, "in_channels", c.in_channels);
  c.out_channels = value_or<int64_t>(j, "out_channels", c.out_channels);
  c.latent_channels = value_or<int64_t>(j, "latent_channels", c.latent_channels);
  c.block_out_channels = value_or<std::vector<int64_t>>(j, "block_out_channels", c.block_out_channels);
  c.layers_per_block = value_or<int64_t>(j, "layers_per_block", c.layers_per_block);
  c.norm_num_groups = value_or<int64_t>(j, "norm_num_groups", c.norm_num_groups);
  c.scaling_factor = value_or<double>(j, "scaling_factor", c.scaling_factor);
  c.spatial_compression_ratio = value_or<int64_t>(j, "spatial_compression_ratio", c.spatial_compression_ratio);
  c.time_compression_ratio = value_or<int64_t>(
      j, "time_compression_ratio", value_or<int64_t>(j, "temporal_compression_ratio", c.time_compression_ratio));
  c.mid_block_add_attention = value_or<bool>(j, "mid_block_add_attention", c.mid_block_add_attention);
  if (auto it = j.find("sample_size"); it != j.end() && !it->is_null()) {
    // An int, or [h, w] (the reference then tiles with sample_size[0] for the latent tile).
    if (it->is_array()) {
      const auto hw = strict_get<std::vector<int64_t>>(*it, "sample_size");
      VIDAX_CHECK(!hw.empty(), "HunyuanVideo VAE config: sample_size is an empty list");
      c.sample_size = hw[0];
    } else {
      c.sample_size = strict_get<int64_t>(*it, "sample_size");
    }
  }
  c.sample_tsize = value_or<int64_t>(j, "sample_tsize", c.sample_tsize);

  const std::string act = value_or<std::string>(j, "act_fn", "silu");
  VIDAX_CHECK(act == "silu" || act == "swish",
              "HunyuanVideo VAE config: act_fn '" << act << "' is not supported (silu, as the published VAE)");
  VIDAX_CHECK(c.time_compression_ratio == 4, "HunyuanVideo VAE config: time_compression_ratio "
                                                 << c.time_compression_ratio << " is not supported (the reference "
                                                 << "builds 4 only)");
  VIDAX_CHECK(!c.block_out_channels.empty(), "HunyuanVideo VAE config: block_out_channels is empty");
  VIDAX_CHECK(c.levels() >= 3, "HunyuanVideo VAE config: " << c.levels()
                                                           << " levels cannot halve time twice (at least 3)");
  log2_exact(c.spatial_compression_ratio, "spatial_compression_ratio");
  VIDAX_CHECK(c.norm_num_groups >= 1, "HunyuanVideo VAE config: norm_num_groups " << c.norm_num_groups);
  for (int64_t ch : c.block_out_channels)
    VIDAX_CHECK(ch >= 1 && ch % c.norm_num_groups == 0, "HunyuanVideo VAE config: block_out_channels entry "
                                                            << ch << " is not a multiple of norm_num_groups "
                                                            << c.norm_num_groups);
  for (auto [v, name] : {std::pair{c.in_channels, "in_channels"}, std::pair{c.out_channels, "out_channels"},
                         std::pair{c.latent_channels, "latent_channels"}, std::pair{c.layers_per_block, "layers_per_block"}})
    VIDAX_CHECK(v >= 1, "HunyuanVideo VAE config: " << name << " must be >= 1, found " << v);
  VIDAX_CHECK(c.scaling_factor > 0, "HunyuanVideo VAE config: scaling_factor must be > 0, found " << c.scaling_factor);
  check_block_types(j, "down_block_types", {"DownEncoderBlockCausal3D", "HunyuanVideoDownBlock3D"}, c.levels());
  check_block_types(j, "up_block_types", {"UpDecoderBlockCausal3D", "HunyuanVideoUpBlock3D"}, c.levels());
  return c;
}

Json VAEConfig::to_json() const {
  return Json{{"in_channels", in_channels},
              {"out_channels", out_channels},
              {"latent_channels", latent_channels},
              {"down_block_types", std::vector<std::string>(block_out_channels.size(), "DownEncoderBlockCausal3D")},
              {"up_block_types", std::vector<std::string>(block_out_channels.size(), "UpDecoderBlockCausal3D")},
              {"block_out_channels", block_out_channels},
              {"layers_per_block", layers_per_block},
              {"act_fn", "silu"},
              {"norm_num_groups", norm_num_groups},
              {"sample_size", sample_size},
              {"sample_tsize", sample_tsize},
              {"scaling_factor", scaling_factor},
              {"spatial_compression_ratio", spatial_compression_ratio},
              {"time_compression_ratio", time_compression_ratio},
              {"mid_block_add_attention", mid_block_add_attention}};
}

// EncoderCausal3D: add_spatial_downsample = i < log2(spatial_compression_ratio) (the last level
// too); add_time_downsample = i >= levels - 1 - log2(time_compression_ratio) and not the last.
bool VAEConfig::spatial_down(int64_t i) const { return i < log2_exact(spatial_compression_ratio, "spatial_compression_ratio"); }
bool VAEConfig::temporal_down(int64_t i) const {
  return i >= levels() - 1 - log2_exact(time_compression_ratio, "time_compression_ratio") && i != levels() - 1;
}

int64_t VAEConfig::spatial_factor() const {
  int64_t f = 1;
  for (int64_t i = 0; i < levels(); ++i) f *= spatial_down(i) ? 2 : 1;
  return f;
}

int64_t VAEConfig::temporal_factor() const {
  int64_t f = 1;
  for (int64_t i = 0; i < levels(); ++i) f *= temporal_down(i) ? 2 : 1;
  return f;
}

}  // namespace vidax::hunyuan
