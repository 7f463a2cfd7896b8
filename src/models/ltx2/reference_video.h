// LTX-2 IC-LoRA reference-video conditioning as ICLoraPipeline runs it (Lightricks/LTX-2 400fd31):
// ltx_pipelines/iclora_utils.py (read_lora_reference_downscale_factor / _temporal_scale_factor,
// temporal_subsample, append_ic_lora_reference_video_conditionings), the frames' preprocessing
// (media_io video_preprocess: resize_and_center_crop + normalize_images per frame), ltx_core
// conditioning/types/reference_video_cond.py (VideoConditionByReferenceLatent) and
// attention_strength_wrapper.py + mask_utils.py (ConditioningItemAttentionStrengthWrapper,
// update_attention_mask, build_attention_mask).
//
//   factors  = the LoRAs' safetensors metadata "reference_downscale_factor" /
//              "reference_temporal_scale_factor" (default 1; two LoRAs that disagree: an error)
//   frames   = the reference file decoded frame by frame from frame 0, at most num_frames
//              (decode_video_by_frame(frame_cap=num_frames): no frame-rate resampling, the file's
//              own frames by index; fewer frames are taken as they are)
//   video    = each frame resize_and_center_crop to (H / scale) x (W / scale) (H x W: the stage-1
//              target; both must divide by the scale), x / 127.5 - 1 -> [1, 3, F, H/s, W/s];
//              temporal scale S > 1: frames 0, 1, 1 + S, 1 + 2S, ... (temporal_subsample)
//   latent   = VideoEncoder(video): the encoder crops a count that is not 1 + 8k to the one below
//              (with a warning, as the reference's encoder) -> [1, C, F_r, h_r, w_r]
//   append   = tokens b (f h w) c appended: latent zeros, clean = the reference, denoise mask
//              1 - strength, keyframes marker 0; positions get_pixel_coords(causal fix) of the
//              reference grid in fp32, the frame axis / (fps / S), with S != 1 then minus
//              (S - 1) * (the first target token's end time) clamped at 0, the height / width axes
//              x scale
//   attention = with an attention strength a < 1 (ICLoraPipeline's conditioning_attention_strength;
//              1: no mask) the state's [1, T + M, T + M] mask: the existing one (or ones) top left,
//              ones among the new tokens, a between the target's noisy tokens and the new ones, 0
//              between the new tokens and earlier appended ones; with no strength but an existing
//              mask, the same with a = 1
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/ltx2/conditioning.h"

namespace vidax::ltx2 {

// VideoConditionByReferenceLatent (+ its ConditioningItemAttentionStrengthWrapper) once encoded.
struct ReferenceVideoConditioning {
  Tensor latent;                     // [1, C, F_r, h_r, w_r] F32: VideoEncoder's output
  int64_t downscale_factor = 1;      // target / reference spatial ratio
  int64_t temporal_scale_factor = 1;  // target / reference temporal ratio
  double strength = 1.0;             // 1: the reference kept clean; 0: denoised (mask 1 - strength)
  // The wrapper's attention_mask: undefined = no wrapper; else [M] F32 per reference token in [0, 1]
  // (a scalar strength is M copies: reference_attention).
  Tensor attention;
};

// The IC-LoRA scale factors of the given LoRA files' metadata (ICLoraPipeline.__init__).
struct ReferenceScale {
  int64_t downscale = 1, temporal = 1;
};
// metadata: each LoRA's safetensors __metadata__ with its file name (for messages). Throws on a
// value that is not a positive integer, and on two LoRAs with different factors (as the reference).
ReferenceScale reference_scale(const std::vector<std::pair<std::string, std::map<std::string, std::string>>>& metadata);

// append_ic_lora_reference_video_conditionings' size: (height / scale, width / scale); throws when
// either does not divide (the reference's ValueError).
void reference_size(int64_t height, int64_t width, int64_t scale, int64_t* ref_height, int64_t* ref_width);

// video_preprocess: each decoded frame [h, w, 3] F32 (0..255) -> preprocess_image -> joined on the
// frame axis: [1, 3, F, height, width]. Throws on no frames.
Tensor preprocess_video(const std::vector<Tensor>& frames, int64_t height, int64_t width);

// temporal_subsample: frames 0, then 1, 1 + S, 1 + 2S, ... of [1, 3, F, H, W].
Tensor temporal_subsample(const Tensor& video, int64_t factor);

// The reference video as the encoder takes it: the decoded frames [F, h, w, 3] F32 (0..255), the
// first min(F, num_frames) of them (decode_video_by_frame's frame cap), preprocess_video to
// ref_height x ref_width, temporal_subsample(temporal): [1, 3, F_s, ref_height, ref_width].
Tensor reference_video_input(const Tensor& frames, int64_t num_frames, int64_t ref_height, int64_t ref_width,
                             int64_t temporal);

// A video as vidax's readers hold it ([3, F, H, W] F32 = v / 127.5 - 1 of the decoded 8-bit RGB)
// back to its frames [F, H, W, 3] of 8-bit values.
Tensor video_frames_of(const Tensor& video);

// The reference VideoEncoder's frame crop: a count F that is not 1 + t k loses its last (F - 1) % t
// frames (`warn` is told, as the reference logs a warning).
Tensor crop_to_encoder_frames(const Tensor& video, int64_t time_factor,
                              const std::function<void(const std::string&)>& warn = {});

// The wrapper's attention mask for ICLoraPipeline's conditioning_attention_strength a without a
// pixel mask: a < 1 -> M copies of a; 1 -> undefined (no wrapper). Throws outside [0, 1].
Tensor reference_attention(double strength, int64_t tokens);

// downsample_mask_video_to_latent: a pixel-space mask [1, 1, F, H, W] -> [M] token weights of the
// latent grid (frames, height, width): area-interpolated per frame, the first frame alone, the rest
// averaged in groups of (F - 1) / (frames - 1) (which must divide). Multiply by the strength after.
Tensor downsample_mask_to_latent(const Tensor& mask, int64_t frames, int64_t height, int64_t width);

// Throws naming the value when c does not fit (strength outside [0, 1], factors < 1, a latent that
// is not [1, t.channels, F, h, w] F32, an attention of another length or outside [0, 1]).
void check_reference_conditioning(const ReferenceVideoConditioning& c, const VideoTarget& t, size_t index);

// VideoConditionByReferenceLatent.apply_to (wrapped when c.attention is defined) on `s`, whose
// target is `t` (s built by conditioned_video_state: s.target_tokens are the noisy tokens).
void append_reference_video(VideoLatentState& s, const VideoTarget& t, const ReferenceVideoConditioning& c,
                            size_t index = 0);

}  // namespace vidax::ltx2
