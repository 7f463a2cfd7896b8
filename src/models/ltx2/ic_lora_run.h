// The LTX-2 family's IC-LoRA run (pipeline::Parts::run with Request::reference_videos): what
// ICLoraPipeline.__call__ (ltx_pipelines/ic_lora.py, Lightricks/LTX-2 400fd31) does with
// skip_stage_2=True, from the prompt string, the images and the reference videos to the decoded
// video (at half the requested size) and waveform, on the loaded model (t2v_run.h) whose DiT carries
// the IC-LoRA(s) of --lora:
//
//   1. the prompt alone through the PromptEncoder (stage 1 is unguided: no negative prompt);
//   2. the images (combined_image_conditionings at height / 2 x width / 2), then each reference
//      video (reference_video.h): its frames taken from the first, at most --frames of them (no
//      frame-rate resampling: the reference reads frames by index), resized and centre-cropped to
//      (height / 2) / s x (width / 2) / s with s the LoRAs' reference_downscale_factor, subsampled by
//      their reference_temporal_scale_factor, cropped to 1 + 8k frames, encoded by the video encoder;
//   3. denoise_ic_lora (ic_lora.h): DISTILLED_SIGMAS, SimpleDenoiser, the reference tokens appended
//      (attention strength --conditioning-attention-strength);
//   4. the video decode with the same generator and the audio decode, as t2v_run.h.
//
// `vidax generate --video FILE` (video-to-video) is this same run with FILE as the one reference video
// (the official video-to-video path is ICLoraPipeline). Refused by name: no --lora (the pipeline
// conditions through an IC-LoRA), no --skip-stage-2 (stage 2 is not built: STAGE2_HOOK below),
// heights / widths not multiples of 64 (the two-stage assert_resolution), --steps / --guidance other
// than the variant's defaults (the distilled table and the unguided denoiser take neither), --noise,
// --record / --replay, a checkpoint without the video encoder.
#pragma once
#include "models/ltx2/ic_lora.h"
#include "models/ltx2/t2v_run.h"
#include "pipeline/generate.h"

namespace vidax::ltx2 {

// The reference's request from vidax's: height / width / frames / fps / seed, skip_stage_2,
// conditioning_attention_strength; throws naming a refused option.
ICLoraRequest ic_lora_request(const Preset& preset, const pipeline::Request& q);

// The IC-LoRA factors of the model's current LoRAs (their safetensors metadata).
ReferenceScale model_reference_scale(const Model& m);

// Step 2's references: each Request::reference_videos entry encoded (warn: told about a frame rate
// other than the request's, fewer frames than --frames, the encoder's frame crop).
std::vector<ReferenceVideoConditioning> encode_reference_videos(const Model& m, const pipeline::Request& q,
                                                                const ICLoraRequest& r, const ReferenceScale& s,
                                                                const std::function<void(const std::string&)>& warn);

// The demo's IC-LoRA (vidax make-demo writes it beside the checkpoint as <variant>-ic-lora.safetensors,
// metadata reference_downscale_factor 1): ltx-trainer's file format (PEFT's lora_A [r, in] / lora_B
// [out, r] under diffusion_model.<module>, no alpha) on every attention's to_q / to_k / to_v / to_out.0
// of the bundled checkpoint's DiT (model.diffusion_model.*), random (torch's generator seeded `seed`),
// rank 2.
std::map<std::string, Tensor> demo_ic_lora(const std::map<std::string, Tensor>& checkpoint, uint64_t seed);

// STAGE2_HOOK: the two-stage pipeline's upsample + refine takes stage 1's latents here once it is
// built (ICLoraPipeline.__call__ after `if skip_stage_2`); until then check_ic_lora_request refuses a
// request without skip_stage_2.
pipeline::Result run_ic_lora(const Model& m, const pipeline::Request& q, const pipeline::Events& ev, bool decode);

}  // namespace vidax::ltx2
