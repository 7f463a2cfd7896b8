#include "models/hunyuan/vae_keys.h"

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

enum class Part { Whole, Encoder, Decoder };

VAEParts parts_of(Part p) { return {.encoder = p != Part::Decoder, .decoder = p != Part::Encoder}; }

class VaeComponent : public translate::Component {
 public:
  explicit VaeComponent(Part part) : part_(part) {}
  std::string name() const override {
    return part_ == Part::Whole ? "hunyuanvideo-vae" : part_ == Part::Encoder ? "hunyuanvideo-vae-encoder"
                                                                              : "hunyuanvideo-vae-decoder";
  }
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
    auto count = [&](const std::string& prefix, const std::string& probe) {
      int64_t n = 0;
      while (info(prefix + std::to_string(n) + probe)) ++n;
      return n;
    };
    if (auto* t = info("post_quant_conv.weight"); t && !t->shape.empty()) c.latent_channels = t->shape[0];
    if (auto* t = info("quant_conv.weight"); t && !t->shape.empty()) c.latent_channels = t->shape[0] / 2;
    if (auto* t = info("encoder.conv_in.conv.weight"); t && t->shape.size() == 5) c.in_channels = t->shape[1];
    if (auto* t = info("decoder.conv_out.conv.weight"); t && t->shape.size() == 5) c.out_channels = t->shape[0];
    std::vector<int64_t> widths;
    if (const int64_t n = count("encoder.down_blocks.", ".resnets.0.conv1.conv.weight"); n > 0) {
      for (int64_t i = 0; i < n; ++i)
        widths.push_back(info("encoder.down_blocks." + std::to_string(i) + ".resnets.0.conv1.conv.weight")->shape[0]);
      c.layers_per_block = count("encoder.down_blocks.0.resnets.", ".conv1.conv.weight");
    } else if (const int64_t k = count("decoder.up_blocks.", ".resnets.0.conv1.conv.weight"); k > 0) {
      for (int64_t i = k - 1; i >= 0; --i)
        widths.push_back(info("decoder.up_blocks." + std::to_string(i) + ".resnets.0.conv1.conv.weight")->shape[0]);
      c.layers_per_block = count("decoder.up_blocks.0.resnets.", ".conv1.conv.weight") - 1;
    }
    if (!widths.empty()) c.block_out_channels = widths;
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
