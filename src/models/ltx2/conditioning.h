// LTX-2 image conditioning as TI2VidOneStagePipeline.__call__ runs it (Lightricks/LTX-2 400fd31):
// ltx_pipelines/utils/helpers.py combined_image_conditionings, create_noised_state, post_process_latent,
// timesteps_from_mask; ltx_core/conditioning/types latent_cond.py (VideoConditionByLatentIndex) and
// keyframe_cond.py (VideoConditionByKeyframeIndex); ltx_core/tools.py VideoLatentTools; the image
// preprocessing of ltx_pipelines/utils/media_io (resize_and_center_crop, normalize_images).
//
//   image    = the decoded RGB picture [h, w, 3] (8-bit values as float), after the CRF step (crf 0:
//              none; the H.264 re-compression of crf > 0 is not built) -> resize_and_center_crop to the
//              video's H x W (scale = max(H / h, W / w), sizes ceil(h * scale) x ceil(w * scale),
//              bilinear, align_corners False; the centre window, offsets (new - target) // 2) ->
//              x / 127.5 - 1 -> [1, 3, 1, H, W] -> VideoEncoder -> latent [1, C, 1, H/32, W/32]
//   state    = VideoLatentTools.create_initial_state (zero latent and clean latent, denoise mask 1,
//              positions as rope.h's video_positions, the first latent frame's tokens keyframe-marked),
//              then each image in order:
//     frame_idx 0 : VideoConditionByLatentIndex(latent_idx 0): the first latent frame's clean tokens
//                   are the image's, their denoise mask 1 - strength (later ones overwrite earlier ones)
//     frame_idx k : VideoConditionByKeyframeIndex: the image's tokens appended (latent 0, clean = the
//                   image, mask 1 - strength, not keyframe-marked), positions the image's pixel
//                   bounds with the frame axis [k, k + 1) / fps (no causal fix; a one-pixel-frame
//                   latent); no attention mask (none is built without an attention strength)
//   noise    = GaussianNoiser: latent = lerp(clean, noise, denoise_mask) (torch's vectorized lerp)
//   per step = the DiT's timesteps denoise_mask * sigma per token, X0 = latent - velocity * timesteps,
//              the guided x0 blended back as post_process_latent (x0 * mask + clean * (1 - mask)) before
//              the Euler step
//   result   = clear_conditioning: the first F' h w tokens (the appended ones dropped)
#pragma once
#include <cstdint>
#include <vector>

#include "core/tensor.h"
#include "models/ltx2/rope.h"

namespace vidax::ltx2 {

// ImageConditioningInput once its image is encoded.
struct ImageConditioning {
  Tensor latent;          // [1, C, 1, h, w] F32: VideoEncoder's output for the preprocessed image
  int64_t frame_idx = 0;  // the pixel frame it conditions: 0 replaces the first latent frame, others append
  double strength = 1.0;  // 1: kept as given; 0: denoised freely (denoise mask 1 - strength)
};

// load_image_and_preprocess after the decode and CRF step: rgb [h, w, 3] F32 (0..255) ->
// [1, 3, 1, height, width] F32 in [-1, 1]. Throws on another rank / channel count or a size < 1.
Tensor preprocess_image(const Tensor& rgb, int64_t height, int64_t width);

// The video latent's target grid (F', h, w, channels) and the pixel clip it stands for.
struct VideoTarget {
  int64_t frames = 0, height = 0, width = 0, channels = 0;  // latent grid
  int64_t num_frames = 0;                                   // pixel frames (frame indices < num_frames)
  double fps = 0;
  int64_t tokens() const { return frames * height * width; }
};

// Throws naming the value when an image does not fit `t`: frame_idx outside [0, num_frames),
// strength outside [0, 1], a latent that is not [1, channels, 1, height, width] F32.
void check_image_conditioning(const ImageConditioning& c, const VideoTarget& t, size_t index);

// LatentState of the video stream, patchified: T = target tokens + appended keyframe tokens.
struct VideoLatentState {
  Tensor latent, clean_latent;         // [1, T, C] F32
  Tensor denoise_mask, keyframes_mask;  // [1, T, 1] F32
  Positions positions;                  // 3 axes x T
  // LatentState.attention_mask: [1, T, T] F32 in [0, 1] once a conditioning item builds one
  // (reference_video.h: an IC-LoRA reference with an attention strength); undefined = full attention.
  Tensor attention_mask;
  int64_t target_tokens = 0;            // F' h w: the tokens clear_conditioning keeps
  int64_t tokens() const { return positions.tokens; }
};

// create_initial_state + the conditionings in order (the state before the noiser; latent zeros).
VideoLatentState conditioned_video_state(const VideoTarget& t, const std::vector<ImageConditioning>& images);

// GaussianNoiser(noise_scale 1): s.latent = lerp(s.clean_latent, noise, s.denoise_mask); noise [1, T, C].
void add_noise(VideoLatentState& s, const Tensor& noise);

// timesteps_from_mask(denoise_mask, sigma) for `batch` repeated samples: [batch, T, 1] F32.
Tensor timesteps_from_mask(const Tensor& denoise_mask, float sigma, int64_t batch);

// to_denoised with per-token timesteps: sample [B, T, C] - velocity [B, T, C] * timesteps [B, T, 1].
Tensor to_denoised_tokens(const Tensor& sample, const Tensor& velocity, const Tensor& timesteps);

// post_process_latent: denoised [1, T, C] * mask [1, T, 1] + clean [1, T, C] * (1 - mask).
Tensor post_process_latent(const Tensor& denoised, const Tensor& denoise_mask, const Tensor& clean);

}  // namespace vidax::ltx2
