// The LTX-2 video VAE's translator components (checkpoint_keys.h).
#include <set>

#include "models/ltx2/checkpoint_keys.h"
#include "models/ltx2/video_vae.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

using translate::Json;
using translate::KeyMap;
using translate::ParamSpec;

Json video_vae_published_config() {
  // tools/golden/ltx2_video_vae.py's PUBLISHED (checked there against diffusers' AutoencoderKLLTX2Video
  // through diffusers' own converter; key lists in tests/ltx2/data/video_vae_keys.json).
  static const Json j = Json::parse(R"({
    "_class_name": "CausalVideoAutoencoder", "dims": 3, "in_channels": 3, "out_channels": 3,
    "latent_channels": 128, "patch_size": 4, "norm_layer": "pixel_norm", "latent_log_var": "uniform",
    "causal_decoder": false, "timestep_conditioning": false, "spatial_padding_mode": "reflect",
    "encoder_spatial_padding_mode": "zeros", "decoder_base_channels": 128,
    "encoder_blocks": [["res_x", {"num_layers": 4}], ["compress_space_res", {"multiplier": 2}],
                       ["res_x", {"num_layers": 6}], ["compress_time_res", {"multiplier": 2}],
                       ["res_x", {"num_layers": 6}], ["compress_all_res", {"multiplier": 2}],
                       ["res_x", {"num_layers": 2}], ["compress_all_res", {"multiplier": 2}],
                       ["res_x", {"num_layers": 2}]],
    "decoder_blocks": [["res_x", {"num_layers": 5, "inject_noise": false}],
                       ["compress_all", {"residual": true, "multiplier": 2}],
                       ["res_x", {"num_layers": 5, "inject_noise": false}],
                       ["compress_all", {"residual": true, "multiplier": 2}],
                       ["res_x", {"num_layers": 5, "inject_noise": false}],
                       ["compress_all", {"residual": true, "multiplier": 2}],
                       ["res_x", {"num_layers": 5, "inject_noise": false}]]})");
  return j;
}

ParamSpec video_vae_params(const VideoVaeConfig& c, const std::string& part) {
  VIDAX_CHECK(part == "encoder" || part == "decoder" || part == "whole",
              "LTX-2 video VAE params: part '" << part << "' (encoder, decoder or whole)");
  ParamSpec s;
  std::set<std::string> seen;  // the whole file stores the statistics both halves take once
  const std::string stats = "per_channel_statistics.";
  nn::ParamSource probe = nn::ParamSource::generated(
      [&](const std::string& name, const Shape& shape) {
        std::string n = name;
        for (const char* half : {"encoder.", "decoder."})
          if (part == "whole" && n.rfind(half + stats, 0) == 0) n = n.substr(std::string(half).size());
        if (seen.insert(n).second) s.add(n, shape);
        // A conditioned decoder reads its timestep_scale_multiplier (a scalar) on the host.
        if (shape.empty()) return Tensor::from_f32({1.0f}, shape);
        return Tensor::empty(shape, DType::F32, Device::Meta);
      },
      "shapes");
  if (part != "decoder") VideoEncoder enc(c, probe, part == "whole" ? "encoder." : "", DType::F32);
  if (part != "encoder") VideoDecoder dec(c, probe, part == "whole" ? "decoder." : "", DType::F32);
  return s;
}

namespace {

const char* const kUnusedBuffers[] = {"per_channel_statistics.channel", "per_channel_statistics.mean-of-stds",
                                      "per_channel_statistics.mean-of-stds_over_std-of-means"};

KeyMap vae_keymap(const std::string& part, const std::string& layout) {
  const bool whole = part == "whole";
  const std::string name = whole ? "ltx2-video-vae" : "ltx2-video-vae-" + part;
  const std::string root = layout == "checkpoint" ? "vae." : "";
  KeyMap m{layout, {}, {}};
  if (layout == "original" || whole) {
    VIDAX_CHECK(layout == "original" || layout == "checkpoint",
                name << ": unknown layout '" << layout << "' (original, checkpoint)");
    m.rules.push_back(translate::key_rule("{name*}", root + "{name}"));
  } else {
    VIDAX_CHECK(layout == "split" || layout == "checkpoint",
                name << ": unknown layout '" << layout << "' (original, split, checkpoint)");
    m.rules.push_back(translate::key_rule("per_channel_statistics.{x}", root + "per_channel_statistics.{x}"));
    m.rules.push_back(translate::key_rule("{name*}", root + part + ".{name}"));
  }
  for (const char* b : kUnusedBuffers) m.ignored.push_back(root + b);
  return m;
}

// The `vae` dict of a config (bare or under "vae"); nullopt when `j` is not one.
std::optional<Json> vae_dict(const Json& j) {
  if (!j.is_object()) return std::nullopt;
  if (j.contains("vae") && j["vae"].is_object()) return j["vae"];
  if (j.contains("encoder_blocks") || j.contains("decoder_blocks") ||
      (j.contains("_class_name") && j["_class_name"] == "CausalVideoAutoencoder"))
    return j;
  return std::nullopt;
}

class VideoVaeComponent : public translate::Component {
 public:
  explicit VideoVaeComponent(std::string part) : part_(std::move(part)) {}
  std::string name() const override { return part_ == "whole" ? "ltx2-video-vae" : "ltx2-video-vae-" + part_; }
  std::string family() const override { return "ltx2"; }
  std::vector<std::string> layouts() const override {
    if (part_ == "whole") return {"original", "checkpoint"};
    return {"original", "split", "checkpoint"};
  }
  Json default_config() const override { return video_vae_published_config(); }
  std::optional<Json> read_config(const Json& j) const override {
    auto d = vae_dict(j);
    if (!d) return std::nullopt;
    (void)VideoVaeConfig::from_json(*d);  // validates (throws naming the key)
    return d;
  }
  Json infer_config(const translate::TensorSource&, const std::string&) const override {
    return video_vae_published_config();  // the block structure is not read back from the shapes
  }
  ParamSpec params(const Json& cfg) const override {
    static const Json dflt = default_config();
    if (cfg == dflt) return published();
    return video_vae_params(VideoVaeConfig::from_json(cfg), part_);
  }
  KeyMap keymap(const std::string& layout, const Json&) const override { return vae_keymap(part_, layout); }
  std::string variant(const Json& cfg) const override {
    const ParamSpec got = params(cfg), &ref = published();
    if (got.params.size() != ref.params.size()) return "custom";
    for (size_t i = 0; i < got.params.size(); ++i)
      if (got.params[i].name != ref.params[i].name || got.params[i].shape != ref.params[i].shape) return "custom";
    return "ltx-2";
  }

 private:
  std::string part_;
  const ParamSpec& published() const {
    // One per part (three components share this class).
    static const ParamSpec enc = video_vae_params(VideoVaeConfig::from_json(video_vae_published_config()), "encoder");
    static const ParamSpec dec = video_vae_params(VideoVaeConfig::from_json(video_vae_published_config()), "decoder");
    static const ParamSpec all = video_vae_params(VideoVaeConfig::from_json(video_vae_published_config()), "whole");
    return part_ == "encoder" ? enc : part_ == "decoder" ? dec : all;
  }
};

}  // namespace

const translate::Component& video_vae_component() {
  static const VideoVaeComponent c("whole");
  return c;
}
const translate::Component& video_vae_encoder_component() {
  static const VideoVaeComponent c("encoder");
  return c;
}
const translate::Component& video_vae_decoder_component() {
  static const VideoVaeComponent c("decoder");
  return c;
}

}  // namespace vidax::ltx2
