#include "models/hunyuan/family.h"
#include "models/hunyuan/bench.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "models/hunyuan/checkpoint_keys.h"
#include "models/hunyuan/demo.h"
#include "models/hunyuan/dit_parity.h"
#include "models/hunyuan/pipeline_parity.h"
#include "models/hunyuan/presets.h"
#include "models/hunyuan/t2v.h"
#include "models/hunyuan/text_encoder.h"
#include "models/hunyuan/vae.h"
#include "models/hunyuan/vae_keys.h"
#include "parity/parity.h"
#include "text/clip_text.h"
#include "text/llama_config.h"

namespace vidax::hunyuan {

namespace {

double bytes_per(const std::string& precision) { return precision == "fp32" ? 4.0 : 2.0; }

// The text encoders' sizes (the published ones, whatever folder is loaded):
// the language model of llava-llama-3-8b-v1_1 (Llama-3-8B: 8,030,261,248 parameters) and CLIP-L/14's
// text model (123,060,480), both fp16 in the reference (--text-encoder-precision fp16).
constexpr double kLlmParams = 8030261248.0;
constexpr double kClipTextParams = 123060480.0;

// The decode's activations: the decoder's widest maps are block_out_channels[0] channels at the full
// size, over the frames and pixels of one tile (the reference's tiles: sample_tsize + 1 frames,
// sample_size^2 pixels) or of the whole clip when it fits one; about 6 such maps live at once.
// Plus the decoded video (fp32).
double vae_decode_bytes(const VAEConfig& v, const pipeline::Request& r) {
  const double frames = static_cast<double>(std::min<int64_t>(r.frames, v.sample_tsize + 1));
  const double area = std::min<double>(static_cast<double>(r.height * r.width),
                                       static_cast<double>(v.sample_size * v.sample_size));
  const double maps = 6.0 * 4.0 * static_cast<double>(v.block_out_channels.front()) * frames * area;
  return maps + 4.0 * 3.0 * static_cast<double>(r.frames * r.height * r.width);
}

// The demo variant a `vidax make-demo` folder's vidax_model.json names, "" when there is none
// (or it names no HunyuanVideo demo).
std::string demo_model(const std::string& dir) {
  const std::string name = pipeline::demo_model_named_in(dir);
  for (const auto& pr : presets())
    if (pr.variant.demo && pr.name() == name) return name;
  return "";
}

class HunyuanFamily final : public pipeline::Family {
 public:
  HunyuanFamily() {
    for (const auto& p : presets()) variants_.push_back(p.variant);
  }
  std::string name() const override { return "hunyuanvideo"; }
  std::string description() const override { return "HunyuanVideo 1.0 (Tencent, Tencent/HunyuanVideo)"; }
  const std::vector<pipeline::Variant>& variants() const override { return variants_; }

  // Both published variants are the one checkpoint: a folder is the 720p one unless named, or
  // a demo whose vidax_model.json names it.
  std::string detect(const std::string& weights_dir) const override {
    if (detect_layout(weights_dir).empty()) return "";
    const std::string demo = demo_model(weights_dir);
    return demo.empty() ? kT2V720p : demo;
  }
  pipeline::Variant resolve(const std::string& weights_dir, const std::string& model) const override {
    const std::string name = model.empty() ? detect(weights_dir) : model;
    VIDAX_CHECK(!name.empty(), "HunyuanVideo: " << weights_dir << " is not a HunyuanVideo checkpoint folder");
    const Preset& p = preset(name);
    (void)find_weights(weights_dir);  // every part there, or an error naming what is missing
    return p.variant;
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
    const double tokens = lat_f / static_cast<double>(g.patch_t) * static_cast<double>(r.height / g.height_multiple()) *
                              static_cast<double>(r.width / g.width_multiple()) +
                          static_cast<double>(p.text_len);
    double vae_decoder = 0;
    for (const auto& [n, shape] : HunyuanVAE::parameter_shapes(vae, {.encoder = false, .decoder = true}))
      vae_decoder += static_cast<double>(shape_numel(shape));
    const double dit_count = static_cast<double>(dit_params(dit).parameter_count());
    using pipeline::MemoryKind;
    pipeline::MemoryPlan m;
    const double text_params =
        (p.llm.is_null() ? kLlmParams
                         : static_cast<double>(text::llama_params(text::LlamaConfig::from_json(p.llm)).parameter_count())) +
        (p.clip.is_null()
             ? kClipTextParams
             : static_cast<double>(text::clip_text_params(text::ClipTextConfig::from_json(p.clip)).parameter_count()));
    m.items.push_back({"text encoders (LLM + CLIP-L) weights", 2.0 * text_params, MemoryKind::WeightsResident});
    // The weights in the compute dtype and the GEMM's packed copy of them.
    m.items.push_back({"DiT weights", 2.0 * dit_count * b, MemoryKind::WeightsResident});
    // The residual streams, the modulated inputs and the MLP's hidden rows, fp32.
    m.items.push_back({"DiT activations",
                       2.0 * 4.0 * tokens * static_cast<double>(dit.mlp_hidden() + 8 * dit.hidden_size),
                       MemoryKind::Activations});
    m.items.push_back({"VAE decoder weights", 4.0 * vae_decoder, MemoryKind::WeightsResident});
    m.items.push_back({"VAE decode activations", vae_decode_bytes(vae, r), MemoryKind::Vae});
    m.phases = r.keep_loaded ? std::vector<std::vector<size_t>>{{0, 1, 3}, {0, 1, 2, 3}, {0, 1, 3, 4}}
                             : std::vector<std::vector<size_t>>{{0, 1, 3}, {1, 2, 3}, {3, 4}};
    return m;
  }

  // `vidax bench`: random weights of the real shapes (bench.h).
  nlohmann::json bench(const pipeline::BenchOptions& opt,
                       const std::function<void(const std::string&)>& log) const override {
    return run_bench(opt, log);
  }

  pipeline::LoadedModel load(const pipeline::LoadOptions& opt) const override {
    LoadedT2V m = load_t2v(opt);
    pipeline::LoadedModel out;
    out.variant = m.preset.variant;
    out.layout = m.files.layout;
    out.precision = m.precision;
    out.parts = std::move(m.parts);
    return out;
  }

  nlohmann::json make_demo(const std::string& variant, const pipeline::DemoOptions& opt) const override {
    return make_demo_weights(opt, variant.empty() ? kT2VTinyDemo : variant);
  }

  std::vector<const translate::Component*> components() const override {
    return {&dit_component(), &vae_component(), &vae_encoder_component(), &vae_decoder_component()};
  }

  void register_parity_kinds() const override {
    hunyuan::register_parity_kinds();  // hunyuan.dit
    register_vae_parity_kinds();       // hunyuan.vae.decode, hunyuan.vae.encode
    register_text_parity_kinds();      // hunyuan.text.llama, hunyuan.text.clip
    parity::register_kind("hunyuan.pipeline.t2v", run_t2v_golden);
  }

 private:
  std::vector<pipeline::Variant> variants_;
};

}  // namespace

const pipeline::Family& family() {
  static const HunyuanFamily f;
  return f;
}

}  // namespace vidax::hunyuan
