// The LTX-2 IC-LoRA pipeline (official ltx_pipelines ICLoraPipeline.__call__, Lightricks/LTX-2 400fd31)
// with skip_stage_2=True, from the prompt's contexts and the encoded conditionings on: stage 1 at half
// the requested size, as DiffusionStage.__call__ with SimpleDenoiser and euler_denoising_loop run it.
//
//   request  = assert_resolution(is_two_stage=True): height and width multiples of 64; the VAE's 8k + 1
//              frames; conditioning_attention_strength in [0, 1]
//   stage 1  = VideoPixelShape(frames, height / 2, width / 2, fps): the video state built by
//              combined_image_conditionings (conditioning.h) then the reference videos appended
//              (reference_video.h), noised by one torch.Generator(seed): the video's randn over
//              every token first, then the audio's
//   sigmas   = DISTILLED_SIGMAS (8 steps) unless given
//   per step = SimpleDenoiser: ONE DiT call with the positive contexts (no guidance), the video's
//              timesteps denoise_mask * sigma per token, its attention mask when a reference built
//              one; X0 = latent - velocity * timesteps; post_process_latent; EulerDiffusionStep
//   result   = clear_conditioning (the appended tokens dropped), unpatchified; the caller decodes
//              with the same generator at height / 2 x width / 2
// Stage 2 (the spatial upsampler and the distilled refinement at the full size) is not built here:
// a request without skip_stage_2 is refused naming it (stage_2 below is the hook the two-stage
// pipeline fills).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/rng.h"
#include "core/tensor.h"
#include "models/ltx2/conditioning.h"
#include "models/ltx2/dit.h"
#include "models/ltx2/reference_video.h"
#include "models/ltx2/t2v.h"

namespace vidax::ltx2 {

struct ICLoraRequest {  // __call__'s arguments
  int64_t height = 0, width = 0, num_frames = 0;  // the FULL target (stage 1 runs at half of it)
  double frame_rate = 0;
  uint64_t seed = 0;
  double conditioning_attention_strength = 1.0;
  bool skip_stage_2 = false;
  std::vector<float> stage_1_sigmas;  // empty: DISTILLED_SIGMAS

  // Those names; height, width, num_frames, frame_rate, seed required; skip_stage_2,
  // conditioning_attention_strength, stage_1_sigmas optional (the reference's defaults).
  static ICLoraRequest from_json(const nlohmann::json& j);
};

// assert_resolution(is_two_stage=True) (multiples of 64, nearest valid values named), the frame rule,
// the frame rate, the attention strength, and skip_stage_2 (stage 2 is not built: refused by name).
void check_ic_lora_request(const ICLoraRequest& r);

// Stage 1's request as the shared helpers take it (height / 2, width / 2; the step count of the sigmas).
T2VRequest stage_1_request(const ICLoraRequest& r);

struct ICLoraLatents {
  Tensor video, audio;  // [1, 128, F', H/64, W/64], [1, 8, T, 16] F32 (stage 1's)
  std::vector<float> sigmas;
  Tensor video_noise, audio_noise;  // the initial patchified states (video: every token)
  std::vector<DenoiseStep> steps;   // filled when asked (video_cond / audio_cond left undefined)
  VideoLatentState video_state;     // the conditioned state before the noiser
};

// Stage 1 of ICLoraPipeline.__call__ on an audio-video model whose streams take 128 latent channels.
// images: combined_image_conditionings at the stage-1 size; references: the encoded reference videos
// (their latents at (H / 2) / scale x (W / 2) / scale), in the order given. gen: the pipeline's
// torch.Generator(seed). v_context / a_context: the positive prompt's [1, L, D] contexts.
ICLoraLatents denoise_ic_lora(const LTXModel& model, const ICLoraRequest& r, const Tensor& v_context,
                              const Tensor& a_context, TorchGenerator& gen, bool keep_steps,
                              const std::vector<ImageConditioning>& images,
                              const std::vector<ReferenceVideoConditioning>& references,
                              const AfterStep& after_step = {});

}  // namespace vidax::ltx2
