// A model family as the engine sees it (DESIGN.md §2, docs/adding-a-family.md):
// its variants with their official defaults, weight discovery, geometry, a
// loader that hands the generic pipeline its parts, and the optional extras
// (a tiny demo checkpoint, a random-weight benchmark, parity kinds). Each family
// implements this once in src/models/<family>/family.cpp; src/engine/ lists
// them (one registration line per family) and the CLI dispatches through it.
#pragma once
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "dist/mesh.h"
#include "pipeline/generate.h"
#include "pipeline/memory_plan.h"
#include "pipeline/parts.h"
#include "pipeline/residency.h"
#include "translate/component.h"
#include "translate/lora.h"

namespace vidax::pipeline {

struct BenchOptions;  // bench.h

// The sampling defaults of a variant: the reference's own (generate.py, the
// diffusers pipeline's __call__ defaults).
struct Defaults {
  int64_t frames = 81, height = 480, width = 832;
  int64_t steps = 50;
  double guidance = 5.0;
  // Per denoiser (Request::guidance_scales), used when no guidance is given; empty = `guidance`.
  std::vector<double> guidance_scales;
  double shift = 5.0;
  std::string sampler = "unipc";
  double fps = 16;
  std::string precision = "bf16";
  std::string negative_prompt;  // used when --negative-prompt is empty
  // --two-stage's size when --height / --width are not given (the reference's two-stage parsers
  // default to twice the one-stage size); 0 = height / width.
  int64_t two_stage_height = 0, two_stage_width = 0;
};

// `vidax generate --preset`: the sampling settings a distilled model's publisher specifies
// (docs/lora.md cites each source); each family lists its own. Options given explicitly win.
struct SamplingPreset {
  std::string name;         // "lightx2v-4step"
  std::string description;  // one line
  std::string source;       // where the settings come from
  int64_t steps = 0;
  double shift = 0;
  std::string sampler;
  double guidance = 1.0;  // 1: no unconditional pass (CFG distilled)
};

// The defaults with a preset's sampling settings in place (what --preset does before the
// explicit options are read; `vidax serve`'s `preset` field the same).
Defaults with_preset(Defaults d, const SamplingPreset& p);

// The "model" that a `vidax make-demo` folder's vidax_model.json names: "" when the folder has no
// such file or the file names none; a file that is not JSON is an error naming it. The family
// decides whether the name is one of its demos.
std::string demo_model_named_in(const std::string& dir);

struct Variant {
  std::string name;         // "wan2.1-t2v-1.3b": what --model takes
  std::string description;  // one line for `vidax models` and errors
  std::vector<std::string> tasks;  // "t2v", "i2v", "flf2v", "v2v", ...
  Defaults defaults;
  bool demo = false;  // a random-weight architecture for `vidax make-demo`, not a published model
  // Makes an audio track with the video (Result::audio; LTX-2's audio-video models). `vidax
  // generate` refuses --no-audio / --audio-output for a variant without one.
  bool audio = false;
  // Takes images at any pixel frame with a strength (Request::key_images: `vidax generate --image
  // FILE --image-frame N --image-strength S`, repeatable; LTX-2's keyframes). Others take the
  // first frame as Request::image and refuse --image-frame / --image-strength.
  bool key_images = false;
  // Takes reference videos (Request::reference_videos: `vidax generate --reference-video FILE` /
  // `--video FILE`; LTX-2's IC-LoRA pipeline). Others refuse them by name.
  bool reference_videos = false;
};

// Parts of a model given as single files, as users download them (`--diffusion-model`,
// `--vae`, `--text-encoder`, `--tokenizer`; docs/generate.md): each replaces that part of the
// weights directory, or, without one, they are the whole model. Any format the io layer reads
// (safetensors, .pth, GGUF) in any layout the family's key maps know; the family and variant
// are detected from the tensors.
struct PartFiles {
  std::string diffusion_model, vae, text_encoder, tokenizer;
  bool any() const { return !diffusion_model.empty() || !vae.empty() || !text_encoder.empty() || !tokenizer.empty(); }
};

// What Family::check_part_files found: per part given, its flag, file and config (the file's
// __metadata__ config, else what its shapes say), and the variant the DiT file is.
struct PartChecked {
  std::string flag, path;  // "--diffusion-model", the file
  std::string component;   // the translator component it holds ("wan2.1-dit", ...)
  nlohmann::json config;
};
struct PartsChecked {
  std::vector<PartChecked> parts;  // in flag order: --diffusion-model, --vae, --text-encoder
  std::string variant;             // "" when no DiT file was given or its shapes match no variant
};

struct LoadOptions {
  std::string weights_dir;  // "" when `files` name every part
  PartFiles files;
  std::string model;      // a variant name; "" = detect from the weights
  std::string precision;  // "" = the variant's default
  std::function<void(const std::string&)> on_stage;  // "loading the DiT (...)", ...
  // Run sharded (docs/parallelism.md). Must outlive the loaded parts; every rank loads.
  const dist::Mesh* mesh = nullptr;
  // Where the parts live between uses (residency.h): the CLI frees the text encoder after
  // encoding and the denoiser before decoding; a server keeps both.
  Residency text_encoder = Residency::Resident;
  Residency denoiser = Residency::Resident;
  // Weight streaming (`--offload`, nn/weight_stream.h): the denoiser's blocks stay in the mapped
  // checkpoint and each is brought in just before use, the next one prefetched meanwhile.
  bool offload = false;
  // --vae-tile: the VAE decodes in spatial tiles of this many pixels (0: whole frames).
  int64_t vae_tile = 0;
  // LoRAs merged into the denoiser's weights at load, in order, each with its scale (docs/lora.md).
  std::vector<translate::LoraSpec> loras;
  // Two experts (Wan 2.2 A14B): each expert's own LoRAs (--lora-high-noise / --lora-low-noise),
  // applied to that expert only; `loras` is then refused.
  std::vector<translate::LoraSpec> loras_high_noise, loras_low_noise;
  translate::LoraOptions lora;  // strictness and --lora-mode (merge | runtime | auto)
  // Where the denoiser's steps run (docs/pjrt.md): "cpu" (the CPU backend) or "pjrt" (recorded,
  // compiled once through the PJRT plugin at pjrt_plugin; the other parts stay on the CPU).
  std::string device = "cpu";
  std::string pjrt_plugin;
  // The two-stage pipeline's inputs (--spatial-upsampler-path FILE, --distilled-lora FILE[:S]), for a
  // family that has one; "" = found in weights_dir by the publisher's file names, else missing.
  std::string spatial_upsampler, distilled_lora;
};

struct LoadedModel {
  Variant variant;
  std::string layout;     // "original" | "diffusers" | ...
  std::string precision;  // what the denoiser computes in
  Parts parts;            // owns the loaded models
};

struct DemoOptions {
  std::string out_dir;
  std::string spiece_model;  // a tokenizer model the demo ships (families with SentencePiece tokenizers)
  uint64_t seed = 0;
};

class Family {
 public:
  virtual ~Family() = default;
  virtual std::string name() const = 0;         // "wan"
  virtual std::string description() const = 0;  // "Wan 2.1 (Wan-AI)"
  virtual const std::vector<Variant>& variants() const = 0;

  // The variant a weights directory holds, "" when it is not recognised as this family's.
  virtual std::string detect(const std::string& weights_dir) const = 0;
  // The variant for a weights directory (`model` when given, checked against the
  // weights, else detected) after checking that every part is there; nothing is loaded.
  virtual Variant resolve(const std::string& weights_dir, const std::string& model) const = 0;
  // The variant of the same model that takes --image when `variant` takes none ("" when there is none):
  // check_request names it when a text-to-video variant is given an image.
  virtual std::string image_variant(const std::string& /*variant*/) const { return ""; }
  // The size rules of a variant, before anything is loaded (validate_request).
  virtual Geometry geometry(const std::string& variant) const = 0;
  // What a request needs in memory, from the variant's architecture (memory_plan.h).
  virtual MemoryPlan memory_plan(const std::string& variant, const Request& request,
                                 const std::string& precision) const = 0;
  virtual LoadedModel load(const LoadOptions& opt) const = 0;

  // detect / resolve for a weights directory (may be "") with parts given as single files.
  // The defaults: a family that takes no single files detects nothing and refuses them.
  virtual std::string detect_parts(const std::string& weights_dir, const PartFiles& files) const;
  virtual Variant resolve_parts(const std::string& weights_dir, const std::string& model,
                                const PartFiles& files) const;
  // The single files on their own (`vidax inspect` / `convert` / `bench` with --diffusion-model,
  // --vae, --text-encoder): each checked to hold the part its flag names, with the check a load
  // makes (the same code), and the variant a --diffusion-model file is ("" when none matches or no
  // DiT is given). Throws naming the flag and the file. Default: the family takes no single files.
  virtual PartsChecked check_part_files(const PartFiles& files) const;

  // Optional extras; the defaults say the family has none.
  // Writes a tiny random-weight checkpoint of `variant` (a demo variant); returns its description.
  virtual nlohmann::json make_demo(const std::string& variant, const DemoOptions& opt) const;
  // `vidax bench`: the family's stages on random weights of the real shapes (bench.h).
  virtual nlohmann::json bench(const BenchOptions& opt, const std::function<void(const std::string&)>& log) const;
  // The translator's components of the family's checkpoints (key maps, parameter specs), in
  // detection order; the engine registers them for `vidax inspect`, `convert` and detection.
  virtual std::vector<const translate::Component*> components() const { return {}; }
  // Registers the family's golden-file kinds (parity/parity.h); called once by the engine.
  virtual void register_parity_kinds() const {}

  // The family's sampling presets (distilled models' published settings).
  virtual const std::vector<SamplingPreset>& sampling_presets() const;
  // The preset named `name`; throws listing the family's presets.
  const SamplingPreset& sampling_preset(const std::string& name) const;

  // The variant named `name`; throws listing the family's variants.
  const Variant& variant(const std::string& name) const;
  bool has_variant(const std::string& name) const;
};

}  // namespace vidax::pipeline
