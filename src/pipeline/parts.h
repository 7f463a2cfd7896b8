// What a model family hands the generic pipeline (DESIGN.md §2): the sizes that
// tie its parts together (Geometry) and the parts themselves as callables
// (Parts). The loop (generate.h) knows no family: a family's loader builds
// these from its checkpoint (src/models/<family>/), tests build stand-ins.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "dist/communicator.h"
#include "pipeline/guidance.h"
#include "pipeline/prediction.h"
#include "translate/lora.h"

namespace vidax::pipeline {

struct Request;  // generate.h
struct Events;
struct Result;

// The latent grid of a family and the rules a request's size must follow.
// Frames: (frames - 1) must be a multiple of vae_stride_t * patch_t (Wan: 4k+1,
// LTX: 8k+1); height and width multiples of vae_stride_s * patch (Wan: 16).
struct Geometry {
  std::string vae_label = "the VAE";  // how messages name the autoencoder ("the Wan VAE")
  int64_t z_dim = 16;                 // latent channels
  int64_t vae_stride_t = 4, vae_stride_s = 8;
  int64_t patch_t = 1, patch_h = 2, patch_w = 2;
  int64_t text_len = 512;  // the text encoder's token budget (longer prompts are cut)

  int64_t frame_multiple() const { return vae_stride_t * patch_t; }
  int64_t height_multiple() const { return vae_stride_s * patch_h; }
  int64_t width_multiple() const { return vae_stride_s * patch_w; }
};

struct EncodedPrompt {
  Tensor context;          // [L, text_dim], L = the prompt's token count, L <= text_len
  bool truncated = false;  // the prompt was longer than text_len tokens and was cut as the reference cuts it
  // What the denoiser derives from the context once per prompt (the Wan DiT:
  // the projected text and every block's cross-attention K/V), so the steps
  // reuse it; owned here, opaque to the loop.
  std::shared_ptr<const void> conditioning;
};

// Image-to-video: the request's images, handed to the family once per run (Parts::condition_on_images).
struct ImageInputs {
  Tensor image;       // Request::image: [3, H, W] F32 in [-1, 1] at the file's size
  Tensor last_image;  // Request::last_image; undefined unless given
  int64_t frames = 0;
  int64_t height = 0, width = 0;  // the request's size: height * width is the area the video may take
};

// Control-video conditioning (VACE): the request's control video, its mask and reference
// images as decoded from the user's files, handed to the family once per run
// (Parts::condition_on_control), which samples, sizes and encodes them as its reference does.
struct ControlInputs {
  Tensor video;     // [3, F, H, W] F32: the file's 8-bit levels / 127.5 - 1; undefined = none given
  double fps = 0;   // the video file's frame rate (the family may sample frames by time)
  Tensor mask;      // [3, F, H, W] F32 likewise (the video's frames and size); undefined = none
  std::vector<Tensor> references;  // each [3, H, W] F32 in [-1, 1] at the file's own size
  double scale = 1.0;              // how strongly the control steers (VACE: context_scale)
  int64_t frames = 0, height = 0, width = 0;  // the request's
};

// What the family made of the images: the video's size (the references derive it from the first
// image's aspect ratio and the requested area) and the conditioning its denoiser takes.
struct ImageConditioning {
  int64_t height = 0, width = 0;
  std::shared_ptr<const void> data;  // opaque to the loop (Wan: CLIP features and the latent y)
  std::vector<std::string> notes;    // what was done to the images, said to the user
  std::map<std::string, Tensor> taps;  // intermediates by golden name ("inter.z"), for parity checks
  // The first latent frames the image fixes (Wan 2.2 TI2V: [z_dim, n, h, w], the image's latent),
  // or undefined. The loop puts them in place of the latent's first n frames after the noise is
  // drawn and after every sampler update, as textimage2video.py's
  // latent = (1 - mask2) * z + mask2 * latent (mask2 0 on those frames, 1 elsewhere) does exactly.
  Tensor fixed_frames;
  // Control-video runs: the video's frame count when the inputs fix it (0 = the request's), and
  // the latent frames before the video's (VACE: one per reference image). Those are part of the
  // denoised latent (its noise too) and are dropped before decoding, as WanVace.decode_latent does.
  int64_t frames = 0;
  int64_t leading_latent_frames = 0;
};

// One denoiser call: the latent, the sampler's model timestep, the prompt, and
// the guidance scale for families that take it as an input (embedded guidance).
struct DenoiseInput {
  const Tensor& x;  // [z_dim, F', h, w] F32
  double t;
  const EncodedPrompt& prompt;
  double embedded_guidance = 0;  // Guidance::embedded_scale(); 0 when the family takes none
  const ImageConditioning* images = nullptr;  // image-to-video: condition_on_images' result; else null
  // The sampler's next model timestep (0 at the last step): what meanflow DiTs take as timestep_r
  // (HunyuanVideo 1.5's use_meanflow: timesteps[i + 1], 0 after the last). Others ignore it.
  double t_next = 0;
};

struct Parts {
  Geometry geometry;
  PredictionType prediction = PredictionType::FlowVelocity;  // what `predict` returns
  GuidanceKind guidance = GuidanceKind::ClassifierFree;        // how the family is guided
  // The reference guides only for a scale > 1 (diffusers' do_classifier_free_guidance): a scale
  // under 1 then runs as 1, the prompt alone. false: the scale as given.
  bool guidance_below_one_is_one = false;
  std::function<EncodedPrompt(const std::string& prompt)> encode_prompt;
  // The negative prompt's encoding when it differs from encode_prompt's (a family whose glyph
  // encoder sees "" for it); unset: encode_prompt.
  std::function<EncodedPrompt(const std::string& prompt)> encode_negative_prompt;
  // -> the denoiser's output for x (F32, x's shape), of type `prediction`.
  std::function<Tensor(const DenoiseInput& in)> predict;
  // z [z_dim, F', h, w] (normalized latent) -> video [3, F, H, W] in [-1, 1].
  // Calls `progress(done, total)` after each unit of work it can count (the Wan
  // VAE: each latent frame chunk) when the callable is set; the decode of a long
  // video is most of a run, and the user sees it move.
  using DecodeProgress = std::function<void(int64_t done, int64_t total)>;
  std::function<Tensor(const Tensor& z, const DecodeProgress& progress)> decode;
  // Image-to-video: how many images the loaded model takes (Wan I2V: exactly 1; FLF2V: 2; a
  // text-to-video model: 0), and the callable that encodes them once per run, before the prompts.
  int min_images = 0, max_images = 0;
  // Takes Request::key_images (images at any frame with a strength); false: refused by name.
  bool takes_key_images = false;
  // Runs Request::two_stage (its own two-stage pipeline); false: --two-stage is refused by name.
  bool two_stage = false;
  // Takes Request::reference_videos (in-context LoRA reference videos); false: refused by name.
  bool takes_reference_videos = false;
  std::function<ImageConditioning(const ImageInputs& in)> condition_on_images;
  // Control-video models (VACE): the callable that turns ControlInputs into the denoiser's
  // conditioning (through DenoiseInput::images), once per run, before the prompts. Set = the model
  // takes --control-video / --mask-video / --reference-image (and runs with none of them: the
  // family says what an empty control is); unset = it refuses them.
  std::function<ImageConditioning(const ControlInputs& in)> condition_on_control;
  // Called once the images are encoded: the family frees its image encoder here. Optional.
  std::function<void()> after_images;
  // Called once the prompts are encoded: a family frees its text encoder here when
  // the residency manager says so (residency.h). Optional.
  std::function<void()> after_encoding;
  // Called once the last step is done, before decoding: the denoiser is freed here when its
  // residency says so. Optional.
  std::function<void()> after_denoising;
  // The LoRAs merged into the denoiser, replaced (a server's per-request LoRAs, docs/lora.md):
  // the base weights stay unmerged, so a change reads no checkpoint again, and the same list
  // as now costs nothing. Throws naming a bad file, leaving the base weights in use. Empty
  // when the family cannot switch LoRAs.
  std::function<void(const std::vector<translate::LoraSpec>& loras)> use_loras;
  // Plans and checks LoRAs against the denoiser (keys, shapes) without merging; throws naming
  // the problem. Empty when use_loras is.
  std::function<void(const std::vector<translate::LoraSpec>& loras)> check_loras;
  // Families with several denoisers in one run (Wan 2.2 A14B: a high-noise and a low-noise
  // expert, switched by the timestep): which of them runs step `step` (0-based) at model
  // timestep t. `predict` switches by the same rule (the family's one boundary); the loop reads
  // it to take that denoiser's scale from Request::guidance_scales and to count the calls of
  // each (Result::denoiser_calls_by_index). Optional: unset = one denoiser (index 0).
  std::function<size_t(int step, double t)> denoiser_index;
  size_t denoiser_count = 1;
  // CFG parallelism (nn/parallel_cfg.h): with a group of 2 ranks, rank 0 predicts for the
  // prompt, rank 1 for the negative prompt, and one exchange per step gives both to both.
  dist::Communicator* cfg_group = nullptr;
  // Where the denoiser ran and what it cost there (e.g. --device pjrt: the plugin, compiles,
  // compile-cache hits, recompilations), for the run's record; empty on the CPU backend.
  std::function<std::string()> device_report;  // one line for the log
  std::function<nlohmann::json()> device_json; // the same as a JSON object
  // A family whose run is not the loop's (several latent streams, an audio output: LTX-2's
  // audio-video models) owns the whole run: run_generation checks the request against `geometry`
  // and the images / control inputs against this struct, then calls `run` instead of its own steps.
  // `run` reports as the loop does (Events: stages, each step, cancellation, warnings), fills
  // Result (latents, the video in [-1, 1] when `decode`, Result::audio for a model with audio, the
  // step count in timesteps, denoiser_calls) and refuses what it does not take, naming the option.
  // Optional: unset = the loop runs encode_prompt / predict / decode.
  using Run = std::function<Result(const Request& request, const Events& events, bool decode)>;
  Run run;
};

}  // namespace vidax::pipeline
