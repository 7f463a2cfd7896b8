// AudioVaeConfig::from_json: the checkpoint's `audio_vae` dict as AudioDecoderConfigurator reads it.
#include <algorithm>

#include "core/error.h"
#include "models/ltx2/audio_vae.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

using Json = nlohmann::json;
using translate::strict_get;
using translate::value_or;

namespace {

// j[key] when j is an object holding an object there, else an empty object (dict.get(key, {})).
Json section(const Json& j, const char* key, const std::string& where) {
  if (!j.contains(key) || j[key].is_null()) return Json::object();
  VIDAX_CHECK(j[key].is_object(),
              "LTX-2 audio VAE config: " << where << key << " must be an object, found " << j[key].dump());
  return j[key];
}

// ddconfig's keys: those the decoder and encoder configurators read.
const std::vector<std::string> kDdconfigKeys{
    "ch",         "out_ch",           "ch_mult",        "num_res_blocks", "attn_resolutions",        "resolution",
    "z_channels", "norm_type",        "causality_axis", "dropout",        "mid_block_add_attention", "mel_bins",
    "double_z",   "resamp_with_conv", "in_channels",    "attn_type"};

}  // namespace

AudioVaeConfig AudioVaeConfig::from_json(const Json& in) {
  VIDAX_CHECK(in.is_object(), "LTX-2 audio VAE config: expected a JSON object, found " << in.dump());
  const Json j = in.contains("audio_vae") ? section(in, "audio_vae", "") : in;
  const Json params = section(section(j, "model", ""), "params", "model.");
  const Json dd = section(params, "ddconfig", "model.params.");
  const Json pre = section(j, "preprocessing", "");
  const Json stft = section(pre, "stft", "preprocessing.");
  const Json mel = section(pre, "mel", "preprocessing.");
  const Json vars = section(j, "variables", "");
  for (const auto& [key, v] : dd.items())
    VIDAX_CHECK(
        std::find(kDdconfigKeys.begin(), kDdconfigKeys.end(), key) != kDdconfigKeys.end(),
        "LTX-2 audio VAE config: unknown key model.params.ddconfig." << key << " (the keys model_configurator reads)");
  AudioVaeConfig c;
  c.ch = value_or(dd, "ch", c.ch);
  c.out_ch = value_or(dd, "out_ch", c.out_ch);
  c.ch_mult = value_or(dd, "ch_mult", c.ch_mult);
  c.num_res_blocks = value_or(dd, "num_res_blocks", c.num_res_blocks);
  c.attn_resolutions = value_or(dd, "attn_resolutions", c.attn_resolutions);
  c.resolution = value_or(dd, "resolution", c.resolution);
  c.z_channels = value_or(dd, "z_channels", c.z_channels);
  const std::string norm = value_or<std::string>(dd, "norm_type", "pixel");
  VIDAX_CHECK(norm == "pixel" || norm == "group",
              "LTX-2 audio VAE config: norm_type '" << norm << "' (pixel or group)");
  c.norm_type = norm == "pixel" ? audio_vae::Norm::Kind::Pixel : audio_vae::Norm::Kind::Group;
  // CausalityAxis(value): None (JSON null) is CausalityAxis.NONE; an absent key is "height".
  if (dd.contains("causality_axis") && dd["causality_axis"].is_null()) {
    c.causality_axis = audio_vae::Causality::None;
  } else {
    const std::string axis = value_or<std::string>(dd, "causality_axis", "height");
    VIDAX_CHECK(axis == "height" || axis == "width" || axis == "width-compatibility",
                "LTX-2 audio VAE config: causality_axis '" << axis
                                                           << "' (height, width, width-compatibility, or null for "
                                                              "none: CausalityAxis)");
    c.causality_axis = axis == "height"  ? audio_vae::Causality::Height
                       : axis == "width" ? audio_vae::Causality::Width
                                         : audio_vae::Causality::WidthCompatibility;
  }
  VIDAX_CHECK(c.causality_axis == audio_vae::Causality::None || c.norm_type == audio_vae::Norm::Kind::Pixel,
              "LTX-2 audio VAE config: a causal ResnetBlock with GroupNorm is "
              "not supported (the reference refuses "
              "it too): norm_type group needs causality_axis null");
  (void)value_or(dd, "dropout", 0.0);  // inference: dropout is off
  c.mid_block_add_attention = value_or(dd, "mid_block_add_attention", c.mid_block_add_attention);
  // The encoder's keys.
  c.double_z = value_or(dd, "double_z", c.double_z);
  c.resamp_with_conv = value_or(dd, "resamp_with_conv", c.resamp_with_conv);
  c.in_channels = value_or(dd, "in_channels", c.in_channels);
  c.attn_type = value_or(dd, "attn_type", c.attn_type);
  VIDAX_CHECK(c.attn_type == "vanilla" || c.attn_type == "none" || c.attn_type == "linear",
              "LTX-2 audio VAE config: attn_type '" << c.attn_type << "' (vanilla, linear or none: AttentionType)");
  c.n_fft = value_or(stft, "filter_length", c.n_fft);

  c.sample_rate = value_or(params, "sampling_rate", c.sample_rate);
  c.mel_hop_length = value_or(stft, "hop_length", c.mel_hop_length);
  c.is_causal = value_or(stft, "causal", c.is_causal);
  // ddconfig.mel_bins or mel.n_mel_channels or variables.mel_bins (Python `or`: 0 and null fall through).
  for (const auto& [sec, key] :
       {std::pair{&dd, "mel_bins"}, std::pair{&mel, "n_mel_channels"}, std::pair{&vars, "mel_bins"}}) {
    const int64_t v = value_or(*sec, key, int64_t{0});
    if (v != 0) {
      c.mel_bins = v;
      break;
    }
  }

  VIDAX_CHECK(c.ch >= 1 && c.out_ch >= 1 && c.z_channels >= 1 && c.in_channels >= 1 && c.resolution >= 1 &&
                  c.num_res_blocks >= 0,
              "LTX-2 audio VAE config: ch, out_ch, z_channels, in_channels and resolution must be >= 1, "
              "num_res_blocks >= 0");
  VIDAX_CHECK(!c.ch_mult.empty(), "LTX-2 audio VAE config: ch_mult is empty");
  for (int64_t m : c.ch_mult) VIDAX_CHECK(m >= 1, "LTX-2 audio VAE config: ch_mult entries must be >= 1");
  VIDAX_CHECK(!c.mel_bins || *c.mel_bins >= 1, "LTX-2 audio VAE config: mel_bins " << *c.mel_bins << " (>= 1)");
  return c;
}

}  // namespace vidax::ltx2
