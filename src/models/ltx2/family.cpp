#include "models/ltx2/family.h"
#include "models/ltx2/bench.h"

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "models/ltx2/audio_processor.h"
#include "models/ltx2/audio_vae.h"
#include "models/ltx2/checkpoint.h"
#include "models/ltx2/checkpoint_keys.h"
#include "models/ltx2/demo.h"
#include "models/ltx2/dit_parity.h"
#include "models/ltx2/ic_lora_parity.h"
#include "models/ltx2/pipeline_parity.h"
#include "models/ltx2/presets.h"
#include "models/ltx2/t2v_run.h"
#include "models/ltx2/text_connector.h"
#include "models/ltx2/text_encoder.h"
#include "models/ltx2/two_stage.h"
#include "models/ltx2/upsampler.h"
#include "models/ltx2/video_vae.h"
#include "models/ltx2/vocoder.h"

namespace fs = std::filesystem;

namespace vidax::ltx2 {

namespace {

// The published sizes the memory plan counts for LTX-2.3 22B (its checkpoint's name: 22B in the
// DiT with its connectors) and Gemma-3-12B's language model (google/gemma-3-12b-it: 11.77 B without
// the vision tower, which is not loaded). The demo's are counted from its weights.
constexpr double kDevDitParams = 22e9;
constexpr double kGemma12bParams = 11.77e9;
// The video and audio VAE decoders and the vocoder of the bundled checkpoint, about (not itemized).
constexpr double kDevDecoderParams = 0.6e9;

double bytes_per(const std::string& precision) { return precision == "fp32" ? 4.0 : 2.0; }

// The demo variant a `vidax make-demo` folder's vidax_model.json names, "" when none.
std::string demo_model(const std::string& dir) {
  const fs::path p = fs::path(dir) / "vidax_model.json";
  std::error_code ec;
  if (!fs::is_regular_file(p, ec)) return "";
  std::ifstream is(p);
  const nlohmann::json j = nlohmann::json::parse(is, nullptr, /*allow_exceptions=*/false);
  VIDAX_CHECK(!j.is_discarded(), p.string() << ": malformed JSON");
  const std::string name = j.is_object() && j.contains("model") && j["model"].is_string() ? j["model"].get<std::string>()
                                                                                             : std::string();
  for (const auto& pr : presets())
    if (pr.variant.demo && pr.name() == name) return name;
  return "";
}

// The variant a checked folder's checkpoint is, or an error naming why it is none of them.
void check_files_are(const CheckpointFiles& f, const std::string& variant, const std::string& dir) {
  const std::string file = fs::path(f.checkpoint).filename().string();
  const bool distilled_file = file.find("distilled") != std::string::npos;
  VIDAX_CHECK(!distilled_file || preset(variant).distilled,
              "LTX-2: " << f.checkpoint << " is a distilled checkpoint; run it as " << k23Distilled
                        << " (--model " << k23Distilled << ": its DistilledPipeline), not " << variant);
  VIDAX_CHECK(distilled_file || !preset(variant).distilled,
              "LTX-2: " << f.checkpoint << " is not a distilled checkpoint (its name does not say \"distilled\", "
                        << "as ltx-2.3-22b-distilled-1.1.safetensors does); " << variant << " runs the distilled one");
  const std::vector<int64_t> v = parse_model_version(f.model_version);
  VIDAX_CHECK(v >= std::vector<int64_t>({2, 3}),
              "LTX-2: " << f.checkpoint << " declares model_version '" << f.model_version
                        << "': an LTX-2.0 checkpoint (or unversioned); only LTX-2.3 variants run so far ("
                        << k23Dev << ")");
  const std::string demo = demo_model(dir);
  VIDAX_CHECK(demo.empty() || demo == variant, "LTX-2: " << dir << " is a `vidax make-demo` folder of " << demo
                                                          << ", not " << variant);
  VIDAX_CHECK(!preset(variant).variant.demo || demo == variant,
              "LTX-2: " << dir << " is not a `vidax make-demo` folder of " << variant
                        << " (no vidax_model.json naming it)");
}

class Ltx2Family final : public pipeline::Family {
 public:
  Ltx2Family() {
    for (const auto& p : presets()) variants_.push_back(p.variant);
  }
  std::string name() const override { return "ltx2"; }
  std::string description() const override { return "LTX-2.3 audio-video (Lightricks, Lightricks/LTX-2)"; }
  const std::vector<pipeline::Variant>& variants() const override { return variants_; }

  // The parts of the bundled checkpoint and of the split files users have (checkpoint_keys.h).
  std::vector<const translate::Component*> components() const override {
    return {&dit_component(),         &video_vae_component(),         &video_vae_encoder_component(),
            &video_vae_decoder_component(), &audio_vae_component(),   &audio_vae_encoder_component(),
            &audio_vae_decoder_component(), &vocoder_component(),     &vocoder_bwe_component(),
            &text_connectors_component(),   &text_projection_component(),   &text_projection_v1_component()};
  }

  void register_parity_kinds() const override {
    register_vocoder_parity_kinds();          // ltx2.vocoder
    register_audio_processor_parity_kind();   // ltx2.audio_processor
    register_audio_vae_parity_kinds();        // ltx2.audio_vae.decode, ltx2.audio_vae.encode
    register_dit_parity_kinds();              // ltx2.dit
    register_pipeline_parity_kinds();         // ltx2.pipeline.t2v, ltx2.pipeline.i2v, ltx2.conditioning.image
    register_video_vae_parity_kinds();        // ltx2.vae.decode, ltx2.vae.encode
    register_text_parity_kinds();             // ltx2.text.gemma3
    register_connector_parity_kind();         // ltx2.text.connector
    register_upsampler_parity_kinds();        // ltx2.upsampler
    register_two_stage_parity_kinds();        // ltx2.pipeline.two_stage, ltx2.pipeline.distilled
    register_ic_lora_parity_kinds();          // ltx2.conditioning.reference_video, ltx2.pipeline.ic_lora
  }

  // A folder with a bundled LTX-2 checkpoint (its metadata config has a "transformer"): the demo
  // its vidax_model.json names, else the dev model (resolve refuses what it is not, by name).
  std::string detect(const std::string& weights_dir) const override {
    if (const std::string demo = demo_model(weights_dir); !demo.empty()) return demo;
    std::error_code ec;
    bool found_distilled = false;
    for (const auto& e : fs::directory_iterator(weights_dir, ec)) {
      if (!e.is_regular_file() || e.path().extension() != ".safetensors") continue;
      try {
        const CheckpointFiles f = read_checkpoint_header(e.path().string());
        if (f.config.is_object() && f.config.contains("transformer") && f.config.contains("vocoder")) {
          // The dev checkpoint when there is one; a folder with only the distilled one is that variant.
          if (e.path().filename().string().find("distilled") == std::string::npos) return k23Dev;
          found_distilled = true;
        }
      } catch (const std::exception&) {
        // not a readable safetensors: not this family's
      }
    }
    return found_distilled ? k23Distilled : "";
  }
  // A folder of this family's with parts as files: detected, so that resolve_parts refuses the files
  // by name (the default: the family takes no single files yet).
  std::string detect_parts(const std::string& weights_dir, const pipeline::PartFiles& files) const override {
    (void)files;
    return weights_dir.empty() ? "" : detect(weights_dir);
  }
  pipeline::Variant resolve(const std::string& weights_dir, const std::string& model) const override {
    const std::string name = model.empty() ? detect(weights_dir) : model;
    VIDAX_CHECK(!name.empty(), "LTX-2: " << weights_dir << " is not an LTX-2 checkpoint folder");
    const Preset& p = preset(name);
    const CheckpointFiles f = find_checkpoint(weights_dir, p.distilled);  // every part there, or an error naming it
    check_files_are(f, name, weights_dir);
    return p.variant;
  }

  pipeline::Geometry geometry(const std::string& variant) const override {
    (void)preset(variant);
    return ltx2::geometry();
  }

  pipeline::MemoryPlan memory_plan(const std::string& variant, const pipeline::Request& r,
                                   const std::string& precision) const override {
    const Preset& p = preset(variant);
    const double b = bytes_per(precision.empty() ? p.variant.defaults.precision : precision);
    double dit = kDevDitParams, gemma = kGemma12bParams, decoders = kDevDecoderParams;
    double inner = 4096, audio_inner = 2048, layers = 48;
    if (p.variant.demo) {
      const DemoWeights w = demo_weights(p, 0);
      dit = gemma = decoders = 0;
      for (const auto& [n, t] : w.checkpoint)
        (n.rfind("model.diffusion_model.", 0) == 0 || n.rfind("text_embedding_projection.", 0) == 0 ? dit : decoders) +=
            static_cast<double>(t.numel());
      for (const auto& [n, t] : w.gemma) gemma += static_cast<double>(t.numel());
      const nlohmann::json& tc = p.config.at("transformer");
      inner = tc.at("num_attention_heads").get<double>() * tc.at("attention_head_dim").get<double>();
      audio_inner = tc.at("audio_num_attention_heads").get<double>() * tc.at("audio_attention_head_dim").get<double>();
      layers = tc.at("num_layers").get<double>();
    }
    (void)layers;
    const pipeline::Geometry g = ltx2::geometry();
    const double video_tokens = static_cast<double>((r.frames - 1) / g.vae_stride_t + 1) *
                                static_cast<double>(r.height / g.vae_stride_s) * static_cast<double>(r.width / g.vae_stride_s);
    const double fps = r.fps > 0 ? r.fps : p.variant.defaults.fps;
    const double audio_tokens = std::nearbyint(static_cast<double>(r.frames) / fps * 25.0);
    const double passes = 4;  // cond, uncond, STG, modality: batched into one DiT call
    using pipeline::MemoryKind;
    pipeline::MemoryPlan m;
    m.items.push_back({"Gemma-3 text encoder weights", gemma * b, MemoryKind::WeightsResident});
    m.items.push_back({"DiT weights", dit * b, MemoryKind::WeightsResident});
    // Per pass: the residual streams and about 8 more rows of each stream's width (fp32), and the
    // 1024 context tokens' K/V.
    m.items.push_back({"DiT activations",
                       passes * 4.0 * (10.0 * (video_tokens * inner + audio_tokens * audio_inner) +
                                       4.0 * kPromptMaxLength * (inner + audio_inner)),
                       MemoryKind::Activations});
    m.items.push_back({"VAE decoders and vocoder weights", 4.0 * decoders, MemoryKind::WeightsResident});
    // The decoded video (fp32) and about 6 maps of its widest stage.
    m.items.push_back({"VAE decode activations", 4.0 * 3.0 * static_cast<double>(r.frames * r.height * r.width) * 8.0,
                       MemoryKind::Vae});
    m.phases = r.keep_loaded ? std::vector<std::vector<size_t>>{{0, 1, 3}, {0, 1, 2, 3}, {0, 1, 3, 4}}
                             : std::vector<std::vector<size_t>>{{0, 1, 3}, {1, 2, 3}, {1, 3, 4}};
    return m;
  }

  // `vidax bench`: random weights of the real shapes (bench.h).
  nlohmann::json bench(const pipeline::BenchOptions& opt,
                       const std::function<void(const std::string&)>& log) const override {
    return run_bench(opt, log);
  }

  pipeline::LoadedModel load(const pipeline::LoadOptions& opt) const override {
    VIDAX_CHECK(opt.device.empty() || opt.device == "cpu", "--device " << opt.device
                                                                       << ": LTX-2 runs on the CPU backend only so far");
    VIDAX_CHECK(!opt.mesh, "--mesh: LTX-2 runs on a single rank so far");
    VIDAX_CHECK(!opt.offload, "--offload: LTX-2's DiT is not streamed yet");
    VIDAX_CHECK(opt.vae_tile == 0, "--vae-tile " << opt.vae_tile
                                                 << ": LTX-2's video decode runs untiled in the pipeline so far (the "
                                                    "tiled decode exists as a parity kind only)");
    VIDAX_CHECK(opt.loras_high_noise.empty() && opt.loras_low_noise.empty(),
                "--lora-high-noise / --lora-low-noise: LTX-2 has one DiT, not two experts; give its LoRAs with --lora");
    VIDAX_CHECK(!opt.files.any(), "--diffusion-model / --vae / --text-encoder / --tokenizer: LTX-2 takes a weights "
                                  "folder (the bundled checkpoint and the Gemma folder) so far");
    const std::string name = opt.model.empty() ? detect(opt.weights_dir) : opt.model;
    VIDAX_CHECK(!name.empty(), "LTX-2: " << opt.weights_dir << " is not an LTX-2 checkpoint folder");
    const Preset& p = preset(name);
    const CheckpointFiles f = find_checkpoint(opt.weights_dir, p.distilled);
    check_files_are(f, name, opt.weights_dir);
    const std::string precision = opt.precision.empty() ? p.variant.defaults.precision : opt.precision;
    VIDAX_CHECK(precision == "fp32" || precision == "bf16", "--precision " << precision << ": LTX-2 runs fp32 or bf16");
    pipeline::LoadedModel out;
    out.variant = p.variant;
    out.layout = "bundled";
    out.precision = precision;
    // The two-stage files are found (and the flags' checked) before the weights are read.
    std::shared_ptr<TwoStageFiles> two = find_two_stage_files(opt.weights_dir, opt.spatial_upsampler, opt.distilled_lora);
    std::shared_ptr<Model> m = load_model(f, p, precision == "fp32" ? DType::F32 : DType::BF16, opt.text_encoder,
                                          opt.on_stage, DitLoras{opt.loras, opt.lora});
    m->two_stage_files = std::move(two);
    out.parts = make_parts(m);
    return out;
  }

  nlohmann::json make_demo(const std::string& variant, const pipeline::DemoOptions& opt) const override {
    return make_demo_weights(opt, variant.empty() ? k23TinyDemo : variant);
  }

 private:
  std::vector<pipeline::Variant> variants_;
};

}  // namespace

const pipeline::Family& family() {
  static const Ltx2Family f;
  return f;
}

}  // namespace vidax::ltx2
