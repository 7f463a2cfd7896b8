#include "models/hunyuan15/i2v.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "backend/ops.h"
#include "core/error.h"
#include "io/image_resize.h"
#include "io/video.h"

namespace vidax::hunyuan15 {

namespace {

// Python's round(x, 5): the double's exact decimal value rounded half to even at 5 places (what
// printf's %.5f does in the default rounding mode), read back.
double round5(double x) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.5f", x);
  return std::strtod(buf, nullptr);
}

}  // namespace

std::vector<std::array<int64_t, 2>> crop_size_list(double base_size, int64_t patch_size, double max_ratio) {
  VIDAX_CHECK(patch_size >= 1 && max_ratio >= 1.0,
              "crop_size_list: patch_size " << patch_size << " must be >= 1 and max_ratio " << max_ratio << " >= 1");
  // num_patches = round((base_size / patch_size) ** 2): Python's round, halves to even.
  const double r = base_size / static_cast<double>(patch_size);
  const auto num_patches = static_cast<int64_t>(std::nearbyint(r * r));
  std::vector<std::array<int64_t, 2>> out;
  int64_t wp = num_patches, hp = 1;
  while (wp > 0) {
    if (static_cast<double>(std::max(wp, hp)) / static_cast<double>(std::min(wp, hp)) <= max_ratio)
      out.push_back({wp * patch_size, hp * patch_size});
    if ((hp + 1) * wp <= num_patches) ++hp;
    else --wp;
  }
  return out;
}

std::array<int64_t, 2> closest_bucket(int64_t img_h, int64_t img_w, double base_size, int64_t patch_size) {
  VIDAX_CHECK(img_h >= 1 && img_w >= 1, "closest_bucket: picture size " << img_h << "x" << img_w);
  const std::vector<std::array<int64_t, 2>> buckets = crop_size_list(base_size, patch_size);
  VIDAX_CHECK(!buckets.empty(), "HunyuanVideo 1.5 i2v: no size bucket at base size "
                                    << base_size << " (it needs at least one " << patch_size << "-pixel patch: a "
                                    << "request of at least " << patch_size << "x" << patch_size << ")");
  const double aspect = static_cast<double>(img_h) / static_cast<double>(img_w);
  size_t best = 0;
  double best_d = 0;
  for (size_t i = 0; i < buckets.size(); ++i) {
    const double ratio = round5(static_cast<double>(buckets[i][0]) / static_cast<double>(buckets[i][1]));
    const double d = std::abs(ratio - aspect);
    if (i == 0 || d < best_d) {  // numpy argmin: the first of equals
      best = i;
      best_d = d;
    }
  }
  return buckets[best];
}

Tensor i2v_picture(const Tensor& image, int64_t h, int64_t w, std::string* note) {
  VIDAX_CHECK(image.dim() == 3 && image.size(0) == 3 && image.dtype() == DType::F32,
              "HunyuanVideo 1.5 i2v: expects the image [3, H, W] F32 in [-1, 1], got " << image.str());
  const Tensor src = image.to_host().contiguous();
  const int64_t ih = src.size(1), iw = src.size(2), plane = ih * iw;
  Tensor pic = Tensor::empty({ih, iw, 3}, DType::U8);
  {
    const float* s = src.data<float>();  // view-write-ok: reads a fresh contiguous copy
    uint8_t* d = pic.data<uint8_t>();    // view-write-ok: fills the tensor made above
    for (int64_t c = 0; c < 3; ++c)
      for (int64_t i = 0; i < plane; ++i) {
        const double v = std::nearbyint((static_cast<double>(s[c * plane + i]) * 0.5 + 0.5) * 255.0);
        d[i * 3 + c] = static_cast<uint8_t>(std::min(255.0, std::max(0.0, v)));
      }
  }
  // scale_factor = max(target_w / w, target_h / h); int(round(side * scale)) (halves to even).
  const double scale = std::max(static_cast<double>(w) / static_cast<double>(iw),
                                static_cast<double>(h) / static_cast<double>(ih));
  const auto rw = static_cast<int64_t>(std::nearbyint(static_cast<double>(iw) * scale));
  const auto rh = static_cast<int64_t>(std::nearbyint(static_cast<double>(ih) * scale));
  VIDAX_CHECK(rw >= w && rh >= h, "HunyuanVideo 1.5 i2v: the " << iw << "x" << ih << " image resized to " << rw << "x"
                                                               << rh << " does not cover " << w << "x" << h);
  const Tensor resized = (rw == iw && rh == ih) ? pic : io::resize_lanczos_pil(pic, rh, rw);
  // CenterCrop / PIL crop of the float box: int(round((R - T) / 2)), halves to even.
  const auto top = static_cast<int64_t>(std::nearbyint(static_cast<double>(rh - h) / 2.0));
  const auto left = static_cast<int64_t>(std::nearbyint(static_cast<double>(rw - w) / 2.0));
  if (note)
    *note = "the " + std::to_string(iw) + "x" + std::to_string(ih) + " image: resized to " + std::to_string(rw) + "x" +
            std::to_string(rh) + " (LANCZOS) and centre-cropped to the " + std::to_string(w) + "x" + std::to_string(h) +
            " bucket";
  return resized.slice(0, top, top + h).slice(1, left, left + w).contiguous();
}

pipeline::Parts make_i2v_parts(std::shared_ptr<const HunyuanVideo15DiT> dit, std::shared_ptr<const HunyuanVideo15VAE> vae,
                               std::shared_ptr<const SiglipEncoder> siglip, std::shared_ptr<PromptEncoder> encoder,
                               const I2VOptions& opt) {
  VIDAX_CHECK(siglip && siglip->model, "HunyuanVideo 1.5 i2v: the SigLIP image encoder is needed");
  pipeline::Parts p = make_t2v_parts(dit, vae, std::move(encoder), opt.t2v);
  const DiTConfig& c = dit->config();
  VIDAX_CHECK(c.concat_condition, "HunyuanVideo 1.5 i2v: the DiT has concat_condition false; the i2v pipeline "
                                  "concatenates the image latent and its mask (concat_condition must be true)");
  VIDAX_CHECK(c.vision_projection != "none",
              "HunyuanVideo 1.5 i2v: the DiT has vision_projection 'none'; it must take the SigLIP states (linear)");
  VIDAX_CHECK(siglip->model->config().hidden_size == c.vision_states_dim,
              "HunyuanVideo 1.5 i2v: the SigLIP's hidden_size " << siglip->model->config().hidden_size
                                                                << " is not the DiT's vision_states_dim "
                                                                << c.vision_states_dim);
  VIDAX_CHECK(opt.bucket_base >= 0 && std::isfinite(opt.bucket_base),
              "HunyuanVideo 1.5 i2v: bucket_base " << opt.bucket_base << " must be >= 0 (0: from the request)");
  p.min_images = p.max_images = 1;
  const int64_t stride = vae->config().ffactor_spatial;
  p.condition_on_images = [vae, siglip, base = opt.bucket_base, stride](const pipeline::ImageInputs& in) {
    const double b = base > 0 ? base : std::sqrt(static_cast<double>(in.height) * static_cast<double>(in.width));
    const auto [h, w] = closest_bucket(in.image.size(1), in.image.size(2), b, stride);
    pipeline::ImageConditioning out;
    out.height = h;
    out.width = w;
    std::string note;
    const Tensor picture = i2v_picture(in.image, h, w, &note);
    out.notes.push_back(note);
    auto cond = std::make_shared<I2VConditioning>();
    // ToTensor + Normalize([0.5], [0.5]) -> [1, 3, 1, h, w]; encode().latent_dist.mode() * scaling_factor.
    const Tensor pixels = io::picture_to_tensor(picture).unsqueeze(0).unsqueeze(2).contiguous();
    cond->cond_latents = vae->encode_scaled(pixels);
    cond->vision_states = siglip->encode(picture);
    out.taps["inter.cond_latents"] = cond->cond_latents.squeeze(0);
    out.taps["inter.vision_states"] = cond->vision_states;
    out.data = std::move(cond);
    return out;
  };
  p.predict = [dit](const pipeline::DenoiseInput& in) {
    VIDAX_CHECK(in.images && in.images->data, "HunyuanVideo 1.5 i2v: the denoiser was called without the image");
    const auto& cond = *static_cast<const I2VConditioning*>(in.images->data.get());
    const DiTConfig& cfg = dit->config();
    const PromptEmbeds& e = prompt_embeds_of(in.prompt);
    const Tensor x = in.x.unsqueeze(0);
    const Shape& s = x.shape();
    VIDAX_CHECK(cond.cond_latents.size(1) == s[1] && cond.cond_latents.size(3) == s[3] && cond.cond_latents.size(4) == s[4],
                "HunyuanVideo 1.5 i2v: the image latent " << cond.cond_latents.str() << " does not fit the latent "
                                                          << x.str());
    // _prepare_cond_latents: cond_latents.repeat over the frames with frames 1: zeroed, i.e. the image's
    // latent then zeros; the mask (merge_tensor_by_mask of zeros and ones by get_task_mask("i2v")): 1 on
    // the first latent frame.
    std::vector<Tensor> lat{cond.cond_latents}, mask{Tensor::full({1, 1, 1, s[3], s[4]}, 1.0, DType::F32)};
    if (s[2] > 1) {
      lat.push_back(Tensor::zeros({1, s[1], s[2] - 1, s[3], s[4]}, DType::F32));
      mask.push_back(Tensor::zeros({1, 1, s[2] - 1, s[3], s[4]}, DType::F32));
    }
    DiTInputs d;
    d.hidden_states = ops::concat({x, ops::concat(lat, 2), ops::concat(mask, 2)}, 1);
    d.timestep = {in.t};
    if (cfg.use_meanflow) d.timestep_r = {in.t_next};  // timesteps[i + 1], 0 after the last step
    d.text_states = e.text_states.unsqueeze(0);
    d.encoder_attention_mask = e.text_mask.unsqueeze(0);
    d.vision_states = cond.vision_states;
    d.mask_type = "i2v";
    if (cfg.glyph_byT5_v2) {
      d.byt5_text_states = e.byt5_states.unsqueeze(0);
      d.byt5_text_mask = e.byt5_mask.unsqueeze(0);
    }
    return dit->forward(d).squeeze(0);
  };
  return p;
}

}  // namespace vidax::hunyuan15
