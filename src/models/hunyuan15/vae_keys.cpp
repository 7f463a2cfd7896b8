#include "models/hunyuan15/vae_keys.h"

#include <filesystem>

#include "io/text_file.h"
#include "models/hunyuan/vae_levels.h"
#include "translate/config_fields.h"
#include "translate/source.h"

namespace vidax::hunyuan15 {

using translate::Json;
using translate::KeyMap;
using translate::ParamSpec;

ParamSpec vae_params(const VAEConfig& c, VAEParts parts) {
  ParamSpec s;
  for (auto& [name, shape] : HunyuanVideo15VAE::parameter_shapes(c, parts)) s.add(name, shape);
  return s;
}

namespace {

// engine (official) <- diffusers, within one ResnetBlock ({p} = weight | bias).
const translate::SuffixTable kResnet = {
    {"norm1.gamma", "norm1.gamma"},           {"conv1.conv.{p}", "conv1.conv.{p}"},
    {"norm2.gamma", "norm2.gamma"},           {"conv2.conv.{p}", "conv2.conv.{p}"},
    {"nin_shortcut.{p}", "conv_shortcut.{p}"},
};

// engine <- diffusers, within one half ("encoder." / "decoder.").
const translate::SuffixTable kHalf = {
    {"conv_in.conv.{p}", "conv_in.conv.{p}"},
    {"conv_out.conv.{p}", "conv_out.conv.{p}"},
    {"norm_out.gamma", "norm_out.gamma"},
    {"mid.attn_1.norm.gamma", "mid_block.attentions.0.norm.gamma"},
    {"mid.attn_1.q.{p}", "mid_block.attentions.0.to_q.{p}"},
    {"mid.attn_1.k.{p}", "mid_block.attentions.0.to_k.{p}"},
    {"mid.attn_1.v.{p}", "mid_block.attentions.0.to_v.{p}"},
    {"mid.attn_1.proj_out.{p}", "mid_block.attentions.0.proj_out.{p}"},
};

KeyMap diffusers_map() {
  KeyMap m{"diffusers", {}, {}};
  for (const char* half : {"encoder.", "decoder."}) {
    const std::string h = half;
    translate::add_nested(m.rules, h, h, kHalf);
    translate::add_nested(m.rules, h + "mid.block_1.", h + "mid_block.resnets.0.", kResnet);
    translate::add_nested(m.rules, h + "mid.block_2.", h + "mid_block.resnets.1.", kResnet);
  }
  translate::add_nested(m.rules, "encoder.down.{i}.block.{j}.", "encoder.down_blocks.{i}.resnets.{j}.", kResnet);
  translate::add_nested(m.rules, "decoder.up.{i}.block.{j}.", "decoder.up_blocks.{i}.resnets.{j}.", kResnet);
  m.rules.push_back(translate::key_rule("encoder.down.{i}.downsample.conv.conv.{p}",
                                        "encoder.down_blocks.{i}.downsamplers.0.conv.conv.{p}"));
  m.rules.push_back(translate::key_rule("decoder.up.{i}.upsample.conv.conv.{p}",
                                        "decoder.up_blocks.{i}.upsamplers.0.conv.conv.{p}"));
  return m;
}

}  // namespace

KeyMap vae_keymap(const std::string& layout) {
  if (layout == "original") return translate::original_identity();
  if (layout == "diffusers") return diffusers_map();
  throw Error(msg() << "hunyuanvideo1.5-vae: unknown layout '" << layout << "' (original, diffusers)");
}

namespace {

using hunyuan::vae_levels::Part;
using hunyuan::vae_levels::parts_of;

class VaeComponent : public translate::Component {
 public:
  explicit VaeComponent(Part part) : part_(part) {}
  std::string name() const override { return hunyuan::vae_levels::part_name("hunyuanvideo1.5-vae", part_); }
  std::string family() const override { return "hunyuanvideo1.5"; }
  std::vector<std::string> layouts() const override { return {"original", "diffusers"}; }
  Json default_config() const override { return VAEConfig{}.to_json(); }
  std::optional<Json> read_config(const Json& j) const override {
    const bool ours = (translate::has(j, "_class_name") && j["_class_name"].is_string() &&
                       (j["_class_name"] == "AutoencoderKLConv3D" || j["_class_name"] == "AutoencoderKLHunyuanVideo15")) ||
                      (translate::has(j, "block_out_channels") && translate::has(j, "ffactor_spatial"));
    if (!ours) return std::nullopt;
    return VAEConfig::from_json(j).to_json();
  }
  // What the shapes tell: channel counts, each level's width, the depth. The factors, the match
  // flags and the scaling are not stored: the defaults stand.
  Json infer_config(const translate::TensorSource& src, const std::string& layout) const override {
    const KeyMap m = vae_keymap(layout);
    VAEConfig c;
    auto info = [&](const std::string& n) { return translate::find_param(src, m, n); };
    if (auto* t = info("encoder.conv_in.conv.weight"); t && t->shape.size() == 5) c.in_channels = t->shape[1];
    if (auto* t = info("encoder.conv_out.conv.weight"); t && t->shape.size() == 5) c.latent_channels = t->shape[0] / 2;
    if (auto* t = info("decoder.conv_in.conv.weight"); t && t->shape.size() == 5) c.latent_channels = t->shape[1];
    if (auto* t = info("decoder.conv_out.conv.weight"); t && t->shape.size() == 5) c.out_channels = t->shape[0];
    hunyuan::vae_levels::infer_levels(src, m, {"encoder.down.", "decoder.up.", "block."}, c);
    return c.to_json();
  }
  ParamSpec params(const Json& cfg) const override { return vae_params(VAEConfig::from_json(cfg), parts_of(part_)); }
  KeyMap keymap(const std::string& layout, const Json&) const override { return vae_keymap(layout); }
  // The published network (the tile sizes and the scaling are no part of it).
  std::string variant(const Json& cfg) const override {
    VAEConfig c = VAEConfig::from_json(cfg);
    const VAEConfig d;
    c.sample_size = d.sample_size;
    c.sample_tsize = d.sample_tsize;
    c.scaling_factor = d.scaling_factor;
    c.shift_factor = d.shift_factor;
    return c == d ? "16x4-32c" : "custom";
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

// The file names ModelMixin.from_pretrained reads (AutoencoderKLConv3D.from_pretrained(<ckpt>/vae),
// AutoencoderKLHunyuanVideo15.from_pretrained(..., subfolder="vae")).
HunyuanVideo15VAE load_vae(const std::string& path, VAEParts parts, DType compute, const std::optional<Json>& config) {
  namespace fs = std::filesystem;
  std::error_code ec;
  std::string file = path;
  Json cfg;
  if (fs::is_directory(path, ec)) {
    const fs::path dir(path);
    const fs::path weights = dir / "diffusion_pytorch_model.safetensors";
    VIDAX_CHECK(fs::is_regular_file(weights, ec), "HunyuanVideo 1.5 VAE " << path << ": no " << weights.string()
                                                                          << " (the file from_pretrained reads)");
    file = weights.string();
    if (config) {
      cfg = *config;
    } else {
      VIDAX_CHECK(fs::is_regular_file(dir / "config.json", ec),
                  "HunyuanVideo 1.5 VAE " << path << ": no config.json next to the weights");
      cfg = io::read_json_file((dir / "config.json").string());
    }
  } else {
    VIDAX_CHECK(config, "HunyuanVideo 1.5 VAE " << path << ": a single file needs its config (a vae/ folder has "
                                                            "config.json)");
    cfg = *config;
  }
  const VAEConfig c = VAEConfig::from_json(cfg);
  auto src = translate::CheckpointSource::open(file);
  // Strict: every key of the file consumed (both halves), every parameter found; the parts not
  // selected are read but not built.
  nn::ParamSource params = nn::ParamSource::from_map(translate::load(*src, vae_component(), c.to_json()), file);
  HunyuanVideo15VAE vae(c, params, parts, compute);
  if (parts.encoder && parts.decoder) params.expect_all_taken();
  return vae;
}

}  // namespace vidax::hunyuan15
