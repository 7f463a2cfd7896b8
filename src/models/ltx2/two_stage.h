// The LTX-2 two-stage pipelines from the prompt contexts on (Lightricks/LTX-2 400fd31,
// ltx_pipelines/ti2vid_two_stages.py TI2VidTwoStagesPipeline.__call__ and distilled.py
// DistilledPipeline.__call__; the stages are utils/blocks.py DiffusionStage, the upsampler
// VideoUpsampler):
//
//   stage 1  at height / 2 x width / 2 (integer halves), the full frame count and rate, the images
//            encoded at that size (the caller's stage1_images):
//              TwoStage:  the one-stage guided denoise (LTX2Scheduler(steps), FactoryGuidedDenoiser)
//              Distilled: DISTILLED_SIGMAS, SimpleDenoiser (no guidance)
//   upsample upsample_video(stage-1 video latent): the VAE's per-channel statistics un-normalize,
//            the LatentUpsampler, normalize (upsampler.h)
//   stage 2  at full size, STAGE_2_DISTILLED_SIGMAS, SimpleDenoiser, the images encoded at full size
//            (stage2_images); video initial_latent = the upsampled latent, audio initial_latent = the
//            stage-1 audio latent, both with noise_scale = the table's first sigma (t2v.h StageOptions);
//              TwoStage:  the stage-1 DiT with the distilled LoRA (stage2_lora) patched in as runtime
//                         adapters for the stage and out again after it (StageLora: one DiT, no copy)
//              Distilled: the same DiT as stage 1, no LoRA
//   result   video = stage 2's; audio = stage 1's (TwoStage: "Stage 2 refines video only; discard its
//            audio") or stage 2's (Distilled)
// One torch generator runs through: stage 1's video then audio noise, stage 2's video then audio
// noise; the caller's decode continues it (decode_video with the same generator).
// Not built: the ancestral stage-1 sampler DistilledPipeline uses for model_version >= 2.5 (LTX-2.3
// checkpoints are 2.3: the deterministic Euler loop), generated keyframes, max_batch_size.
#pragma once
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "models/ltx2/dit.h"
#include "models/ltx2/t2v.h"
#include "models/ltx2/upsampler.h"
#include "models/ltx2/video_vae_blocks.h"
#include "nn/params.h"
#include "translate/lora.h"
#include "translate/source.h"

namespace vidax::ltx2 {

enum class TwoStageKind { TwoStage, Distilled };  // TI2VidTwoStagesPipeline / DistilledPipeline
const char* two_stage_kind_name(TwoStageKind k);     // "two-stage" / "distilled"

// assert_resolution(is_two_stage=True): height and width multiples of 64; then the frame rule and the
// rest of check_t2v_request. Throws naming the nearest valid values.
void check_two_stage_request(const T2VRequest& r);

// The stage-1 request: height // 2, width // 2, everything else as r.
T2VRequest stage1_request(const T2VRequest& r);

// A LoRA file as runtime adapters for the DiT's Linears: planned against the DiT component for
// `dit_config` (dit_config_json), checked strictly (unmatched keys, shapes), scaled by lora.scale
// (ltx-core's W + strength * B @ A; alpha / rank only where the file stores an alpha). `dit_params`:
// the DiT's parameters by engine name (the base weights: only their shapes are read). Throws naming
// the parameters a LoRA changes that are not a Linear's weight (norms, biases, tables: an in-place
// patch of those is not built) and, with `linear_names`, those no Linear of the model reads.
nn::Adapters lora_as_adapters(const std::map<std::string, Tensor>& dit_params, const translate::Json& dit_config,
                              const translate::LoraSpec& lora, const std::vector<std::string>& linear_names);
// The same for a LoRA already open (a file, or tensors held in memory: a golden's distilled_lora.*).
nn::Adapters lora_as_adapters(const std::map<std::string, Tensor>& dit_params, const translate::Json& dit_config,
                              const translate::TensorSource& lora, double strength,
                              const std::vector<std::string>& linear_names);

// The weight names of every Linear of `dit` (LTXModel::for_each_linear).
std::vector<std::string> linear_weight_names(LTXModel& dit);

// The stage-2 DiT: `adapters` appended to the Linears of `dit` they name for the object's life,
// removed on destruction (the model as it was, adapter lists and weights untouched). Throws (patching
// nothing) when an adapter names no Linear or does not fit its [out, in].
class StageLora {
 public:
  StageLora(LTXModel& dit, const nn::Adapters& adapters);
  ~StageLora();
  StageLora(const StageLora&) = delete;
  StageLora& operator=(const StageLora&) = delete;
  size_t patched() const { return sizes_.size(); }  // Linears that carry an adapter of this LoRA

 private:
  LTXModel& dit_;
  std::map<std::string, size_t> sizes_;  // weight name -> its adapter count before the patch
};

struct TwoStageParts {
  LTXModel* dit = nullptr;                         // both stages' DiT
  const nn::Adapters* stage2_lora = nullptr;       // TwoStage: the distilled LoRA (required); Distilled: none
  const LatentUpsampler* upsampler = nullptr;      // the spatial x2 upsampler
  const vae::PerChannelStatistics* stats = nullptr;  // the video VAE's per_channel_statistics
};

struct TwoStageLatents {
  T2VLatents stage1, stage2;  // each stage's run (stage2.video is the final video latent)
  Tensor upsampled;           // upsample_video(stage-1 video) [1, 128, F', 2 h, 2 w]
  Tensor video, audio;        // the pipeline's final latents (see the file comment for the audio)
};

// The pipeline of `kind` on the full-size request r (check_two_stage_request). after_step counts the
// steps of both stages (total = stage-1 steps + stage-2 steps).
TwoStageLatents denoise_two_stage(const TwoStageParts& parts, TwoStageKind kind, const T2VRequest& r,
                                  const PromptContexts& contexts, TorchGenerator& gen,
                                  const std::vector<ImageConditioning>& stage1_images = {},
                                  const std::vector<ImageConditioning>& stage2_images = {}, bool keep_steps = false,
                                  const AfterStep& after_step = {});

// The sigma tables: stage 1 of Distilled (DISTILLED_SIGMAS) and stage 2 of both
// (STAGE_2_DISTILLED_SIGMAS), sched.ltx2's "distilled" and "distilled_stage2".
std::vector<float> distilled_stage1_sigmas();
std::vector<float> stage2_sigmas();

// A spatial upsampler file as Lightricks publish it (ltx-2.3-spatial-upscaler-x2-*.safetensors): the
// LatentUpsampler's parameters under the official names and __metadata__.config its
// LatentUpsamplerConfigurator config (JSON); strict. Throws naming the file.
std::shared_ptr<const LatentUpsampler> load_upsampler_file(const std::string& path);

// The video VAE's per_channel_statistics from `params` (names per_channel_statistics.*; the
// checkpoint's unused statistics buffers are skipped). Throws naming `origin` when one is missing.
vae::PerChannelStatistics latent_statistics(const std::map<std::string, Tensor>& params, const std::string& origin);

// Kinds ltx2.pipeline.two_stage and ltx2.pipeline.distilled (docs/parity.md).
void register_two_stage_parity_kinds();

}  // namespace vidax::ltx2
