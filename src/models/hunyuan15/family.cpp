#include "models/hunyuan15/family.h"
#include "models/hunyuan15/bench.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "models/hunyuan15/checkpoint_keys.h"
#include "models/hunyuan15/demo.h"
#include "models/hunyuan15/load.h"
#include "models/hunyuan15/presets.h"
#include "models/hunyuan15/siglip.h"
#include "models/hunyuan15/text_byt5.h"
#include "models/hunyuan15/vae.h"
#include "text/qwen2_config.h"
#include "text/t5_config.h"
#include "text/umt5_keys.h"

namespace vidax::hunyuan15 {

namespace {

double bytes_per(const std::string& precision) { return precision == "fp32" ? 4.0 : 2.0; }

// The demo variant a `vidax make-demo` folder's vidax_model.json names, "" when there is none
// (or it names no HunyuanVideo 1.5 demo).
std::string demo_model(const std::string& dir) {
  const std::string name = pipeline::demo_model_named_in(dir);
  for (const auto& pr : presets())
    if (pr.variant.demo && pr.name() == name) return name;
  return "";
}

class Hunyuan15Family final : public pipeline::Family {
 public:
  Hunyuan15Family() {
    for (const auto& p : presets()) variants_.push_back(p.variant);
  }
  std::string name() const override { return "hunyuanvideo1.5"; }
  std::string description() const override {
    return "HunyuanVideo 1.5 (Tencent, Tencent-Hunyuan/HunyuanVideo-1.5), text-to-video and image-to-video";
  }
  const std::vector<pipeline::Variant>& variants() const override { return variants_; }

  // A ckpts/ folder: its demo (vidax_model.json), else the first transformer it holds in the
  // presets' order (t2v 480p, 720p, then the i2v ones), else the t2v 480p one (resolve then names
  // the transformers that are there).
  std::string detect(const std::string& weights_dir) const override {
    if (!is_checkpoint(weights_dir)) return "";
    if (const std::string demo = demo_model(weights_dir); !demo.empty()) return demo;
    const std::vector<std::string> present = transformer_versions(weights_dir);
    for (const auto& p : presets())
      if (!p.variant.demo && std::find(present.begin(), present.end(), p.transformer_version) != present.end())
        return p.name();
    return kT2V480p;
  }
  pipeline::Variant resolve(const std::string& weights_dir, const std::string& model) const override {
    const std::string name = model.empty() ? detect(weights_dir) : model;
    VIDAX_CHECK(!name.empty(), "HunyuanVideo 1.5: " << weights_dir
                                                    << " is not a HunyuanVideo 1.5 checkpoint folder (no "
                                                       "transformer/<version>/config.json of 1.5 next to "
                                                       "text_encoder/llm/)");
    const Preset& p = preset(name);
    (void)find_weights(weights_dir, p.transformer_version);  // every part there, or an error naming what is missing
    return p.variant;
  }

  // The image-to-video variant of a t2v one (named when a t2v variant is given --image), and the reverse.
  std::string image_variant(const std::string& variant) const override {
    const std::string other = sibling_variant(variant);
    return !other.empty() && preset(other).i2v() ? other : "";
  }

  pipeline::Geometry geometry(const std::string& variant) const override {
    const Preset& p = preset(variant);
    return geometry_of(DiTConfig::from_json(p.dit), VAEConfig::from_json(p.vae), p.text_len);
  }

  pipeline::MemoryPlan memory_plan(const std::string& variant, const pipeline::Request& r,
                                   const std::string& precision) const override {
    const Preset& p = preset(variant);
    const DiTConfig dit = DiTConfig::from_json(p.dit);
    const VAEConfig vae = VAEConfig::from_json(p.vae);
    const pipeline::Geometry g = geometry(variant);
    const double b = bytes_per(precision.empty() ? p.variant.defaults.precision : precision);
    const double lat_f = static_cast<double>((r.frames - 1) / g.vae_stride_t + 1);
    const double tokens = lat_f * static_cast<double>(r.height / g.height_multiple()) *
                              static_cast<double>(r.width / g.width_multiple()) +
                          static_cast<double>(p.text_len + kByt5MaxLength + p.vision_tokens);
    double vae_decoder = 0;
    for (const auto& [n, shape] : HunyuanVideo15VAE::parameter_shapes(vae, {.encoder = false, .decoder = true}))
      vae_decoder += static_cast<double>(shape_numel(shape));
    const double text_params =
        static_cast<double>(
            text::qwen25_vl_text_params(text::Qwen25VLTextConfig::from_json(p.llm)).parameter_count()) +
        static_cast<double>(
            translate::t5::t5_params(translate::t5::T5Config::from_json(p.byt5)).parameter_count());
    using pipeline::MemoryKind;
    pipeline::MemoryPlan m;
    m.items.push_back({"text encoders (Qwen2.5-VL + ByT5) weights", b * text_params, MemoryKind::WeightsResident});
    m.items.push_back({"DiT weights", 2.0 * static_cast<double>(dit_params(dit).parameter_count()) * b,
                       MemoryKind::WeightsResident});
    m.items.push_back({"DiT activations",
                       2.0 * 4.0 * tokens * static_cast<double>(dit.mlp_hidden() + 8 * dit.hidden_size),
                       MemoryKind::Activations});
    m.items.push_back({"VAE decoder weights", 4.0 * vae_decoder, MemoryKind::WeightsResident});
    // The decoder's widest maps (block_out_channels[0] at full size) over one tile's pixels (256^2,
    // the pipeline's tile) and every frame (no temporal tiling), about 6 live at once; plus the video.
    const double area = std::min<double>(static_cast<double>(r.height * r.width), 256.0 * 256.0);
    m.items.push_back({"VAE decode activations",
                       6.0 * 4.0 * static_cast<double>(vae.block_out_channels.front()) * static_cast<double>(r.frames) *
                               area +
                           4.0 * 3.0 * static_cast<double>(r.frames * r.height * r.width),
                       MemoryKind::Vae});
    if (p.i2v()) {
      // The image side, run once before the loop: the VAE encoder (fp32) and the SigLIP, resident through
      // the run (the loader keeps them).
      double vae_encoder = 0;
      for (const auto& [n, shape] : HunyuanVideo15VAE::parameter_shapes(vae, {.encoder = true, .decoder = false}))
        vae_encoder += static_cast<double>(shape_numel(shape));
      const SiglipVisionConfig s = SiglipVisionConfig::from_json(p.siglip);
      double siglip = 0;
      for (const auto& q : siglip_params(s).params) siglip += static_cast<double>(shape_numel(q.shape));
      m.items.push_back({"VAE encoder and SigLIP weights", 4.0 * vae_encoder + b * siglip, MemoryKind::WeightsResident});
    }
    m.phases = r.keep_loaded ? std::vector<std::vector<size_t>>{{0, 1, 3}, {0, 1, 2, 3}, {0, 1, 3, 4}}
                             : std::vector<std::vector<size_t>>{{0, 1, 3}, {1, 2, 3}, {3, 4}};
    if (p.i2v())  // the image encoders live with every phase (they are loaded with the rest)
      for (auto& phase : m.phases) phase.push_back(5);
    return m;
  }

  // `vidax bench`: random weights of the real shapes (bench.h).
  nlohmann::json bench(const pipeline::BenchOptions& opt,
                       const std::function<void(const std::string&)>& log) const override {
    return run_bench(opt, log);
  }

  pipeline::LoadedModel load(const pipeline::LoadOptions& opt) const override {
    pipeline::LoadOptions o = opt;
    if (o.model.empty()) o.model = detect(o.weights_dir);
    LoadedT2V m = load_t2v(o);
    pipeline::LoadedModel out;
    out.variant = m.preset.variant;
    out.layout = "original";
    out.precision = m.precision;
    out.parts = std::move(m.parts);
    return out;
  }

  nlohmann::json make_demo(const std::string& variant, const pipeline::DemoOptions& opt) const override {
    return make_demo_weights(opt, variant.empty() ? kT2VTinyDemo : variant);
  }

 private:
  std::vector<pipeline::Variant> variants_;
};

}  // namespace

const pipeline::Family& family() {
  static const Hunyuan15Family f;
  return f;
}

}  // namespace vidax::hunyuan15
