#include "models/wan/t2v_load.h"

#include <algorithm>
#include <array>
#include <filesystem>
#include <set>
#include <sstream>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <vector>

#include "backend/ops.h"
#include "core/error.h"
#include "models/wan/clip.h"
#include "models/wan/dit.h"
#include "models/wan/dit_pjrt.h"
#include "models/wan/i2v_conditioning.h"
#include "models/wan/vace_source.h"
#include "models/wan/vae.h"
#include "models/wan/vae22.h"
#include "nn/params.h"
#include "pipeline/interrupt.h"
#include "pipeline/lora_load.h"
#include "pipeline/residency.h"
#include "text/t5_encoder.h"
#include "text/t5_tokenizer.h"
#include "text/wan_text_encoder.h"
#include "translate/component.h"
#include "translate/keymap.h"
#include "translate/source.h"
#include "models/wan/checkpoint_keys.h"
#include "text/umt5_keys.h"

namespace vidax::wan {

using nlohmann::json;

// One part of the checkpoint through the translator: layout detected, config
// given (read in any spelling the component knows), strict (every key used,
// every parameter filled, shapes checked).
std::map<std::string, Tensor> translate_part(const std::string& path, const translate::Component& comp,
                                             const json& config, std::string* layout) {
  auto src = translate::CheckpointSource::open(path);
  translate::Match m = translate::match(*src, comp, config);
  translate::check(m.plan, {}, comp.name() + " from " + path);
  if (layout) *layout = m.layout;
  return translate::materialize(*src, m.plan, {});
}

namespace {

// The configs of the three parts: the weights' own files first (config.json,
// diffusers' per-part config.json, the demo's vidax_model.json), else the preset.
json part_config(const json& from_weights, const json& vidax_model, const char* key, const json& preset) {
  if (vidax_model.is_object() && vidax_model.contains(key)) return vidax_model[key];
  if (!from_weights.is_null()) return from_weights;
  return preset;
}

// Where part_config found a part's config, for messages: the file and, inside
// vidax_model.json, the part's key.
std::string config_origin(const WeightFiles& f, const char* key, const char* diffusers_dir, bool has_own_file,
                          const std::string& single_file = "") {
  namespace fs = std::filesystem;
  if (!single_file.empty()) return single_file;
  if (f.vidax_model.is_object() && f.vidax_model.contains(key))
    return (fs::path(f.root) / "vidax_model.json").string() + " (\"" + key + "\")";
  if (has_own_file)
    return (f.layout == "diffusers" ? fs::path(f.root) / diffusers_dir / "config.json" : fs::path(f.root) / "config.json")
        .string();
  return std::string("the built-in ") + key + " config";
}

// Runs one config parser; its error (a wrong type, a missing field) gains the file it came from.
template <class F>
void with_origin(const std::string& origin, F&& parse) {
  try {
    parse();
  } catch (const Error& e) {
    throw Error(msg() << origin << ": " << e.what());
  } catch (const json::exception& e) {
    throw Error(msg() << origin << ": a field has the wrong type: " << e.what());
  }
}

// What the DiT derives from one prompt, computed once per run.
struct DiTConditioning {
  TextContext text;
};

// Wan 2.2 I2V-A14B's image conditioning: y [4 + z_dim, F', h, w] (the mask, the image's latent),
// concatenated after the latent on the DiT's input channels every step.
struct InputChannels {
  Tensor y;
};

// What the DiT derives from a request's images (I2V / FLF2V), computed once per run.
struct DiTImageConditioning {
  ImageContext images;
};

// What the DiT derives from a VACE request's control video, mask and references, once per run.
struct DiTVaceConditioning {
  VaceContext vace;
};

// The most recently encoded prompts (text encoder output + DiT conditioning).
class PromptCache {
 public:
  std::optional<pipeline::EncodedPrompt> find(const std::string& prompt) {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [p, e] : entries_)
      if (p == prompt) return e;
    return std::nullopt;
  }
  void put(const std::string& prompt, const pipeline::EncodedPrompt& e) {
    std::lock_guard<std::mutex> lock(mu_);
    if (entries_.size() == kCapacity) entries_.erase(entries_.begin());
    entries_.emplace_back(prompt, e);
  }
  // The DiT's part of an entry (its text projection, the cross-attention K/V) depends on the
  // DiT's weights: a LoRA switch empties the cache.
  void clear() {
    std::lock_guard<std::mutex> lock(mu_);
    entries_.clear();
  }

 private:
  static constexpr size_t kCapacity = 8;
  std::mutex mu_;
  std::vector<std::pair<std::string, pipeline::EncodedPrompt>> entries_;
};

// A prompt for two experts: each has its own text embedding and cross-attention weights, so each
// derives its conditioning from the encoder's output, on its first use (an expert that is not
// resident yet is not loaded for it).
struct ExpertConditioning {
  Tensor context;
  std::mutex mu;
  std::array<std::optional<TextContext>, 2> text;
  const TextContext& for_expert(size_t i, const WanDiT& dit) {
    std::lock_guard<std::mutex> lock(mu);
    if (!text[i]) text[i] = dit.encode_context(context);
    return *text[i];
  }
};

using ExpertParts = std::vector<std::shared_ptr<pipeline::ResidentPart<WanDiT>>>;

// The parts of a two-expert model (Wan2.2 text2video.py): the expert of each step by its timestep
// (expert_index), its own guidance scale through Parts::denoiser_index, and with `swap` only one
// expert resident at a time.
void attach_experts(pipeline::Parts& p, const Preset::Experts& e, const ExpertParts& experts, bool swap,
                    const std::shared_ptr<pipeline::ResidentPart<text::WanTextEncoder>>& text_encoder,
                    LoadedT2V* out) {
  auto cache = std::make_shared<PromptCache>();
  p.encode_prompt = [text_encoder, cache](const std::string& prompt) {
    if (auto hit = cache->find(prompt)) return *hit;
    text::EncodedPrompts enc = text_encoder->acquire()->encode({prompt});
    pipeline::EncodedPrompt r;
    r.context = enc.context.at(0);
    r.truncated = enc.truncated.at(0);
    auto cond = std::make_shared<ExpertConditioning>();
    cond->context = r.context;
    r.conditioning = cond;
    cache->put(prompt, r);
    return r;
  };
  p.denoiser_count = experts.size();
  p.denoiser_index = [e](int, double t) { return expert_index(e, t); };
  p.predict = [e, experts, swap](const pipeline::DenoiseInput& in) {
    VIDAX_CHECK(in.prompt.conditioning, "predict: the prompt was not encoded by this pipeline's encode_prompt");
    auto* cond = static_cast<ExpertConditioning*>(const_cast<void*>(in.prompt.conditioning.get()));
    const size_t i = expert_index(e, in.t);
    if (swap)  // before loading this one: the other's memory goes first
      for (size_t j = 0; j < experts.size(); ++j)
        if (j != i) experts[j]->unload();
    const std::shared_ptr<WanDiT> dit = experts[i]->acquire();
    if (in.images) {  // I2V-A14B: y after x on the channels, every step (model.py's torch.cat([u, v]))
      VIDAX_CHECK(in.images->data, "predict: the images were not encoded by this pipeline's condition_on_images");
      const auto& y = static_cast<const InputChannels*>(in.images->data.get())->y;
      return dit->forward(ops::concat({in.x, y}, 0), std::vector<double>{in.t}, cond->for_expert(i, *dit));
    }
    return dit->forward(in.x, std::vector<double>{in.t}, cond->for_expert(i, *dit));
  };
  p.after_denoising = [experts] {
    for (const auto& x : experts) x->release();
  };
  p.use_loras = nullptr;  // a LoRA per expert is not supported yet (load_t2v refuses --lora)
  p.check_loras = nullptr;
  out->expert_loads = [experts] {
    std::vector<int> n;
    for (const auto& x : experts) n.push_back(x->loads());
    return n;
  };
  out->experts_loaded = [experts] {
    std::vector<bool> n;
    for (const auto& x : experts) n.push_back(x->loaded());
    return n;
  };
}

}  // namespace

// The Wan 2.2 VAE from its checkpoint: the original names (Wan2.2_VAE.pth, ComfyUI's repackaged
// wan2.2_vae.safetensors) or diffusers' (vae/ of a diffusers TI2V-5B folder, AutoencoderKLWan with
// is_residual, or such a single --vae file), told apart by the names, renamed through
// translate::wan::vae22_keymap. Its decoder, and its encoder when `with_encoder` (TI2V's image
// branch); strict, every tensor either the decoder's or the encoder's half, none unknown.
std::shared_ptr<Wan22VAE> load_vae22(const WeightFiles& f, const Wan22VAEConfig& cfg, int64_t vae_tile, bool with_encoder) {
  VIDAX_CHECK(vae_tile == 0, "--vae-tile " << vae_tile << ": the Wan 2.2 VAE (TI2V-5B) decodes whole frames only (tiling "
                                           "is implemented for the Wan 2.1 VAE); leave --vae-tile out");
  auto src = translate::CheckpointSource::open(f.vae);
  const std::string layout = translate::wan::vae22_layout_of(src->names());
  // stored key -> engine (official) name, over every parameter of both halves.
  std::map<std::string, std::string> engine_name;
  if (layout != "original") {
    const translate::KeyMap map = translate::wan::vae22_keymap(layout, cfg.dim_mult.size(), cfg.num_res_blocks);
    for (const auto& [name, shape] : Wan22VAE::parameter_shapes(cfg)) {
      auto r = translate::resolve(map, name);
      VIDAX_CHECK(r && r->keys.size() == 1, "wan2.2-vae: no " << layout << " key for " << name);
      engine_name.emplace(r->keys.front(), name);
    }
  }
  std::map<std::string, Tensor> weights;
  std::ostringstream unknown;
  for (const auto& key : src->names()) {
    std::string name = key;
    if (layout != "original") {
      auto it = engine_name.find(key);
      if (it == engine_name.end()) {
        unknown << "\n  " << key;
        continue;
      }
      name = it->second;
    }
    const bool decoder = name.rfind("decoder.", 0) == 0 || name.rfind("conv2.", 0) == 0;
    const bool encoder = name.rfind("encoder.", 0) == 0 || name.rfind("conv1.", 0) == 0;
    if (decoder || (encoder && with_encoder)) weights.emplace(name, src->get(key));
    else if (!encoder) unknown << "\n  " << key;
  }
  VIDAX_CHECK(unknown.str().empty(), f.vae << ": tensors the Wan 2.2 VAE (" << layout << " layout) of this config does "
                                              "not have (is this the Wan 2.2 VAE, Wan2.2_VAE.pth or diffusers' "
                                              "AutoencoderKLWan with is_residual?):" << unknown.str());
  auto vae = std::make_shared<Wan22VAE>(
      cfg,
      [&weights, path = f.vae](const std::string& name) {
        auto it = weights.find(name);
        VIDAX_CHECK(it != weights.end(), path << ": no parameter " << name << " (is this the Wan 2.2 VAE, Wan2.2_VAE.pth?)");
        return it->second;
      },
      Wan22VAE::Parts{/*encoder=*/with_encoder, /*decoder=*/true}, DType::F32);
  std::ostringstream unused;
  const std::set<std::string> used(vae->parameter_names().begin(), vae->parameter_names().end());
  for (const auto& [name, t] : weights)
    if (!used.count(name)) unused << "\n  " << name << " " << shape_str(t.shape());
  VIDAX_CHECK(unused.str().empty(), f.vae << ": tensors the Wan 2.2 VAE of this config does not use:" << unused.str());
  return vae;
}

namespace {

// textimage2video.py's per-token timesteps of an image run: (mask2[0][0][:, ::2, ::2] * t).flatten(),
// i.e. 0 on the tokens of the first `fixed` latent frames (those the image fixes), t on the rest,
// in token order (f, h, w). x [C, F, H, W].
std::vector<double> ti2v_token_timesteps(const Tensor& x, int64_t fixed, double t, const pipeline::Geometry& g) {
  VIDAX_CHECK(x.dim() == 4 && x.size(1) % g.patch_t == 0 && fixed % g.patch_t == 0,
              "ti2v_token_timesteps: latent " << x.str() << ", " << fixed << " fixed frames, patch_t " << g.patch_t);
  const int64_t per_frame = (x.size(2) / g.patch_h) * (x.size(3) / g.patch_w);
  const int64_t frames = x.size(1) / g.patch_t;
  std::vector<double> ts(static_cast<size_t>(frames * per_frame), t);
  std::fill(ts.begin(), ts.begin() + (fixed / g.patch_t) * per_frame, 0.0);
  return ts;
}

// The note a run prints when its image set the video's size (out.width x out.height).
void note_image_size(const pipeline::ImageInputs& in, pipeline::ImageConditioning& out) {
  if (out.height != in.height || out.width != in.width)
    out.notes.push_back(msg() << "the video is " << out.width << "x" << out.height << ": the image's aspect ratio ("
                              << in.image.size(2) << "x" << in.image.size(1) << ") at the requested area of "
                              << in.width << "x" << in.height << " pixels, as the reference sizes it");
}

// The Wan 2.1 VAE conditioning of I2V / FLF2V and Wan 2.2 I2V-A14B (image2video.py, first_last_frame2video.py):
// the video's size from the image at the requested area, then y [4 + 16, F', h, w] = the mask and the
// VAE latent of the image (and the last frame, when `last` is defined) followed by zeros. Sets out's
// size, its note and the taps inter.z, inter.y.
Tensor i2v_y(const pipeline::ImageInputs& in, const Tensor& last, const WanVAE& vae, const pipeline::Geometry& g,
             pipeline::ImageConditioning& out) {
  const auto [lat_h, lat_w] =
      i2v_latent_size(in.image.size(1), in.image.size(2), in.height * in.width, g.vae_stride_s, g.patch_h);
  out.height = lat_h * g.vae_stride_s;
  out.width = lat_w * g.vae_stride_s;
  note_image_size(in, out);
  const Tensor video = i2v_video(in.image, last, in.frames, out.height, out.width);
  const Tensor z = vae.encode_normalized(video, LatentScale::wan21()).squeeze(0);  // [16, F', lat_h, lat_w]
  const Tensor y = ops::concat({i2v_mask(in.frames, lat_h, lat_w, last.defined()), z}, 0);
  out.taps["inter.z"] = z;
  out.taps["inter.y"] = y;
  return y;
}

}  // namespace

WanDiT load_streamed_dit(const std::string& path, const json& config, const DiTConfig& cfg, Precision precision,
                         const dist::Mesh* mesh, bool prefetch) {
  auto src = translate::CheckpointSource::open(path);
  translate::Match m = translate::match(*src, translate::wan::dit_component(), config);
  translate::check(m.plan, {}, translate::wan::dit_component().name() + " from " + path);
  // One plan for what stays (embeddings, head) and one per streamed group (StreamedBlocks: a VACE
  // model's vace blocks first, then the blocks), materialized per use: fresh views each time, so
  // the GEMM's packed copies of a block go with the block.
  translate::Plan rest = m.plan;
  rest.bound.clear();
  const size_t vace = cfg.is_vace() ? cfg.vace_layers.size() : 0;
  std::vector<translate::Plan> blocks(vace + static_cast<size_t>(cfg.num_layers), rest);
  auto index_after = [](const std::string& n, size_t at) {
    return static_cast<size_t>(std::stoll(n.substr(at, n.find('.', at) - at)));
  };
  for (const auto& b : m.plan.bound) {
    const std::string& n = b.param.name;
    if (n.rfind("blocks.", 0) == 0) {
      const size_t i = index_after(n, 7);
      VIDAX_CHECK(i < static_cast<size_t>(cfg.num_layers),
                  path << ": parameter " << n << " of a block past num_layers " << cfg.num_layers);
      blocks[vace + i].bound.push_back(b);
    } else if (vace && n.rfind("vace_blocks.", 0) == 0) {
      const size_t j = index_after(n, 12);
      VIDAX_CHECK(j < vace, path << ": parameter " << n << " of a vace block past vace_layers (" << vace << ")");
      blocks[j].bound.push_back(b);
    } else {
      rest.bound.push_back(b);
    }
  }
  nn::ParamSource params = nn::ParamSource::from_map(translate::materialize(*src, rest, {}), path);
  StreamedBlocks streamed;
  streamed.origin = path;
  streamed.prefetch = prefetch;
  auto plans = std::make_shared<std::vector<translate::Plan>>(std::move(blocks));
  streamed.source = [src, plans](int64_t i) { return translate::materialize(*src, (*plans)[static_cast<size_t>(i)], {}); };
  WanDiT d(cfg, params, precision, mesh, std::move(streamed));
  params.expect_all_taken();
  return d;
}

const Preset& resolve_preset(const std::string& weights_dir, const std::string& model,
                             const pipeline::PartFiles& files) {
  if (!files.any()) return resolve_preset(weights_dir, model);
  std::string name = model;
  if (name.empty()) {
    name = detect_model(weights_dir, files);
    if (name.empty()) {
      std::string known;
      for (const auto& p : presets()) known += (known.empty() ? "" : ", ") + p.name();
      throw Error(msg() << "cannot tell which Wan model "
                        << (files.diffusion_model.empty() ? weights_dir : files.diffusion_model)
                        << " holds (its DiT's dim and layer count match no known model); pass --model (" << known
                        << ")");
    }
  }
  const Preset& preset = wan::preset(name);
  check_preset_matches(find_weights(weights_dir, preset, files), preset);
  return preset;
}

const Preset& resolve_preset(const std::string& weights_dir, const std::string& model) {
  std::error_code dir_ec;  // a link loop is an error code here, not an exception
  VIDAX_CHECK(std::filesystem::is_directory(weights_dir, dir_ec),
              "weights directory " << weights_dir << " does not exist (or is not a directory)"
                                   << (dir_ec ? ": " + dir_ec.message() : std::string()));
  std::string name = model;
  if (name.empty()) {
    name = detect_model(weights_dir);
    if (name.empty()) {
      std::string known;
      for (const auto& p : presets()) known += (known.empty() ? "" : ", ") + p.name();
      throw Error(msg() << "cannot tell which model " << weights_dir
                        << " holds (no vidax_model.json, no config.json with a known size); pass --model ("
                        << known << ")");
    }
  }
  const Preset& preset = wan::preset(name);
  // Fail now, before anything is loaded, when files are missing or the weights hold another model.
  check_preset_matches(find_weights(weights_dir, preset), preset);
  return preset;
}

size_t expert_index(const Preset::Experts& e, double t) {
  return t >= e.boundary_timestep() ? kHighNoiseExpert : kLowNoiseExpert;
}

pipeline::Geometry geometry_of(const json& dit_json, const json& vae_json, const std::string& vae_version) {
  const DiTConfig dit = DiTConfig::from_json(dit_json);
  pipeline::Geometry g;
  if (vae_version == "wan2.2") {
    const Wan22VAEConfig vae = Wan22VAEConfig::from_json(vae_json);
    g.vae_label = "the Wan 2.2 VAE";
    g.z_dim = vae.z_dim;
    g.vae_stride_t = vae.temporal_factor();
    g.vae_stride_s = vae.spatial_factor();
  } else {
    VIDAX_CHECK(vae_version == "wan2.1", "unknown Wan VAE version '" << vae_version << "' (wan2.1 or wan2.2)");
    const WanVAEConfig vae = WanVAEConfig::from_json(vae_json);
    g.vae_label = "the Wan VAE";
    g.z_dim = vae.z_dim;
    g.vae_stride_t = vae.temporal_factor();
    g.vae_stride_s = vae.spatial_factor();
  }
  g.patch_t = dit.patch_size[0];
  g.patch_h = dit.patch_size[1];
  g.patch_w = dit.patch_size[2];
  g.text_len = dit.text_len;
  return g;
}

// The parameters of one DiT with its LoRAs (docs/lora.md): each merged into `weights` or kept
// beside them as runtime adapters, as lora_opt.mode says. `which` names the DiT in messages
// ("the DiT", "the high-noise DiT"); every LoRA's line says where it went and how.
nn::ParamSource dit_params_with_loras(std::map<std::string, Tensor> weights, const std::vector<translate::LoraSpec>& loras,
                                      const json& dit_json, const translate::LoraOptions& lora_opt,
                                      const std::string& origin, const std::string& which, bool pjrt,
                                      const std::function<void(const std::string&)>& on_stage) {
  return pipeline::params_with_loras(std::move(weights), loras, translate::wan::dit_component(), dit_json, lora_opt,
                                     origin, which, pjrt, on_stage);
}

LoadedT2V load_t2v(const pipeline::LoadOptions& opt) {
  auto stage = [&](const std::string& s) {
    if (opt.on_stage) opt.on_stage(s);
  };
  LoadedT2V out;
  // --device pjrt (docs/pjrt.md): the DiT's steps through the plugin, checked before anything loads.
  std::shared_ptr<PjrtDiT> pjrt_dit;
  VIDAX_CHECK(opt.device == "cpu" || opt.device == "pjrt" || opt.device.empty(),
              "--device " << opt.device << ": not a device (cpu | pjrt)");
  if (opt.device == "pjrt") {
    VIDAX_CHECK(!opt.mesh, "--device pjrt with --mesh: the PJRT path runs on one plugin (sharding inside it is not "
                           "done yet; docs/pjrt.md)");
    VIDAX_CHECK(!opt.offload, "--device pjrt with --offload: the PJRT path keeps the DiT's weights resident on the "
                              "device (drop --offload)");
    pjrt_dit = std::make_shared<PjrtDiT>(pjrt::Plugin::resolve_path(opt.pjrt_plugin), [on_stage = opt.on_stage](const std::string& m) {
      if (on_stage) on_stage("warning: " + m);
    });
    stage("DiT steps on PJRT: " + pjrt_dit->info().str() +
          "; the text encoder, the DiT's text conditioning and the VAE run on the CPU backend (not lowered yet)");
  }
  out.preset = resolve_preset(opt.weights_dir, opt.model, opt.files);
  out.files = find_weights(opt.weights_dir, out.preset, opt.files);
  // A diffusers folder's own switch point (model_index.json) over the preset's.
  if (out.files.boundary_ratio && out.preset.experts) out.preset.experts->boundary = *out.files.boundary_ratio;
  check_preset_matches(out.files, out.preset);
  out.precision = opt.precision.empty() ? out.preset.variant.defaults.precision : opt.precision;
  const Precision precision = parse_precision(out.precision);
  const WeightFiles& f = out.files;
  out.preset.dit = part_config(f.dit_config, f.vidax_model, "dit", out.preset.dit);
  out.preset.vae = part_config(f.vae_config, f.vidax_model, "vae", out.preset.vae);
  out.preset.t5 = part_config(f.t5_config, f.vidax_model, "t5", out.preset.t5);
  const std::string image_task = out.preset.image_task();
  VIDAX_CHECK(!pjrt_dit || image_task.empty(), "--device pjrt: " << out.preset.name()
                                                                 << " is image-to-video, whose DiT steps are not lowered "
                                                                    "to PJRT yet (text-to-video only; docs/pjrt.md)");
  if (out.preset.uses_clip()) out.preset.clip = part_config(json(), f.vidax_model, "clip", out.preset.clip);
  // Wan 2.2 I2V-A14B: its WanModel 'i2v' is the t2v architecture on in_dim = 16 + 4 + 16 input
  // channels (no img_emb, text-only cross-attention; model.py's forward concatenates y to x before
  // the patch embedding). The engine's DiT runs it as model_type t2v of that in_dim, and predict
  // concatenates y (y_only below); the preset keeps the checkpoint's own config.
  const bool y_only = image_task == "i2v" && !out.preset.uses_clip();
  auto engine_dit_json = [y_only](json j) {
    if (!y_only || !j.is_object()) return j;
    // diffusers' spelling has no model_type (its in_channels say 'i2v'): the WanModel args first.
    if (translate::wan::is_diffusers_dit_config(j)) j = translate::wan::DitConfig::from_json(j).to_json();
    j["model_type"] = "t2v";
    return j;
  };
  const json dit_engine = engine_dit_json(out.preset.dit);
  // Every config is read once here, so a bad field is named with its file before any weight is read.
  with_origin(config_origin(f, "dit", "transformer", !f.dit_config.is_null(), f.dit_single ? f.dit : ""),
              [&] { (void)DiTConfig::from_json(out.preset.dit); });
  // VACE (either spelling: VaceWanModel's model_type, or diffusers' WanVACETransformer3DModel).
  const bool vace = DiTConfig::from_json(out.preset.dit).is_vace();
  VIDAX_CHECK(!pjrt_dit || !vace, "--device pjrt: " << out.preset.name()
                                                    << " is a VACE model, whose DiT steps are not lowered to PJRT yet");
  const bool vae22 = out.preset.vae_version == "wan2.2";
  with_origin(config_origin(f, "vae", "vae", !f.vae_config.is_null(), f.vae_single ? f.vae : ""), [&] {
    if (vae22) (void)Wan22VAEConfig::from_json(out.preset.vae);
    else (void)WanVAEConfig::from_json(out.preset.vae);
  });
  // The low-noise expert's own config (its folder's config.json), else the shared architecture.
  json dit_low_json = engine_dit_json(f.dit_low_noise_config.is_null() ? out.preset.dit : f.dit_low_noise_config);
  if (out.preset.experts)
    with_origin(f.dit_low_noise_config.is_null() ? std::string("the low-noise expert's config")
                                                 : (std::filesystem::path(f.dit_low_noise).parent_path() / "config.json").string(),
                [&] { (void)DiTConfig::from_json(dit_low_json); });
  with_origin(config_origin(f, "t5", "text_encoder", !f.t5_config.is_null(), f.t5_single ? f.t5 : ""),
              [&] { (void)text::T5EncoderConfig::from_json(out.preset.t5); });
  if (out.preset.uses_clip())
    with_origin(config_origin(f, "clip", "image_encoder", false), [&] { (void)ClipVisionConfig::from_json(out.preset.clip); });
  std::string layout;

  // Text: UMT5 encoder + tokenizer. The reference runs it in bf16 (t5_dtype);
  // --precision fp32 computes it in fp32 from the stored weights. Its residency
  // (opt.text_encoder) decides whether it stays loaded after the prompts are encoded.
  const text::T5EncoderConfig t5_cfg = text::T5EncoderConfig::from_json(out.preset.t5);
  auto load_text_encoder = [t5_path = f.t5, tok = f.tokenizer, t5_json = out.preset.t5, t5_cfg,
                            text_len = out.preset.text_len, precision, on_stage = opt.on_stage]() {
    if (on_stage) on_stage("loading the text encoder " + t5_path);
    std::string lay;
    auto t5_weights = std::make_shared<std::map<std::string, Tensor>>(
        translate_part(t5_path, translate::t5::umt5_component(), t5_json, &lay));
    text::T5Encoder t5(
        t5_cfg,
        [t5_weights, t5_path](const std::string& name) {
          auto it = t5_weights->find(name);
          VIDAX_CHECK(it != t5_weights->end(), t5_path << ": no parameter " << name);
          return it->second;
        },
        precision == Precision::F32 ? DType::F32 : DType::BF16);
    t5_weights.reset();
    return std::make_shared<text::WanTextEncoder>(text::T5Tokenizer::load(tok), std::move(t5), text_len);
  };
  auto text_encoder = std::make_shared<pipeline::ResidentPart<text::WanTextEncoder>>("the text encoder",
                                                                                      opt.text_encoder,
                                                                                      load_text_encoder);
  (void)text_encoder->acquire();  // load now: a broken file fails before the DiT is read

  // DiT. Its residency (opt.denoiser) decides whether it stays loaded once the steps are done
  // (a one-shot run frees it before the VAE decode; a later use loads it again).
  const DiTConfig dit_cfg = DiTConfig::from_json(dit_engine);
  // The LoRAs merged into the DiT (docs/lora.md). A resident DiT keeps its base weights, unmerged
  // (views of the mapped checkpoint, as translated), so Parts::use_loras changes the LoRAs of a
  // loaded model without reading the checkpoint again and no LoRA outlives the runs that asked for it.
  struct DitLoras {
    std::mutex mu;
    std::vector<translate::LoraSpec> loras;
    std::shared_ptr<const std::map<std::string, Tensor>> base;
  };
  auto dit_loras = std::make_shared<DitLoras>();
  dit_loras->loras = opt.loras;
  const bool keep_base = opt.denoiser == pipeline::Residency::Resident;
  VIDAX_CHECK(!opt.offload || opt.loras.empty(),
              "--offload with --lora is not supported yet: a LoRA is merged into resident weights (docs/lora.md)");
  auto load_dit = [dit_path = f.dit, dit_json = dit_engine, dit_cfg, precision, mesh = opt.mesh,
                   label = out.precision, on_stage = opt.on_stage, dit_loras, keep_base, lora_opt = opt.lora,
                   offload = opt.offload, pjrt = opt.device == "pjrt"]() -> std::shared_ptr<WanDiT> {
    std::lock_guard<std::mutex> lock(dit_loras->mu);
    if (offload) {
      VIDAX_CHECK(dit_loras->loras.empty(),
                  "--offload with LoRAs is not supported yet: a LoRA is merged into resident weights (docs/lora.md)");
      if (on_stage) on_stage("mapping the DiT " + dit_path + " (" + label + ", blocks streamed: --offload)");
      return std::make_shared<WanDiT>(load_streamed_dit(dit_path, dit_json, dit_cfg, precision, mesh));
    }
    std::map<std::string, Tensor> weights;
    if (dit_loras->base) {
      weights = *dit_loras->base;  // tensor handles: the merge below replaces entries, never the base's data
    } else {
      if (on_stage) on_stage("loading the DiT " + dit_path + " (" + label + ")");
      std::string lay;
      weights = translate_part(dit_path, translate::wan::dit_component(), dit_json, &lay);
      if (keep_base) dit_loras->base = std::make_shared<const std::map<std::string, Tensor>>(weights);
    }
    // LoRAs: applied here, where the DiT's parameters have their engine names (merged: fp32 sums,
    // one cast back to each parameter's stored dtype; runtime: adapters beside the weights).
    nn::ParamSource params =
        dit_params_with_loras(std::move(weights), dit_loras->loras, dit_json, lora_opt, dit_path, "the DiT", pjrt, on_stage);
    auto d = std::make_shared<WanDiT>(dit_cfg, params, precision, mesh);
    params.expect_all_taken();
    return d;
  };
  // Two experts (Wan 2.2 A14B): one part each, in expert_index order. With --offload (chosen by
  // --max-memory when both do not fit) only one is resident at a time: predict() frees the other
  // when the run switches (high -> low noise), as the reference's offload_model moves it to the CPU.
  std::vector<std::shared_ptr<pipeline::ResidentPart<WanDiT>>> experts;
  const bool swap_experts = out.preset.experts && opt.offload;
  if (out.preset.experts) {
    VIDAX_CHECK(opt.loras.empty(), "--lora with " << out.preset.name()
                                                  << ": its two experts take their own LoRAs; give --lora-high-noise "
                                                     "FILE[:SCALE] and / or --lora-low-noise FILE[:SCALE] (docs/lora.md)");
    VIDAX_CHECK(!opt.offload || (opt.loras_high_noise.empty() && opt.loras_low_noise.empty()),
                "--offload with --lora-high-noise / --lora-low-noise is not supported yet: a LoRA is applied to "
                "resident weights (docs/lora.md)");
    const DiTConfig low_cfg = DiTConfig::from_json(dit_low_json);
    auto expert_loader = [precision, mesh = opt.mesh, label = out.precision, on_stage = opt.on_stage,
                          offload = opt.offload, lora_opt = opt.lora, pjrt = opt.device == "pjrt"](
                             std::string path, json cfg_json, DiTConfig cfg, std::string which,
                             std::vector<translate::LoraSpec> loras) {
      return [=]() -> std::shared_ptr<WanDiT> {
        if (offload) {
          if (on_stage) on_stage("mapping the " + which + " DiT " + path + " (" + label + ", blocks streamed: --offload)");
          return std::make_shared<WanDiT>(load_streamed_dit(path, cfg_json, cfg, precision, mesh));
        }
        if (on_stage) on_stage("loading the " + which + " DiT " + path + " (" + label + ")");
        std::string lay;
        // This expert's LoRAs only (--lora-high-noise / --lora-low-noise), checked against its own config.
        nn::ParamSource params =
            dit_params_with_loras(translate_part(path, translate::wan::dit_component(), cfg_json, &lay), loras,
                                  cfg_json, lora_opt, path, "the " + which + " DiT", pjrt, on_stage);
        auto d = std::make_shared<WanDiT>(cfg, params, precision, mesh);
        params.expect_all_taken();
        return d;
      };
    };
    experts.resize(2);
    experts[kLowNoiseExpert] = std::make_shared<pipeline::ResidentPart<WanDiT>>(
        "the low-noise DiT", opt.denoiser,
        expert_loader(f.dit_low_noise, dit_low_json, low_cfg, "low-noise", opt.loras_low_noise));
    experts[kHighNoiseExpert] = std::make_shared<pipeline::ResidentPart<WanDiT>>(
        "the high-noise DiT", opt.denoiser,
        expert_loader(f.dit, dit_engine, dit_cfg, "high-noise", opt.loras_high_noise));
    (void)experts[kHighNoiseExpert]->acquire();  // the first steps' expert
    if (!swap_experts) {
      (void)experts[kLowNoiseExpert]->acquire();
    } else {  // loaded at the switch; its keys and shapes are checked now, so a broken file fails before step 1
      auto src = translate::CheckpointSource::open(f.dit_low_noise);
      translate::check(translate::match(*src, translate::wan::dit_component(), dit_low_json).plan, {},
                       translate::wan::dit_component().name() + " from " + f.dit_low_noise);
    }
    VIDAX_CHECK(low_cfg.in_dim == dit_cfg.in_dim && low_cfg.out_dim == dit_cfg.out_dim &&
                    low_cfg.text_dim == dit_cfg.text_dim && low_cfg.patch_size == dit_cfg.patch_size,
                "the low-noise expert (in_dim " << low_cfg.in_dim << ", text_dim " << low_cfg.text_dim
                                                << ") does not fit the high-noise one (in_dim " << dit_cfg.in_dim
                                                << ", text_dim " << dit_cfg.text_dim << ")");
  }
  VIDAX_CHECK(out.preset.experts || (opt.loras_high_noise.empty() && opt.loras_low_noise.empty()),
              "--lora-high-noise / --lora-low-noise: " << out.preset.name()
                                                       << " has one DiT, not two experts; give its LoRAs with --lora");
  auto dit = std::make_shared<pipeline::ResidentPart<WanDiT>>("the DiT", opt.denoiser, load_dit);
  if (!out.preset.experts) (void)dit->acquire();

  // VAE decoder (fp32, as the reference's WanVAE(dtype=torch.float)).
  stage("loading the VAE " + f.vae);
  std::shared_ptr<Wan22VAE> vae22_model;
  // TI2V (a ti2v DiT with the Wan 2.2 VAE): text-to-video, or image-to-video with --image, whose
  // image the VAE's encoder turns into the first latent frame.
  const bool ti2v = vae22 && dit_cfg.model_type == "ti2v";
  if (vae22) vae22_model = load_vae22(f, Wan22VAEConfig::from_json(out.preset.vae), opt.vae_tile, ti2v);
  const WanVAEConfig vae_cfg = vae22 ? WanVAEConfig{} : WanVAEConfig::from_json(out.preset.vae);
  const int64_t z_dim = vae22 ? vae22_model->config().z_dim : vae_cfg.z_dim;
  std::shared_ptr<WanVAE> vae;
  if (!vae22) {
    auto vae_weights = translate_part(f.vae, translate::wan::vae_component(), out.preset.vae, &layout);
    vae = std::make_shared<WanVAE>(
        vae_cfg,
        [&vae_weights, path = f.vae](const std::string& name) {
          auto it = vae_weights.find(name);
          VIDAX_CHECK(it != vae_weights.end(), path << ": no parameter " << name);
          return it->second;
        },
        WanVAE::Parts{/*encoder=*/!image_task.empty() || vace, /*decoder=*/true}, DType::F32);
  }

  // Image-to-video: the CLIP image encoder, as the text encoder a part freed once used (unless
  // the caller keeps it). The reference runs it in fp16 under autocast; --precision fp32 in fp32.
  std::shared_ptr<pipeline::ResidentPart<ClipVision>> clip;
  if (out.preset.uses_clip()) {
    auto load_clip = [clip_path = f.clip, clip_json = out.preset.clip, precision, on_stage = opt.on_stage]() {
      if (on_stage) on_stage("loading the CLIP image encoder " + clip_path);
      std::string lay;
      nn::ParamSource params =
          nn::ParamSource::from_map(translate_part(clip_path, clip_visual_component(), clip_json, &lay), clip_path);
      auto c = std::make_shared<ClipVision>(ClipVisionConfig::from_json(clip_json), params,
                                            precision == Precision::F32 ? DType::F32 : DType::BF16);
      params.expect_all_taken();
      return c;
    };
    clip = std::make_shared<pipeline::ResidentPart<ClipVision>>("the CLIP image encoder", opt.text_encoder, load_clip);
    (void)clip->acquire();
  }

  pipeline::Parts& p = out.parts;
  p.geometry = geometry_of(out.preset.dit, out.preset.vae, out.preset.vae_version);
  p.prediction = pipeline::PredictionType::FlowVelocity;
  p.guidance = pipeline::GuidanceKind::ClassifierFree;
  if (opt.mesh && opt.mesh->shape().cfg > 1) p.cfg_group = &opt.mesh->cfg();
  // An I2V DiT takes the latent, the 4-channel mask and the image latent on its input channels.
  const int64_t y_channels = image_task.empty() ? 0 : 4 + z_dim;
  VIDAX_CHECK(dit_cfg.in_dim == z_dim + y_channels && dit_cfg.out_dim == z_dim,
              "the DiT (in_dim " << dit_cfg.in_dim << ", out_dim " << dit_cfg.out_dim << ") does not fit the VAE (z_dim "
                                 << z_dim << (y_channels ? ", + 4 mask + z_dim image channels" : "") << ")");
  // VACE: the vace context is the inactive and reactive latents and the 8x8 mask on channels.
  const int64_t vace_channels = 2 * z_dim + p.geometry.vae_stride_s * p.geometry.vae_stride_s;
  VIDAX_CHECK(!vace || vae22 || dit_cfg.vace_in_dim == vace_channels,
              "the VACE DiT (vace_in_dim " << dit_cfg.vace_in_dim << ") does not fit the VAE (2 x z_dim " << z_dim
                                           << " + " << vace_channels - 2 * z_dim << " mask channels = " << vace_channels
                                           << ")");
  VIDAX_CHECK(!vace || !vae22, "a VACE DiT with the Wan 2.2 VAE is not a published model (VACE uses the Wan 2.1 VAE)");
  VIDAX_CHECK(dit_cfg.text_dim == t5_cfg.dim, "the DiT expects text_dim " << dit_cfg.text_dim
                                                                          << " but the text encoder has dim " << t5_cfg.dim);

  // Encoded prompts are kept (a few) so repeated runs on a loaded model, e.g.
  // the same negative prompt every time, skip the text encoder.
  auto cache = std::make_shared<PromptCache>();
  p.encode_prompt = [text_encoder, dit, cache](const std::string& prompt) {
    if (auto hit = cache->find(prompt)) return *hit;
    text::EncodedPrompts e = text_encoder->acquire()->encode({prompt});
    pipeline::EncodedPrompt r;
    r.context = e.context.at(0);
    r.truncated = e.truncated.at(0);
    auto cond = std::make_shared<DiTConditioning>();
    cond->text = dit->acquire()->encode_text(r.context);  // an I2V model's images join per run (predict)
    r.conditioning = cond;
    cache->put(prompt, r);
    return r;
  };
  p.check_loras = [dit_json = out.preset.dit](const std::vector<translate::LoraSpec>& loras) {
    pipeline::check_loras(loras, translate::wan::dit_component(), dit_json);
  };
  p.use_loras = [dit, dit_loras, cache](const std::vector<translate::LoraSpec>& loras) {
    const bool loaded = dit->loaded();  // before dit_loras->mu: acquire() takes the part's lock, then that one
    {
      std::lock_guard<std::mutex> lock(dit_loras->mu);
      const bool same = loras.size() == dit_loras->loras.size() &&
                        std::equal(loras.begin(), loras.end(), dit_loras->loras.begin(),
                                   [](const auto& a, const auto& b) { return a.path == b.path && a.scale == b.scale; });
      if (same && loaded) return;
      dit_loras->loras = loras;
    }
    dit->unload();  // the merged DiT goes; the next acquire merges the new LoRAs into the base weights
    cache->clear();
    try {
      (void)dit->acquire();
    } catch (...) {
      {  // a bad file: back to the base weights, so the next run never finds a half-applied set
        std::lock_guard<std::mutex> lock(dit_loras->mu);
        dit_loras->loras.clear();
      }
      dit->unload();
      throw;
    }
  };
  p.after_encoding = [text_encoder] { text_encoder->release(); };
  p.after_denoising = [dit] { dit->release(); };
  if (pjrt_dit) {
    p.predict = [dit, pjrt_dit](const pipeline::DenoiseInput& in) {
      VIDAX_CHECK(!in.images, "--device pjrt: image-to-video DiT steps are not lowered yet (docs/pjrt.md)");
      VIDAX_CHECK(in.prompt.conditioning, "predict: the prompt was not encoded by this pipeline's encode_prompt");
      const auto& cond = *static_cast<const DiTConditioning*>(in.prompt.conditioning.get());
      return pjrt_dit->forward(dit->acquire(), in.x, std::vector<double>{in.t}, cond.text);
    };
    p.device_report = [pjrt_dit] { return pjrt_dit->summary(); };
    p.device_json = [pjrt_dit] { return pjrt_dit->stats_json(); };
  } else {
    p.predict = [dit, vace, g = p.geometry](const pipeline::DenoiseInput& in) {
      VIDAX_CHECK(in.prompt.conditioning, "predict: the prompt was not encoded by this pipeline's encode_prompt");
      const auto& cond = *static_cast<const DiTConditioning*>(in.prompt.conditioning.get());
      if (in.images && in.images->fixed_frames.defined())  // TI2V: the image's frames at t = 0
        return dit->acquire()->forward(in.x, ti2v_token_timesteps(in.x, in.images->fixed_frames.size(1), in.t, g),
                                       cond.text);
      if (vace) {  // every step: the prompt's context joined to the run's vace context
        VIDAX_CHECK(in.images && in.images->data,
                    "predict: a VACE model's control inputs were not encoded by this pipeline's condition_on_control");
        const auto& v = *static_cast<const DiTVaceConditioning*>(in.images->data.get());
        return dit->acquire()->forward(in.x, std::vector<double>{in.t}, with_vace(cond.text, v.vace));
      }
      if (in.images) {
        VIDAX_CHECK(in.images->data, "predict: the images were not encoded by this pipeline's condition_on_images");
        const auto& img = *static_cast<const DiTImageConditioning*>(in.images->data.get());
        return dit->acquire()->forward(in.x, std::vector<double>{in.t}, with_images(cond.text, img.images));
      }
      return dit->acquire()->forward(in.x, std::vector<double>{in.t}, cond.text);
    };
  }
  if (y_only) {  // Wan 2.2 I2V-A14B (image2video.py of Wan2.2): y = mask + the image's latent, no CLIP
    p.min_images = p.max_images = 1;
    p.condition_on_images = [vae, g = p.geometry](const pipeline::ImageInputs& in) {
      pipeline::ImageConditioning out;
      auto cond = std::make_shared<InputChannels>();
      cond->y = i2v_y(in, Tensor(), *vae, g, out);
      out.data = cond;
      return out;
    };
  } else if (!image_task.empty()) {
    const bool flf = image_task == "flf2v";
    p.min_images = p.max_images = flf ? 2 : 1;
    p.condition_on_images = [clip, vae, dit, flf, g = p.geometry](const pipeline::ImageInputs& in) {
      pipeline::ImageConditioning out;
      Tensor last;
      if (flf) {
        std::string note;
        last = flf2v_last_frame(in.image, in.last_image, &note);
        if (!note.empty()) out.notes.push_back(note);
      }
      // CLIPModel.visual of each image at its own size, then the VAE encoding of the frames.
      Tensor fea = clip->acquire()->encode(in.image.unsqueeze(0));
      if (flf) fea = ops::concat({fea, clip->acquire()->encode(last.unsqueeze(0))}, 0);
      const Tensor y = i2v_y(in, last, *vae, g, out);
      auto cond = std::make_shared<DiTImageConditioning>();
      cond->images = dit->acquire()->encode_images(fea, y);
      out.data = cond;
      return out;
    };
    p.after_images = [clip] { clip->release(); };
  }
  if (vace) {  // WanVace.generate: the control video, mask and reference images, once per run
    p.condition_on_control = [vae, dit, g = p.geometry](const pipeline::ControlInputs& in) {
      pipeline::ImageConditioning out;
      const VaeEncode encode = [&vae](const Tensor& video) {
        return vae->encode_normalized(video, LatentScale::wan21()).squeeze(0);
      };
      const Tensor z = vace_context(in, g, encode, out);
      auto cond = std::make_shared<DiTVaceConditioning>();
      cond->vace = dit->acquire()->encode_vace(z, in.scale);
      out.data = cond;
      return out;
    };
  }
  if (ti2v) {
    p.min_images = 0;
    p.max_images = 1;
    p.condition_on_images = [vae22_model, g = p.geometry](const pipeline::ImageInputs& in) {
      pipeline::ImageConditioning out;
      const int64_t dw = g.patch_w * g.vae_stride_s, dh = g.patch_h * g.vae_stride_s;
      const auto [ow, oh] = ti2v_output_size(in.image.size(2), in.image.size(1), dw, dh, in.height * in.width);
      out.height = oh;
      out.width = ow;
      note_image_size(in, out);
      if (in.image.size(1) * ow != in.image.size(2) * oh)
        out.notes.push_back(msg() << "the image is resized (Lanczos) and centre-cropped to " << ow << "x" << oh
                                  << ", as the reference does");
      const Tensor frame = ti2v_image(in.image, oh, ow);  // [3, oh, ow]
      const Tensor video = frame.reshape({1, 3, 1, oh, ow});
      const Tensor z = vae22_model->encode_normalized(video, wan22_latent_scale()).squeeze(0);  // [48, 1, h, w]
      out.fixed_frames = z;
      out.taps["inter.z"] = z;
      return out;
    };
  }
  if (out.preset.experts) attach_experts(p, *out.preset.experts, experts, swap_experts, text_encoder, &out);
  std::optional<VaeTiling> tiling;
  if (opt.vae_tile > 0) tiling = VaeTiling::for_tile(opt.vae_tile);
  if (vae22) {
    p.decode = [vae22_model](const Tensor& z, const pipeline::Parts::DecodeProgress& progress) {
      const int64_t chunks = z.size(1);  // one latent frame per chunk, as Wan2_2_VAE decodes
      int64_t done = 0;
      const Tap poll = [&](const std::string& module, const Tensor&) {
        pipeline::throw_if_interrupted("VAE decoding (" + module + ")");
        if (module == "decoder.head.2" && progress) progress(++done, chunks);
      };
      return vae22_model->decode_normalized(z.unsqueeze(0), wan22_latent_scale(), poll).squeeze(0);
    };
    return out;
  }
  p.decode = [vae, tiling](const Tensor& z, const pipeline::Parts::DecodeProgress& progress) {
    // The VAE reports each module's output per chunk: check for Ctrl-C there, so a
    // long decode stops within one module instead of running to the end. Its head is
    // the last module of a chunk (one latent frame, as the reference decodes; per tile when tiled).
    const int64_t chunks = z.size(1) * vae->tile_count(z.size(2), z.size(3), tiling ? &*tiling : nullptr);
    int64_t done = 0;
    const Tap poll = [&](const std::string& module, const Tensor&) {
      pipeline::throw_if_interrupted("VAE decoding (" + module + ")");
      if (module == "decoder.head.2" && progress) progress(++done, chunks);
    };
    return vae->decode_normalized(z.unsqueeze(0), LatentScale::wan21(), tiling ? &*tiling : nullptr, poll).squeeze(0);
  };
  return out;
}

}  // namespace vidax::wan
