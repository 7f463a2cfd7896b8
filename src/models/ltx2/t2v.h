// The LTX-2 one-stage text-to-video+audio denoising (official ltx_pipelines TI2VidOneStagePipeline.
// __call__ with images=[], Lightricks/LTX-2 400fd31): from the prompt contexts to the final video and
// audio latents, as DiffusionStage.__call__ with FactoryGuidedDenoiser (constant guider params) and
// euler_denoising_loop run it.
//
//   sigmas   = LTX2Scheduler.execute(steps) (the default 4096 tokens: no latent is passed)
//   video    = [1, 128, (F - 1) / 8 + 1, H / 32, W / 32] (VideoLatentShape.from_pixel_shape)
//   audio    = [1, 8, round(F / fps * 25), 16] (AudioLatentShape.from_video_pixel_shape: 16 kHz, hop
//              160, x4 latent downsampling; Python's round, half to even)
//   noise    = one torch.Generator(seed): randn of the patchified video state [1, T_v, 128] first
//              (tokens (f, h, w), channels last), then the audio's [1, T_a, 8 * 16] ((c, mel) last)
//   per step = the guided denoiser (guidance.h: the passes batched into one DiT call, X0 = latent -
//              velocity * sigma, each stream's guider), then ltx2_euler_step on each stream
//   result   = the states unpatchified (video [1, 128, F', h, w], audio [1, 8, T, 16])
// The generator is the caller's and is left after the last draw: the pipeline decodes the video with
// the same generator (a conditioned VAE decoder continues it).
// With images (conditioning.h, the pipeline's images=[...]): the video state is built and noised as
// create_noised_state does (the noise drawn over every token, appended keyframe tokens included),
// each step runs the DiT with per-token timesteps and blends the clean latent back
// (post_process_latent), and the appended tokens are dropped before the unpatchify.
#pragma once
#include <cstdint>
#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "models/ltx2/conditioning.h"
#include "models/ltx2/dit.h"
#include "models/ltx2/guidance.h"

namespace vidax::ltx2 {

struct T2VRequest {  // __call__'s arguments
  int64_t height = 0, width = 0, num_frames = 0;
  double frame_rate = 0;
  int64_t num_inference_steps = 0;
  uint64_t seed = 0;
  GuiderParams video_guider, audio_guider;  // video_guider_params / audio_guider_params

  // Those names (the guiders as MultiModalGuiderParams objects); every field required but the
  // guiders' own defaults; other keys are not read (the pipeline kind's config holds more).
  static T2VRequest from_json(const nlohmann::json& j);
};

// assert_resolution (one stage: height and width multiples of 32) and the VAE's frame rule
// (num_frames = 8k + 1; the reference only documents it and floors another count), the frame rate
// and the step count: throws naming the nearest valid values.
void check_t2v_request(const T2VRequest& r);

struct LatentGrid {
  int64_t video_frames = 0, video_height = 0, video_width = 0;  // the video latent's F', h, w
  int64_t audio_frames = 0;                                     // the audio latent's T
  int64_t video_tokens() const { return video_frames * video_height * video_width; }
};
LatentGrid latent_grid(const T2VRequest& r);

// The prompt encoder's output, each [1, L, D] F32: the video / audio contexts of the positive
// (_p) and negative (_n) prompt (the connectors' output; the pipeline passes no text mask). A
// negative context may be left undefined when its stream's guider has cfg_scale 1.
struct PromptContexts {
  Tensor v_context_p, a_context_p, v_context_n, a_context_n;
};

struct DenoiseStep {  // after step i, patchified: [1, T, 128] (video: every token, appended ones included)
  Tensor video, audio, video_denoised, audio_denoised;  // *_denoised: what the Euler step took
  Tensor video_cond, audio_cond;  // the conditioned pass's x0 (undefined when both guiders skip the step)
};

struct T2VLatents {
  Tensor video, audio;  // [1, 128, F', h, w], [1, 8, T, 16] F32
  std::vector<float> sigmas;
  Tensor video_noise, audio_noise;  // the initial patchified states
  std::vector<DenoiseStep> steps;   // filled when asked
  VideoLatentState video_state;     // with images: the conditioned state before the noiser (else empty)
};

// The denoising of TI2VidOneStagePipeline.__call__ on an audio-video model whose streams take the
// pipeline's fixed 128 latent channels. gen: torch.Generator().manual_seed(r.seed) (drawn from here).
// images: the encoded image conditionings, in the order the pipeline applies them (empty: t2v).
// after_step (optional): called after each step with (steps done, total steps), the latents updated
// (a caller's progress and cancellation point: what it throws ends the run).
// hooks (optional; record and replay, pipeline/record.h): `noise` sees each initial draw as it is
// made ("video" [1, T_v, 128], then "audio" [1, T_a, 128]) and returns the tensor the run uses
// (the video's before the conditioning noiser); `step` sees the patchified states after each step
// (1-based) and its sigma.
using AfterStep = std::function<void(int64_t done, int64_t total)>;
struct DenoiseHooks {
  std::function<Tensor(const std::string& stream, const Tensor& drawn)> noise;
  std::function<void(int64_t step, float sigma, const Tensor& video, const Tensor& audio)> step;
};
T2VLatents denoise_t2v(const LTXModel& model, const T2VRequest& r, const PromptContexts& contexts, TorchGenerator& gen,
                       bool keep_steps = false, const std::vector<ImageConditioning>& images = {},
                       const AfterStep& after_step = {}, const DenoiseHooks& hooks = {});

// The video target of a request (latent_grid's video part, 128 channels, the frame count and rate).
VideoTarget video_target(const T2VRequest& r);

}  // namespace vidax::ltx2
