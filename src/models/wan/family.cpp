#include "models/wan/family.h"

#include <algorithm>

#include "core/error.h"
#include "models/wan/bench.h"
#include "models/wan/clip.h"
#include "models/wan/demo_weights.h"
#include "models/wan/dit_config.h"
#include "models/wan/dit_parity_kind.h"
#include "models/wan/pipeline_parity.h"
#include "models/wan/presets.h"
#include "models/wan/t2v_load.h"
#include "models/wan/vace_parity.h"
#include "models/wan/vae.h"
#include "models/wan/vae22.h"
#include "models/wan/weights.h"
#include "parity/parity.h"
#include "models/wan/checkpoint_keys.h"
#include "text/umt5_keys.h"

namespace vidax::wan {

namespace {

double dtype_bytes(const std::string& precision) { return precision == "fp32" ? 4.0 : 2.0; }

// The VAE decode's activations: the decoder runs one latent frame at a time; its widest maps
// are `dim` channels at the full size over the 4 frames it emits, with the causal caches and
// temporaries (about 8 such maps), over the frame or, tiled (--vae-tile), over one tile with its
// overlap. Plus the decoded video itself (fp32).
double vae_decode_activation_bytes(const WanVAEConfig& vae, const pipeline::Request& r) {
  double area = static_cast<double>(r.height * r.width);
  if (r.vae_tile > 0) {
    const VaeTiling t = VaeTiling::for_tile(r.vae_tile);
    area = std::min(area, static_cast<double>(t.tile_pixels() * t.tile_pixels()));
  }
  const double maps = 8.0 * 4.0 * static_cast<double>(vae.dim) * 4.0 * area;
  return maps + 4.0 * 3.0 * static_cast<double>(r.frames * r.height * r.width);
}

// Parameters of one DiT block (all blocks have the same).
// Parameters under `prefix` (a block: "blocks.0.", "vace_blocks.1.") of the DiT.
double dit_params_under(const DiTConfig& c, const std::string& prefix) {
  double n = 0;
  for (const auto& info : translate::wan::dit_params(translate::wan::DitConfig::from_json(c.to_json())).params)
    if (info.name.rfind(prefix, 0) == 0) n += static_cast<double>(shape_numel(info.shape));
  return n;
}
double dit_block_params(const DiTConfig& c) { return dit_params_under(c, "blocks.0."); }

class WanFamily final : public pipeline::Family {
 public:
  WanFamily() {
    for (const auto& p : presets()) variants_.push_back(p.variant);
  }
  std::string name() const override { return "wan"; }
  std::string description() const override { return "Wan 2.1 and 2.2 (Wan-AI, Wan-Video/Wan2.1, Wan-Video/Wan2.2)"; }
  const std::vector<pipeline::Variant>& variants() const override { return variants_; }

  std::string detect(const std::string& weights_dir) const override { return detect_model(weights_dir); }

  pipeline::Variant resolve(const std::string& weights_dir, const std::string& model) const override {
    return resolve_preset(weights_dir, model).variant;
  }

  std::string detect_parts(const std::string& weights_dir, const pipeline::PartFiles& files) const override {
    return detect_model(weights_dir, files);
  }
  pipeline::Variant resolve_parts(const std::string& weights_dir, const std::string& model,
                                  const pipeline::PartFiles& files) const override {
    return resolve_preset(weights_dir, model, files).variant;
  }

  pipeline::PartsChecked check_part_files(const pipeline::PartFiles& files) const override {
    return check_wan_part_files(files);
  }

  pipeline::Geometry geometry(const std::string& variant) const override {
    const Preset& p = preset(variant);
    return geometry_of(p.dit, p.vae, p.vae_version);
  }

  pipeline::MemoryPlan memory_plan(const std::string& variant, const pipeline::Request& r,
                                   const std::string& precision) const override {
    const Preset& p = preset(variant);
    const DiTConfig dit = DiTConfig::from_json(p.dit);
    const bool vae22 = p.vae_version == "wan2.2";
    // The decode's activations scale with the decoder's width: dec_dim for the Wan 2.2 VAE.
    WanVAEConfig vae;
    if (vae22) vae.dim = Wan22VAEConfig::from_json(p.vae).dec_dim;
    else vae = WanVAEConfig::from_json(p.vae);
    const pipeline::Geometry g = geometry_of(p.dit, p.vae, p.vae_version);
    const double lat_f = static_cast<double>((r.frames - 1) / g.vae_stride_t + 1);
    const int64_t tokens = static_cast<int64_t>(lat_f) * (r.height / g.height_multiple()) * (r.width / g.width_multiple());
    const double dit_params =
        static_cast<double>(translate::wan::dit_params(translate::wan::DitConfig::from_json(p.dit)).parameter_count());
    double vae_decoder_params = 0;
    if (vae22) {
      for (const auto& [name, shape] : Wan22VAE::parameter_shapes(Wan22VAEConfig::from_json(p.vae), {false, true}))
        vae_decoder_params += static_cast<double>(shape_numel(shape));
    } else {
      for (const auto& info : translate::wan::vae_params(translate::wan::VaeConfig::from_json(p.vae)).params)
        if (info.name.rfind("decoder.", 0) == 0 || info.name.rfind("conv2.", 0) == 0)
          vae_decoder_params += static_cast<double>(shape_numel(info.shape));
    }
    // Two experts (Wan 2.2 A14B): both resident without --offload; streamed, one at a time (the
    // other is freed at the switch), so the plan counts one.
    const double experts_resident = p.experts && !r.offload ? 2.0 : 1.0;
    const double t5_params =
        static_cast<double>(translate::t5::t5_params(translate::t5::T5Config::from_json(p.t5)).parameter_count());
    const double b = dtype_bytes(precision.empty() ? p.variant.defaults.precision : precision);
    using pipeline::MemoryKind;
    pipeline::MemoryPlan m;
    m.items.push_back({"text encoder weights", t5_params * b, MemoryKind::WeightsResident});
    if (!r.offload) {
      // The weights in the compute dtype and the GEMM's packed copy of them.
      m.items.push_back({p.experts ? "DiT weights (both experts)" : "DiT weights",
                         experts_resident * 2 * dit_params * b, MemoryKind::WeightsResident});
    } else {
      // Streamed (--offload): what is not in a block stays (embeddings, head), with its packed
      // copy; the pool holds two blocks (the one running and the next, prefetched), each as the
      // compute dtype and its packed copy.
      // VACE streams its vace blocks too (the largest group: vace block 0 with its before_proj).
      const double block_params = dit_block_params(dit);
      double rest = dit_params - static_cast<double>(dit.num_layers) * block_params, group = block_params;
      const size_t vace_blocks = dit.is_vace() ? dit.vace_layers.size() : 0;
      for (size_t j = 0; j < vace_blocks; ++j) {
        const double v = dit_params_under(dit, "vace_blocks." + std::to_string(j) + ".");
        rest -= v;
        group = std::max(group, v);
      }
      const int64_t groups = dit.num_layers + static_cast<int64_t>(vace_blocks);
      m.items.push_back({p.experts ? "DiT weights outside the blocks (one expert at a time)"
                                   : "DiT weights outside the blocks",
                         2 * rest * b, MemoryKind::WeightsResident});
      m.items.push_back({std::string(vace_blocks ? "DiT and vace blocks" : "DiT blocks") + " streamed (2 of " +
                             std::to_string(groups) + " in the pool)",
                         2 * 2 * group * b, MemoryKind::WeightsStreamed});
    }
    m.items.push_back({"DiT activations", dit_activation_bytes(dit, tokens), MemoryKind::Activations});
    m.items.push_back({"VAE decoder weights", 4.0 * vae_decoder_params, MemoryKind::WeightsResident});
    m.items.push_back({"VAE decode activations", vae_decode_activation_bytes(vae, r),
                       MemoryKind::Vae});
    // Phases: encoding (the text encoder alone when it is freed after use), then denoising, then decoding.
    // Loading keeps the text encoder, the DiT and the VAE weights together until the prompts are
    // encoded; a one-shot run then frees the text encoder, and the DiT before decoding.
    if (!r.offload) {
      m.phases = r.keep_loaded ? std::vector<std::vector<size_t>>{{0, 1, 3}, {0, 1, 2, 3}, {0, 1, 3, 4}}
                               : std::vector<std::vector<size_t>>{{0, 1, 3}, {1, 2, 3}, {3, 4}};
    } else {
      m.phases = r.keep_loaded ? std::vector<std::vector<size_t>>{{0, 1, 2, 4}, {0, 1, 2, 3, 4}, {0, 1, 2, 4, 5}}
                               : std::vector<std::vector<size_t>>{{0, 1, 2, 4}, {1, 2, 3, 4}, {4, 5}};
    }
    // Image-to-video: the CLIP (freed once the images are encoded, unless kept), the VAE's encoder
    // half (part of the VAE, resident with it) and the encode of the conditioning frames (whole
    // frames, as the decode's activations). A first phase encodes the images with everything loaded.
    // The Wan 2.1 VAE's encoder half (encoder.*, conv1.*), in parameters.
    auto wan21_vae_encoder_params = [&p] {
      double n = 0;
      for (const auto& info : translate::wan::vae_params(translate::wan::VaeConfig::from_json(p.vae)).params)
        if (info.name.rfind("encoder.", 0) == 0 || info.name.rfind("conv1.", 0) == 0)
          n += static_cast<double>(shape_numel(info.shape));
      return n;
    };
    if (p.uses_clip()) {
      const double clip_params = static_cast<double>(clip_visual_params(ClipVisionConfig::from_json(p.clip)).parameter_count());
      const double vae_encoder_params = wan21_vae_encoder_params();
      pipeline::Request whole = r;
      whole.vae_tile = 0;
      const size_t clip_i = m.items.size();
      m.items.push_back({"CLIP image encoder weights", 2 * clip_params * b, MemoryKind::WeightsResident});
      m.items.push_back({"VAE encoder weights", 4.0 * vae_encoder_params, MemoryKind::WeightsResident});
      m.items.push_back({"VAE encode activations (the conditioning frames)", vae_decode_activation_bytes(vae, whole),
                         MemoryKind::Vae});
      std::vector<size_t> encode = m.phases.front();
      encode.insert(encode.end(), {clip_i, clip_i + 1, clip_i + 2});
      for (auto& ph : m.phases) {
        ph.push_back(clip_i + 1);
        if (r.keep_loaded) ph.push_back(clip_i);
      }
      m.phases.insert(m.phases.begin(), encode);
    }
    // Wan 2.2 I2V-A14B (an image task without CLIP): the Wan 2.1 VAE's encoder half (resident with
    // the VAE) and the encode of the conditioning video ([image, zeros], whole frames, as
    // WanI2V.generate encodes it), in a first phase with everything loaded.
    if (!p.image_task().empty() && !p.uses_clip() && p.vae_version == "wan2.1") {
      pipeline::Request whole = r;
      whole.vae_tile = 0;
      const size_t enc_i = m.items.size();
      m.items.push_back({"VAE encoder weights", 4.0 * wan21_vae_encoder_params(), MemoryKind::WeightsResident});
      m.items.push_back({"VAE encode activations (the conditioning frames)", vae_decode_activation_bytes(vae, whole),
                         MemoryKind::Vae});
      std::vector<size_t> encode = m.phases.front();
      encode.insert(encode.end(), {enc_i, enc_i + 1});
      for (auto& ph : m.phases) ph.push_back(enc_i);
      m.phases.insert(m.phases.begin(), encode);
    }
    // Wan 2.2 TI2V-5B: the Wan 2.2 VAE's encoder half is loaded with the model (its i2v branch may
    // come with any request: resident with the VAE); given an image, its one-frame encode runs in a
    // first phase with everything loaded (the decoder's width sets the activations, as the decode's).
    if (vae22 && dit.model_type == "ti2v") {
      double vae_encoder_params = 0;
      for (const auto& [name, shape] : Wan22VAE::parameter_shapes(Wan22VAEConfig::from_json(p.vae), {true, false}))
        vae_encoder_params += static_cast<double>(shape_numel(shape));
      const size_t enc_i = m.items.size();
      m.items.push_back({"VAE encoder weights", 4.0 * vae_encoder_params, MemoryKind::WeightsResident});
      for (auto& ph : m.phases) ph.push_back(enc_i);
      if (r.image.defined()) {
        pipeline::Request image = r;
        image.vae_tile = 0;
        image.frames = 1;
        m.items.push_back({"VAE encode activations (the image)", vae_decode_activation_bytes(vae, image),
                           MemoryKind::Vae});
        std::vector<size_t> encode = m.phases.front();
        encode.push_back(enc_i + 1);
        m.phases.insert(m.phases.begin(), encode);
      }
    }
    // VACE: the VAE's encoder half (resident with the VAE) and the encode of the control video
    // (its inactive and reactive halves in turn, whole frames), in a first phase with everything loaded.
    if (dit.is_vace() && p.vae_version == "wan2.1") {
      const double vae_encoder_params = wan21_vae_encoder_params();
      pipeline::Request whole = r;
      whole.vae_tile = 0;
      const size_t enc_i = m.items.size();
      m.items.push_back({"VAE encoder weights", 4.0 * vae_encoder_params, MemoryKind::WeightsResident});
      m.items.push_back({"VAE encode activations (the control video)", vae_decode_activation_bytes(vae, whole),
                         MemoryKind::Vae});
      std::vector<size_t> encode = m.phases.front();
      encode.insert(encode.end(), {enc_i, enc_i + 1});
      for (auto& ph : m.phases) ph.push_back(enc_i);
      m.phases.insert(m.phases.begin(), encode);
    }
    return m;
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
    std::string demos;
    for (const auto& p : presets())
      if (p.variant.demo) demos += (demos.empty() ? "" : ", ") + p.name();
    VIDAX_CHECK(variant.empty() || (has_variant(variant) && preset(variant).variant.demo),
                "make-demo: " << variant << " is not a demo model (the Wan demos: " << demos << ")");
    return make_demo_weights(opt, variant.empty() ? kTinyDemoModel : variant);
  }

  nlohmann::json bench(const pipeline::BenchOptions& opt,
                       const std::function<void(const std::string&)>& log) const override {
    return run_bench(opt, log);
  }

  const std::vector<pipeline::SamplingPreset>& sampling_presets() const override { return wan::sampling_presets(); }

  std::vector<const translate::Component*> components() const override {
    return {&translate::wan::dit_component(), &translate::wan::vae_component(),
            &translate::wan::vae_encoder_component(), &translate::wan::vae_decoder_component(),
            &translate::t5::umt5_component(), &clip_visual_component(), &translate::wan::vae22_component(),
            &translate::wan::vae22_encoder_component(), &translate::wan::vae22_decoder_component()};
  }

  void register_parity_kinds() const override {
    register_dit_parity_kinds();                                 // wan.dit
    register_vae_parity_kinds();                                 // wan.vae.decode, wan.vae.encode
    register_vace_parity_kinds();                                // wan.vace.conditioning
    register_vae22_parity_kinds();  // wan2.2.vae.decode, wan2.2.vae.encode
    parity::register_kind("wan.pipeline.t2v", run_t2v_golden);  // a whole text-to-video run
    parity::register_kind("wan.pipeline.i2v", run_i2v_golden);  // image-to-video and first-last-frame runs
    parity::register_kind("wan.pipeline.vace", run_vace_golden);  // VACE: control video, mask, reference images
    parity::register_kind("wan.pipeline.t2v_a14b", run_t2v_golden);  // Wan 2.2 A14B: two experts
    parity::register_kind("wan.pipeline.ti2v", run_t2v_golden);      // Wan 2.2 TI2V-5B, text-to-video
    register_clip_parity_kind();                                 // wan.clip.visual
  }

 private:
  std::vector<pipeline::Variant> variants_;
};

}  // namespace

const pipeline::Family& family() {
  static const WanFamily f;
  return f;
}

}  // namespace vidax::wan
