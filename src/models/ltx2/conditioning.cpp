// LTX-2 image conditioning (conditioning.h). Compiled with -ffp-contract=off: each product and sum
// rounds as torch's separate kernels do; the lerp's fused multiply-add is written out (std::fma).
#include "models/ltx2/conditioning.h"

#include <cmath>
#include <string>

#include "core/error.h"
#include "io/image_resize.h"

namespace vidax::ltx2 {

namespace {

constexpr int64_t kSpace = 32;  // VIDEO_SCALE_FACTORS' spatial factor (the pipeline's VideoLatentTools)

void check_f32(const Tensor& t, const char* what, int64_t rank) {
  VIDAX_CHECK(t.defined() && t.dim() == rank && t.dtype() == DType::F32,
              "LTX-2 conditioning: " << what << " must be a rank-" << rank << " F32 tensor, found "
                                     << (t.defined() ? t.str() : "none"));
}

// torch's vectorized lerp (LerpKernel.cpp lerp_vec): |w| < 0.5 ? fma(w, end - start, start)
// : fma(w - 1, end - start, end).
float lerp(float start, float end, float w) {
  const float d = end - start;
  return std::fabs(w) < 0.5f ? std::fma(w, d, start) : std::fma(w - 1.0f, d, end);
}

}  // namespace

Tensor preprocess_image(const Tensor& rgb, int64_t height, int64_t width) {
  VIDAX_CHECK(rgb.defined() && rgb.dim() == 3 && rgb.size(2) == 3,
              "LTX-2 image conditioning: the image must be [height, width, 3] RGB (the decoded 8-bit values), found "
                  << (rgb.defined() ? rgb.str() : "none"));
  VIDAX_CHECK(rgb.size(0) >= 1 && rgb.size(1) >= 1, "LTX-2 image conditioning: empty image " << rgb.str());
  VIDAX_CHECK(height >= 1 && width >= 1,
              "LTX-2 image conditioning: target size " << height << "x" << width << " must be positive");
  const Tensor chw = rgb.to(DType::F32).permute({2, 0, 1}).contiguous();  // h w c -> 1 c h w
  const int64_t src_h = rgb.size(0), src_w = rgb.size(1);
  // resize_and_center_crop: Python floats, math.ceil.
  const double scale = std::max(static_cast<double>(height) / static_cast<double>(src_h),
                                static_cast<double>(width) / static_cast<double>(src_w));
  const auto new_h = static_cast<int64_t>(std::ceil(static_cast<double>(src_h) * scale));
  const auto new_w = static_cast<int64_t>(std::ceil(static_cast<double>(src_w) * scale));
  const Tensor resized = io::resize_bilinear(chw, new_h, new_w);
  const int64_t top = (new_h - height) / 2, left = (new_w - width) / 2;
  const std::vector<float> v = resized.slice(1, top, top + height).slice(2, left, left + width).contiguous().to_f32_vector();
  std::vector<float> out(v.size());
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i] / 127.5f - 1.0f;  // normalize_images
  return Tensor::from_f32(out, {1, 3, 1, height, width});
}

void check_image_conditioning(const ImageConditioning& c, const VideoTarget& t, size_t index) {
  const std::string who = "LTX-2 image conditioning " + std::to_string(index) + ": ";
  VIDAX_CHECK(c.frame_idx >= 0 && c.frame_idx < t.num_frames,
              who << "frame index " << c.frame_idx << " is outside the video's frames [0, " << t.num_frames
                  << ") (0 replaces the first latent frame; any later frame appends a keyframe)");
  VIDAX_CHECK(std::isfinite(c.strength) && c.strength >= 0.0 && c.strength <= 1.0,
              who << "strength " << c.strength << " must be in [0, 1] (1 keeps the image, 0 lets it be denoised)");
  VIDAX_CHECK(c.latent.defined() && c.latent.dtype() == DType::F32 && c.latent.dim() == 5 && c.latent.size(0) == 1 &&
                  c.latent.size(1) == t.channels && c.latent.size(2) == 1 && c.latent.size(3) == t.height &&
                  c.latent.size(4) == t.width,
              who << "the encoded image must be a [1, " << t.channels << ", 1, " << t.height << ", " << t.width
                  << "] F32 latent (one latent frame at the video's latent size), found "
                  << (c.latent.defined() ? c.latent.str() : "none"));
}

VideoLatentState conditioned_video_state(const VideoTarget& t, const std::vector<ImageConditioning>& images) {
  VIDAX_CHECK(t.frames >= 1 && t.height >= 1 && t.width >= 1 && t.channels >= 1 && t.num_frames >= 1,
              "LTX-2 conditioning: empty target grid " << t.frames << "x" << t.height << "x" << t.width << "x"
                                                      << t.channels);
  for (size_t i = 0; i < images.size(); ++i) check_image_conditioning(images[i], t, i);
  const int64_t C = t.channels, hw = t.height * t.width, base = t.tokens();
  const Positions grid = video_positions(t.frames, t.height, t.width, t.fps);

  std::vector<float> clean(static_cast<size_t>(base * C), 0.0f), mask(static_cast<size_t>(base), 1.0f);
  std::vector<float> marked(static_cast<size_t>(base), 0.0f);
  for (int64_t i = 0; i < hw; ++i) marked[static_cast<size_t>(i)] = 1.0f;  // _first_frame_keyframes_mask
  // Appended tokens' positions, per axis.
  std::vector<float> extra_start[3], extra_end[3];
  const float fps32 = static_cast<float>(t.fps);
  for (const ImageConditioning& c : images) {
    // patchify: b c f h w -> b (f h w) c.
    const std::vector<float> tokens =
        c.latent.reshape({C, hw}).permute({1, 0}).contiguous().to_f32_vector();
    const auto m = static_cast<float>(1.0 - c.strength);
    if (c.frame_idx == 0) {  // VideoConditionByLatentIndex(latent_idx 0): tokens [0, h w)
      std::copy(tokens.begin(), tokens.end(), clean.begin());
      std::fill(mask.begin(), mask.begin() + hw, m);
      continue;
    }
    // VideoConditionByKeyframeIndex: appended; pixel bounds of the one-frame latent, frame axis
    // [frame_idx, frame_idx + 1) (num_pixel_frames 1), converted to fp32, divided by fps.
    clean.insert(clean.end(), tokens.begin(), tokens.end());
    mask.insert(mask.end(), static_cast<size_t>(hw), m);
    marked.insert(marked.end(), static_cast<size_t>(hw), 0.0f);
    for (int64_t h = 0; h < t.height; ++h)
      for (int64_t w = 0; w < t.width; ++w) {
        extra_start[0].push_back(static_cast<float>(c.frame_idx) / fps32);
        extra_end[0].push_back(static_cast<float>(c.frame_idx + 1) / fps32);
        extra_start[1].push_back(static_cast<float>(h * kSpace));
        extra_end[1].push_back(static_cast<float>((h + 1) * kSpace));
        extra_start[2].push_back(static_cast<float>(w * kSpace));
        extra_end[2].push_back(static_cast<float>((w + 1) * kSpace));
      }
  }
  const int64_t T = static_cast<int64_t>(mask.size());
  VideoLatentState s;
  s.target_tokens = base;
  s.positions.n_axes = 3;
  s.positions.tokens = T;
  for (int64_t a = 0; a < 3; ++a) {
    const auto from = grid.start.begin() + a * base, to = from + base;
    s.positions.start.insert(s.positions.start.end(), from, to);
    s.positions.start.insert(s.positions.start.end(), extra_start[a].begin(), extra_start[a].end());
    const auto efrom = grid.end.begin() + a * base, eto = efrom + base;
    s.positions.end.insert(s.positions.end.end(), efrom, eto);
    s.positions.end.insert(s.positions.end.end(), extra_end[a].begin(), extra_end[a].end());
  }
  s.latent = Tensor::zeros({1, T, C}, DType::F32);
  s.clean_latent = Tensor::from_f32(clean, {1, T, C});
  s.denoise_mask = Tensor::from_f32(mask, {1, T, 1});
  s.keyframes_mask = Tensor::from_f32(marked, {1, T, 1});
  return s;
}

void add_noise(VideoLatentState& s, const Tensor& noise) {
  VIDAX_CHECK(noise.defined() && noise.shape() == s.clean_latent.shape(),
              "LTX-2 conditioning: noise " << (noise.defined() ? noise.str() : "none") << " must be "
                                           << s.clean_latent.str());
  const std::vector<float> n = noise.to(DType::F32).to_f32_vector(), c = s.clean_latent.to_f32_vector(),
                           m = s.denoise_mask.to_f32_vector();
  const size_t C = static_cast<size_t>(s.clean_latent.size(2));
  std::vector<float> out(n.size());
  // lerp(zeros, noise, 1) is the noise itself; then lerp(clean, ., mask).
  for (size_t i = 0; i < out.size(); ++i) out[i] = lerp(c[i], n[i], m[i / C]);
  s.latent = Tensor::from_f32(out, s.clean_latent.shape());
}

Tensor timesteps_from_mask(const Tensor& denoise_mask, float sigma, int64_t batch) {
  check_f32(denoise_mask, "denoise_mask", 3);
  std::vector<float> m = denoise_mask.to_f32_vector();
  for (float& x : m) x = x * sigma;
  std::vector<float> out;
  out.reserve(m.size() * static_cast<size_t>(batch));
  for (int64_t b = 0; b < batch; ++b) out.insert(out.end(), m.begin(), m.end());
  return Tensor::from_f32(out, {batch, denoise_mask.size(1), 1});
}

Tensor to_denoised_tokens(const Tensor& sample, const Tensor& velocity, const Tensor& timesteps) {
  check_f32(timesteps, "timesteps", 3);
  VIDAX_CHECK(sample.dim() == 3 && sample.shape() == velocity.shape() && timesteps.size(0) == sample.size(0) &&
                  timesteps.size(1) == sample.size(1) && timesteps.size(2) == 1,
              "LTX-2 to_denoised: sample " << sample.str() << ", velocity " << velocity.str() << " and timesteps "
                                           << timesteps.str() << " do not match");
  const std::vector<float> x = sample.to(DType::F32).to_f32_vector(), v = velocity.to(DType::F32).to_f32_vector(),
                           ts = timesteps.to_f32_vector();
  const size_t C = static_cast<size_t>(sample.size(2));
  std::vector<float> out(x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const float vt = v[i] * ts[i / C];
    out[i] = x[i] - vt;
  }
  return Tensor::from_f32(out, sample.shape());
}

Tensor post_process_latent(const Tensor& denoised, const Tensor& denoise_mask, const Tensor& clean) {
  check_f32(denoise_mask, "denoise_mask", 3);
  VIDAX_CHECK(denoised.dim() == 3 && denoised.shape() == clean.shape() && denoise_mask.size(0) == denoised.size(0) &&
                  denoise_mask.size(1) == denoised.size(1) && denoise_mask.size(2) == 1,
              "LTX-2 post_process_latent: denoised " << denoised.str() << ", mask " << denoise_mask.str()
                                                     << " and clean " << clean.str() << " do not match");
  const std::vector<float> d = denoised.to(DType::F32).to_f32_vector(), c = clean.to(DType::F32).to_f32_vector(),
                           m = denoise_mask.to_f32_vector();
  const size_t C = static_cast<size_t>(denoised.size(2));
  std::vector<float> out(d.size());
  for (size_t i = 0; i < d.size(); ++i) {
    const float w = m[i / C];
    const float a = d[i] * w;
    const float keep = 1.0f - w;
    const float b = c[i] * keep;
    out[i] = a + b;
  }
  return Tensor::from_f32(out, denoised.shape());
}

}  // namespace vidax::ltx2
