#include "models/hunyuan/vae_keys.h"

#include "models/hunyuan/vae_levels.h"
#include "translate/config_fields.h"

namespace vidax::hunyuan {

using translate::Json;
using translate::KeyMap;
using translate::ParamSpec;

ParamSpec vae_params(const VAEConfig& c, VAEParts parts) {
  ParamSpec s;
  for (auto& [name, shape] : HunyuanVAE::parameter_shapes(c, parts)) s.add(name, shape);
  return s;
}

KeyMap vae_keymap(const std::string& layout) {
  if (layout == "original") return translate::original_identity();
  if (layout == "prefixed") return translate::with_key_prefix(translate::original_identity(), "vae.", "prefixed");
  throw Error(msg() << "hunyuanvideo-vae: unknown layout '" << layout << "' (original, prefixed)");
}

namespace {

using vae_levels::Part;
using vae_levels::parts_of;

class VaeComponent : public translate::Component {
 public:
  explicit VaeComponent(Part part) : part_(part) {}
  std::string name() const override { return vae_levels::part_name("hunyuanvideo-vae", part_); }
  std::string family() const override { return "hunyuanvideo"; }
  std::vector<std::string> layouts() const override { return {"original", "prefixed"}; }
  Json default_config() const override { return VAEConfig{}.to_json(); }
  std::optional<Json> read_config(const Json& j) const override {
    const bool ours = (translate::has(j, "_class_name") && j["_class_name"].is_string() &&
                       (j["_class_name"] == "AutoencoderKLCausal3D" || j["_class_name"] == "AutoencoderKLHunyuanVideo")) ||
                      (translate::has(j, "block_out_channels") && translate::has(j, "latent_channels") &&
                       (translate::has(j, "time_compression_ratio") || translate::has(j, "temporal_compression_ratio")));
    if (!ours) return std::nullopt;
    return VAEConfig::from_json(j).to_json();
  }
  // What the shapes tell: the channel counts, the widths and depth of each level, the mid-block
  // attention. norm_num_groups and the compression ratios are not stored: the defaults stand.
  Json infer_config(const translate::TensorSource& src, const std::string& layout) const override {
    const KeyMap m = vae_keymap(layout);
    VAEConfig c;
    auto info = [&](const std::string& n) { return translate::find_param(src, m, n); };
    if (auto* t = info("post_quant_conv.weight"); t && !t->shape.empty()) c.latent_channels = t->shape[0];
    if (auto* t = info("quant_conv.weight"); t && !t->shape.empty()) c.latent_channels = t->shape[0] / 2;
    if (auto* t = info("encoder.conv_in.conv.weight"); t && t->shape.size() == 5) c.in_channels = t->shape[1];
    if (auto* t = info("decoder.conv_out.conv.weight"); t && t->shape.size() == 5) c.out_channels = t->shape[0];
    vae_levels::infer_levels(src, m, {"encoder.down_blocks.", "decoder.up_blocks.", "resnets."}, c);
    const std::string half = part_ == Part::Decoder ? "decoder" : "encoder";
    c.mid_block_add_attention = info(half + ".mid_block.attentions.0.to_q.weight") != nullptr;
    return c.to_json();
  }
  ParamSpec params(const Json& cfg) const override { return vae_params(VAEConfig::from_json(cfg), parts_of(part_)); }
  KeyMap keymap(const std::string& layout, const Json&) const override { return vae_keymap(layout); }
  std::string variant(const Json& cfg) const override {
    return VAEConfig::from_json(cfg) == VAEConfig{} ? "884-16c-hy" : "custom";
  }

 private:
  Part part_;
};

}  // namespace

const translate::Component& vae_component() {
  static const VaeComponent c(Part::Whole);
  return c;
}
const translate::Component& vae_encoder_component() {
  static const VaeComponent c(Part::Encoder);
  return c;
}
const translate::Component& vae_decoder_component() {
  static const VaeComponent c(Part::Decoder);
  return c;
}

}  // namespace vidax::hunyuan
