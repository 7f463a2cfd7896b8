// The generic text-to-video loop every family runs (what the references'
// generate() / diffusers pipelines' __call__ do):
//   1. encode the prompt and, when guidance needs it, the negative prompt (the
//      family's default when empty) once;
//   2. draw noise [z_dim, (F-1)/stride_t+1, H/stride_s, W/stride_s] float32 with
//      the seeded generator (torch's CPU generator, bit for bit), or take it
//      from a file;
//   3. per sampler step: the guidance strategy's passes of the denoiser
//      (guidance.h), converted to the sampler's flow velocity (prediction.h),
//      then x = sampler.step(v);
//   4. decode the final latent (clamped to [-1, 1]).
// The family's parts come in as callables (parts.h), so the loop is the same
// for real checkpoints, the tiny demo and tests; src/models/<family>/ builds them.
#pragma once
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"
#include "pipeline/parts.h"

namespace vidax::pipeline {

// An image conditioning one pixel frame of the video with a strength (Request::key_images).
struct KeyImage {
  Tensor image;          // [3, H, W] F32 in [-1, 1], the file's own size (as Request::image)
  int64_t frame = 0;     // the pixel frame it conditions
  double strength = 1.0;  // 1: kept as given; 0: denoised freely
};

// A reference video conditioning the whole clip (Request::reference_videos: `vidax generate
// --reference-video FILE`, `--video-conditioning FILE S`, `--video FILE`; LTX-2's IC-LoRA pipeline).
struct ReferenceVideo {
  Tensor video;           // [3, F, H, W] F32 in [-1, 1]: the file's frames at its own size (the family resizes)
  double strength = 1.0;  // 1: kept clean; 0: denoised freely
  double fps = 0;         // the file's frame rate (the family says what another rate does)
  std::string path;       // for messages
};

struct Request {
  std::string prompt;
  std::string negative_prompt;  // "" = default_negative_prompt (as the references)
  std::string default_negative_prompt;
  int64_t frames = 81, height = 480, width = 832;
  int64_t steps = 50;
  uint64_t seed = 0;
  double guidance = 5.0;
  // One guidance scale per denoiser (Parts::denoiser_index), in the family's order (Wan 2.2 A14B:
  // [low-noise, high-noise], the order of the reference's guide_scale tuple); empty = `guidance`
  // on every step (the reference's single float). The variant's Defaults::guidance_scales fill it
  // when the user gives no --guidance.
  std::vector<double> guidance_scales;
  // Truncated CFG (classifier-free families): guidance on steps [from, to) only; to < 0 = all.
  int64_t cfg_from_step = 0, cfg_to_step = -1;
  // Embedded-guidance families (HunyuanVideo): a classifier-free scale on top of the embedded
  // `guidance` (the reference's --cfg-scale); 1 = one pass per step. Others refuse any other value.
  double cfg_scale = 1.0;
  double shift = 5.0;
  std::string sampler = "unipc";
  Tensor noise;  // defined = use it (shape of latent_shape()) instead of drawing from the seed
  // Conditioning images of image-to-video tasks, as decoded from the user's files: [3, H, W] F32
  // in [-1, 1] at the file's own size (the family resizes and crops as its reference does).
  // Undefined = none given. A family whose task takes no image refuses one (request_check).
  Tensor image;       // --image: the first frame
  Tensor last_image;  // --last-image: the last frame (first-last-frame tasks; needs image)
  // Images at chosen pixel frames, each with a strength (--image FILE [--image-frame N]
  // [--image-strength S], repeatable), for a variant that takes them (Variant::key_images; the
  // loaded model: Parts::takes_key_images), in the order given: decoded as `image` is. Others
  // refuse them, naming the options.
  std::vector<KeyImage> key_images;
  // Control-video models (VACE, Parts::condition_on_control), as ControlInputs describes them:
  // --control-video (and its frame rate), --mask-video (needs the control video, whose frames and
  // size it must have), --reference-image (any number), --control-scale. A family without control
  // inputs refuses them (request_check).
  Tensor control_video, control_mask;
  double control_fps = 0;
  std::vector<Tensor> reference_images;
  double control_scale = 1.0;
  bool has_control() const { return control_video.defined() || control_mask.defined() || !reference_images.empty(); }
  // Reference videos for an in-context LoRA (video-to-video), in the order given, for a variant that
  // takes them (Variant::reference_videos; the loaded model: Parts::takes_reference_videos); with
  // the attention strength between them and the generated tokens (--conditioning-attention-strength,
  // 0..1) and --skip-stage-2 (a two-stage pipeline stops after its first stage). Others refuse them.
  std::vector<ReferenceVideo> reference_videos;
  double conditioning_attention_strength = 1.0;
  bool skip_stage_2 = false;
  // Where the denoiser's weights live (--offload, --max-memory): streamed per block instead of
  // resident. The family's memory plan reads it; the loader gets it as LoadOptions::offload.
  bool offload = false;
  // A server keeps the text encoder and the denoiser loaded between requests; a one-shot run
  // frees the text encoder after encoding and the denoiser before decoding (residency.h). The
  // memory plan's phases follow.
  bool keep_loaded = false;
  // --vae-tile: the VAE decodes in spatial tiles of this many pixels (with overlap, blended);
  // 0 = whole frames. The memory plan counts the tile, not the frame.
  int64_t vae_tile = 0;
  // The video's frame rate (--fps): a family whose model takes it (LTX-2: the video's RoPE positions
  // and the audio's length) reads it; the loop does not. 0 = the variant's default.
  double fps = 0;
  // false: a model that makes audio leaves it undecoded (--no-audio without --audio-output: the
  // audio would be dropped). The loop does not read it; a family with an audio decoder does.
  bool decode_audio = true;
  // --two-stage: the model's two-stage pipeline (stage 1 at half size, a latent upsampler, a refining
  // stage 2), for a model that has one (Parts::two_stage); refused by the others.
  bool two_stage = false;
};

// Named tensors in a run's order (one per latent stream: Events::on_stream_latents).
using StreamTensors = std::vector<std::pair<std::string, Tensor>>;

struct Events {
  std::function<void(const std::string& stage)> on_stage;            // "encoding the prompts", ...
  std::function<void(int done, int total, double seconds)> on_step;  // after each denoising step
  // After each unit of the decode the family counts (the Wan VAE: each latent frame chunk).
  std::function<void(int done, int total, double seconds)> on_decode;
  std::function<void(const std::string& message)> warn;              // e.g. a truncated prompt
  // Asked at every point where Ctrl-C is (after the prompts, after each denoising step, after
  // decoding): true stops the run with Cancelled. A server cancels one job this way without
  // touching the process-wide interrupt flag.
  std::function<bool()> cancelled;
  // Record and replay (pipeline/record.h), all optional. on_noise: each noise tensor the run
  // uses, step 0 for the initial latent (drawn or Request::noise), step i (1-based) for a
  // re-noising sampler's draw during step i (lightx2v; euler's stochastic form).
  std::function<void(int step, const Tensor& noise)> on_noise;
  // The latent after denoising step `step` (1-based), once it is checked finite.
  std::function<void(int step, const Tensor& latent)> on_latent;
  // A re-noising sampler's draw at `step` replaced: a defined F32 tensor of `shape` is used
  // instead of the generator's; undefined = draw.
  std::function<Tensor(int step, const Shape& shape)> replace_noise;
  // Record and replay of a run with several latent streams (a family that owns its run,
  // Parts::run: LTX-2's "video" and "audio"), instead of on_noise / on_latent. on_stream_noise:
  // each initial draw as the run makes it, in its order (LTX-2: video, then audio, from one
  // generator); it returns the tensor the run uses (the draw itself, or a replay's recorded one).
  std::function<Tensor(const std::string& stream, const Tensor& drawn)> on_stream_noise;
  // Every stream's latent after denoising step `step` (1-based) at `timestep`, in the run's order.
  std::function<void(int step, double timestep, const StreamTensors& latents)> on_stream_latents;
  // Every stream's final latent (what its decoder takes), once the steps are done.
  std::function<void(const StreamTensors& latents)> on_stream_final;
};

// Thrown by run_generation when Events::cancelled says so; distinct from Interrupted (a signal)
// and from a failure, so a caller can tell "asked to stop" from "went wrong".
class Cancelled : public Error {
 public:
  using Error::Error;
};

struct Result {
  Tensor latents;  // [z_dim, F', h, w] F32, the sampler's final x0
  Tensor video;    // [3, F, H, W] in [-1, 1]; undefined when decode was skipped
  // The audio made with the video (Variant::audio): a [channels, samples] float waveform at
  // audio_sample_rate Hz, starting with the first frame; undefined for a model without audio.
  Tensor audio;
  int64_t audio_sample_rate = 0;
  std::vector<double> timesteps;
  std::map<std::string, Tensor> taps;  // the family's intermediates by golden name (ImageConditioning::taps)
  int64_t height = 0, width = 0;  // the video's size: the request's, or what its images gave (image-to-video)
  int64_t frames = 0;             // the video's frame count: the request's, or what its control video gave
  std::string negative_prompt;  // what was encoded ("" when guidance needed none)
  int64_t denoiser_calls = 0;   // forwards of the denoiser (CFG: 2 per guided step)
  // Per denoiser (Parts::denoiser_index): its forwards, and the steps it ran (0-based).
  std::vector<int64_t> denoiser_calls_by_index;
  std::vector<std::vector<int>> denoiser_steps;
  double seconds_images = 0, seconds_text = 0, seconds_denoise = 0, seconds_decode = 0;
};

// The most sampling steps a request may ask for: the flow samplers' schedules
// span num_train_timesteps = 1000 timesteps (sched/scheduler.h).
constexpr int64_t kMaxSteps = 1000;

// [z_dim, (F-1)/stride_t + 1, H/stride_s, W/stride_s], after validate_request.
Shape latent_shape(const Geometry& g, const Request& r);

// Throws a message naming the option, the value and what would be valid:
// frames not k*frame_multiple+1, height/width not multiples of the VAE stride
// times the patch, steps outside 1..kMaxSteps, non-finite guidance, shift <= 0, an unknown
// sampler, a noise tensor of the wrong shape.
void validate_request(const Geometry& g, const Request& r);

// The control inputs of a request among themselves (Request::control_*): a mask without a control
// video, a mask whose frame count or size differs from the video's, tensors of the wrong form.
void check_control_inputs(const Request& r);

// torch.manual_seed(seed); torch.randn(shape, dtype=float32) on the CPU generator.
Tensor draw_noise(uint64_t seed, const Shape& shape);

// A safetensors file holding the initial noise: the tensor named "noise" or
// "latents", else the file's only tensor; [z, F', h, w] or [1, z, F', h, w];
// converted to F32. Throws naming the file, the tensor and both shapes. An empty `expected` takes
// any [z, F', h, w] (an image-to-video request, whose images give the size: checked at the run).
Tensor read_noise_file(const std::string& path, const Shape& expected);

// The request a golden file's config names (prompt, negative_prompt, frames, height, width,
// steps, seed, guidance, shift, sampler; negative_prompt and sampler optional).
Request request_from_json(const nlohmann::json& c, const std::string& default_negative_prompt);

// Runs the whole request. Checks for Ctrl-C (pipeline::Interrupted) and Events::cancelled
// (pipeline::Cancelled) between steps
// and for NaN/Inf in the denoiser outputs and the latents after every step
// (vidax::Error naming the step). decode = false stops after denoising.
Result run_generation(const Parts& parts, const Request& request, const Events& events = {}, bool decode = true);

}  // namespace vidax::pipeline
