// HunyuanVideo 1.5 image-to-video as the generic pipeline runs it: the official
// HunyuanVideo_1_5_Pipeline.__call__ with a reference_image (task "i2v";
// hyvideo/pipelines/hunyuan_video_pipeline.py, Tencent-Hunyuan/HunyuanVideo-1.5 60783e7). The t2v
// parts (t2v.h: prompts, guidance, scheduler, decode) plus, once per run (Parts::condition_on_images):
//   size      get_closest_resolution_given_reference_image: the bucket of
//             generate_crop_size_list(base, 16) (hyvideo/utils/data_utils.py) whose rounded h/w is
//             closest to the picture's H/W (get_closest_ratio: the first on ties); the pipeline's base
//             is target_size_config[ideal_resolution] (480p: 640, 720p: 960). Here base =
//             I2VOptions::bucket_base, or sqrt(height * width) of the request (so a 640 x 640 request
//             is the 480p bucket list exactly: round((base / 16)^2) patches);
//   picture   the request's image as 8-bit RGB (round((x + 1) / 2 * 255), the picture PIL holds), then
//             LANCZOS-resized to cover the bucket (scale = max(w / W, h / H), sides rounded) and
//             centre-cropped (the offsets rounded half to even), as both get_image_condition_latents
//             (torchvision Resize + CenterCrop on the PIL image) and resize_and_center_crop do;
//   latent    get_image_condition_latents: to_tensor, Normalize(0.5, 0.5), vae.encode(...).mode() *
//             scaling_factor: [C, 1, h / 16, w / 16];
//   vision    _prepare_vision_states: the SigLIP encoder (siglip.h) on the cropped picture:
//             last_hidden_state [1, tokens, width], the same for the CFG batch's two halves;
//   predict   the DiT on [latent; cond latents (the image latent on the first latent frame, zeros
//             after); the mask channel (get_task_mask("i2v"): 1 on the first latent frame)], the
//             vision states and mask_type "i2v" (_prepare_cond_latents, the loop's DiT call).
// The first latent frame is denoised like the others (the reference keeps no frame fixed).
#pragma once
#include <array>
#include <cstdint>
#include <memory>

#include "models/hunyuan15/siglip.h"
#include "models/hunyuan15/t2v.h"

namespace vidax::hunyuan15 {

// generate_crop_size_list(base_size, patch_size, max_ratio=4.0): (first, second) pairs in the
// reference's order (the pipeline reads first as the height).
std::vector<std::array<int64_t, 2>> crop_size_list(double base_size, int64_t patch_size = 16, double max_ratio = 4.0);
// The bucket {height, width} of a picture of img_h x img_w pixels (get_closest_ratio over
// crop_size_list(base)). Throws when the list is empty (a base under one patch).
std::array<int64_t, 2> closest_bucket(int64_t img_h, int64_t img_w, double base_size, int64_t patch_size = 16);

// The [h, w, 3] U8 picture both of the pipeline's image paths take: image [3, H, W] F32 in [-1, 1]
// to 8-bit levels, LANCZOS-resized to cover h x w and centre-cropped. *note says what was done.
Tensor i2v_picture(const Tensor& image, int64_t h, int64_t w, std::string* note = nullptr);

struct I2VOptions {
  T2VOptions t2v;
  double bucket_base = 0;  // the bucket list's base size in pixels; 0: sqrt(height * width) of the request
};

// What condition_on_images made (ImageConditioning::data).
struct I2VConditioning {
  Tensor cond_latents;   // [1, C, 1, h, w]: get_image_condition_latents' result
  Tensor vision_states;  // [1, tokens, vision_states_dim]
};

// The parts for a loaded DiT, a VAE with its encoder and decoder, the SigLIP encoder and a prompt
// encoder. Throws naming the field when the parts do not fit (an i2v DiT needs concat_condition and a
// vision projection whose width is the SigLIP's).
pipeline::Parts make_i2v_parts(std::shared_ptr<const HunyuanVideo15DiT> dit, std::shared_ptr<const HunyuanVideo15VAE> vae,
                               std::shared_ptr<const SiglipEncoder> siglip, std::shared_ptr<PromptEncoder> encoder,
                               const I2VOptions& opt = {});

}  // namespace vidax::hunyuan15
