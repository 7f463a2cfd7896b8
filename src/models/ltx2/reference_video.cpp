// LTX-2 IC-LoRA reference-video conditioning (reference_video.h).
#include "models/ltx2/reference_video.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "backend/ops.h"
#include "core/error.h"
#include "models/ltx2/rope.h"

namespace vidax::ltx2 {

namespace {

// int(metadata.get(key, 1)) of one LoRA's metadata; a value that is not a positive integer is an
// error here (the reference's int() raises inside its try and falls back to 1 with a warning).
int64_t factor_of(const std::string& file, const std::map<std::string, std::string>& m, const char* key) {
  const auto it = m.find(key);
  if (it == m.end()) return 1;
  size_t used = 0;
  long long v = 0;
  try {
    v = std::stoll(it->second, &used);
  } catch (const std::exception&) {
    used = 0;
  }
  VIDAX_CHECK(used > 0 && used == it->second.size() && v >= 1,
              "IC-LoRA " << file << ": metadata " << key << " = '" << it->second
                         << "' must be a positive integer (the factor the LoRA was trained with)");
  return static_cast<int64_t>(v);
}

}  // namespace

ReferenceScale reference_scale(
    const std::vector<std::pair<std::string, std::map<std::string, std::string>>>& metadata) {
  ReferenceScale s;
  for (const auto& [file, m] : metadata) {
    const int64_t d = factor_of(file, m, "reference_downscale_factor");
    if (d != 1) {
      VIDAX_CHECK(s.downscale == 1 || s.downscale == d,
                  "Conflicting reference_downscale_factor values in LoRAs: already have "
                      << s.downscale << ", but " << file << " specifies " << d
                      << ". Cannot combine LoRAs with different reference scales.");
      s.downscale = d;
    }
    const int64_t t = factor_of(file, m, "reference_temporal_scale_factor");
    if (t != 1) {
      VIDAX_CHECK(s.temporal == 1 || s.temporal == t,
                  "Conflicting reference_temporal_scale_factor values in LoRAs: already have "
                      << s.temporal << ", but " << file << " specifies " << t
                      << ". Cannot combine LoRAs with different temporal scales.");
      s.temporal = t;
    }
  }
  return s;
}

void reference_size(int64_t height, int64_t width, int64_t scale, int64_t* ref_height, int64_t* ref_width) {
  VIDAX_CHECK(scale >= 1, "IC-LoRA reference_downscale_factor " << scale << " must be >= 1");
  VIDAX_CHECK(scale == 1 || (height % scale == 0 && width % scale == 0),
              "Output dimensions (" << height << "x" << width << ") must be divisible by reference_downscale_factor ("
                                    << scale << ")");
  *ref_height = height / scale;
  *ref_width = width / scale;
}

Tensor preprocess_video(const std::vector<Tensor>& frames, int64_t height, int64_t width) {
  VIDAX_CHECK(!frames.empty(),
              "video_preprocess received an empty frame generator; no frames were decoded from the source.");
  std::vector<Tensor> parts;
  parts.reserve(frames.size());
  for (const Tensor& f : frames) parts.push_back(preprocess_image(f, height, width));
  return parts.size() == 1 ? parts[0] : ops::concat(parts, 2);
}

Tensor temporal_subsample(const Tensor& video, int64_t factor) {
  VIDAX_CHECK(video.defined() && video.dim() == 5, "LTX-2 temporal_subsample: expected [B, C, F, H, W], found "
                                                       << (video.defined() ? video.str() : "none"));
  VIDAX_CHECK(factor >= 1, "IC-LoRA reference_temporal_scale_factor " << factor << " must be >= 1");
  if (factor == 1) return video;
  std::vector<Tensor> keep{video.slice(2, 0, 1)};
  for (int64_t i = 1; i < video.size(2); i += factor) keep.push_back(video.slice(2, i, i + 1));
  return ops::concat(keep, 2);
}

Tensor reference_video_input(const Tensor& frames, int64_t num_frames, int64_t ref_height, int64_t ref_width,
                             int64_t temporal) {
  VIDAX_CHECK(frames.defined() && frames.dim() == 4 && frames.size(3) == 3,
              "IC-LoRA reference video: the frames must be [F, h, w, 3] RGB (the decoded 8-bit values), found "
                  << (frames.defined() ? frames.str() : "none"));
  VIDAX_CHECK(num_frames >= 1, "IC-LoRA reference video: num_frames " << num_frames << " must be >= 1");
  const int64_t n = std::min(frames.size(0), num_frames);
  std::vector<Tensor> list;
  for (int64_t f = 0; f < n; ++f) list.push_back(frames.select(0, f).contiguous());
  return temporal_subsample(preprocess_video(list, ref_height, ref_width), temporal);
}

Tensor video_frames_of(const Tensor& video) {
  VIDAX_CHECK(video.defined() && video.dim() == 4 && video.size(0) == 3,
              "LTX-2 reference video: expected [3, F, H, W], found " << (video.defined() ? video.str() : "none"));
  const std::vector<float> x = video.contiguous().to(DType::F32).to_f32_vector();
  const int64_t F = video.size(1), H = video.size(2), W = video.size(3), n = F * H * W;
  std::vector<float> rgb(x.size());
  for (int64_t p = 0; p < n; ++p)
    for (int64_t ch = 0; ch < 3; ++ch)
      rgb[static_cast<size_t>(p * 3 + ch)] =
          std::clamp(std::nearbyint((x[static_cast<size_t>(ch * n + p)] + 1.0f) * 127.5f), 0.0f, 255.0f);
  return Tensor::from_f32(rgb, {F, H, W, 3});
}

Tensor crop_to_encoder_frames(const Tensor& video, int64_t time_factor,
                              const std::function<void(const std::string&)>& warn) {
  VIDAX_CHECK(video.defined() && video.dim() == 5 && video.size(2) >= 1,
              "LTX-2 reference video: expected [1, 3, F, H, W] with F >= 1, found " << (video.defined() ? video.str() : "none"));
  const int64_t f = video.size(2), crop = (f - 1) % time_factor;
  if (crop == 0) return video;
  if (warn)
    warn("Invalid number of frames " + std::to_string(f) + " for encode; cropping last " + std::to_string(crop) +
         " frames to satisfy 1 + " + std::to_string(time_factor) + "*k.");
  return video.slice(2, 0, f - crop).contiguous();
}

Tensor reference_attention(double strength, int64_t tokens) {
  VIDAX_CHECK(std::isfinite(strength) && strength >= 0.0 && strength <= 1.0,
              "conditioning_attention_strength must be in [0.0, 1.0], got " << strength);
  if (strength >= 1.0) return {};
  return Tensor::full({tokens}, static_cast<float>(strength), DType::F32);
}

Tensor downsample_mask_to_latent(const Tensor& mask, int64_t frames, int64_t height, int64_t width) {
  VIDAX_CHECK(mask.defined() && mask.dim() == 5 && mask.size(0) == 1 && mask.size(1) == 1,
              "IC-LoRA attention mask: expected a pixel-space [1, 1, F, H, W] mask, found "
                  << (mask.defined() ? mask.str() : "none"));
  VIDAX_CHECK(frames >= 1 && height >= 1 && width >= 1, "IC-LoRA attention mask: empty latent grid");
  const int64_t fp = mask.size(2), H = mask.size(3), W = mask.size(4);
  const std::vector<float> m = mask.to(DType::F32).contiguous().to_f32_vector();
  // interpolate(mode="area") = adaptive_avg_pool2d: window [floor(i in / out), ceil((i + 1) in / out)).
  std::vector<float> down(static_cast<size_t>(fp * height * width));
  for (int64_t f = 0; f < fp; ++f)
    for (int64_t i = 0; i < height; ++i) {
      const int64_t h0 = i * H / height, h1 = ((i + 1) * H + height - 1) / height;
      for (int64_t j = 0; j < width; ++j) {
        const int64_t w0 = j * W / width, w1 = ((j + 1) * W + width - 1) / width;
        float sum = 0.0f;
        for (int64_t y = h0; y < h1; ++y)
          for (int64_t x = w0; x < w1; ++x) sum += m[static_cast<size_t>((f * H + y) * W + x)];
        down[static_cast<size_t>((f * height + i) * width + j)] =
            sum / static_cast<float>(h1 - h0) / static_cast<float>(w1 - w0);
      }
    }
  const int64_t hw = height * width;
  std::vector<float> out(down.begin(), down.begin() + hw);  // the first frame alone
  if (fp > 1 && frames > 1) {
    VIDAX_CHECK((fp - 1) % (frames - 1) == 0, "Pixel frames (" << fp << ") not compatible with latent frames ("
                                                               << frames
                                                               << "): (f_pix - 1) must be divisible by (f_lat - 1)");
    const int64_t t = (fp - 1) / (frames - 1);
    for (int64_t f = 0; f + 1 < frames; ++f)
      for (int64_t k = 0; k < hw; ++k) {
        float sum = 0.0f;
        for (int64_t s = 0; s < t; ++s) sum += down[static_cast<size_t>((1 + f * t + s) * hw + k)];
        out.push_back(sum / static_cast<float>(t));
      }
  }
  return Tensor::from_f32(out, {static_cast<int64_t>(out.size())});
}

void check_reference_conditioning(const ReferenceVideoConditioning& c, const VideoTarget& t, size_t index) {
  const std::string who = "IC-LoRA reference video " + std::to_string(index) + ": ";
  VIDAX_CHECK(std::isfinite(c.strength) && c.strength >= 0.0 && c.strength <= 1.0,
              who << "strength " << c.strength << " must be in [0, 1] (1 keeps the reference clean, 0 lets it be denoised)");
  VIDAX_CHECK(c.downscale_factor >= 1 && c.temporal_scale_factor >= 1,
              who << "downscale factor " << c.downscale_factor << " and temporal scale factor "
                  << c.temporal_scale_factor << " must be >= 1");
  VIDAX_CHECK(c.latent.defined() && c.latent.dtype() == DType::F32 && c.latent.dim() == 5 && c.latent.size(0) == 1 &&
                  c.latent.size(1) == t.channels,
              who << "the encoded reference must be a [1, " << t.channels << ", F, h, w] F32 latent, found "
                  << (c.latent.defined() ? c.latent.str() : "none"));
  if (c.attention.defined()) {
    const int64_t m = c.latent.size(2) * c.latent.size(3) * c.latent.size(4);
    VIDAX_CHECK(c.attention.dim() == 1 && c.attention.size(0) == m,
                who << "1-D attention_mask length must equal num_new_tokens (" << m << "), got shape "
                    << c.attention.str());
    for (float a : c.attention.to(DType::F32).to_f32_vector())
      VIDAX_CHECK(std::isfinite(a) && a >= 0.0f && a <= 1.0f, who << "attention weight " << a << " must be in [0, 1]");
  }
}

void append_reference_video(VideoLatentState& s, const VideoTarget& t, const ReferenceVideoConditioning& c,
                            size_t index) {
  check_reference_conditioning(c, t, index);
  VIDAX_CHECK(s.target_tokens == t.tokens() && s.tokens() >= s.target_tokens,
              "LTX-2 reference conditioning: the state holds " << s.tokens() << " tokens for a target of "
                                                               << t.tokens());
  const int64_t C = t.channels, F = c.latent.size(2), h = c.latent.size(3), w = c.latent.size(4);
  const int64_t M = F * h * w, N = s.tokens(), noisy = s.target_tokens, T = N + M;
  // patchify: b c f h w -> b (f h w) c.
  const Tensor tokens = c.latent.reshape({1, C, M}).permute({0, 2, 1}).contiguous();
  // get_pixel_coords(causal_fix) in fp32, the frame axis divided by fps / S.
  const double fps = t.fps / static_cast<double>(c.temporal_scale_factor);
  Positions p = video_positions(F, h, w, fps);
  if (c.temporal_scale_factor != 1) {
    // latent_state.positions[:, 0, 0:1, 1:2]: the first token's end time (1 / target fps).
    const float t_target = s.positions.end[0];
    const float shift = static_cast<float>(c.temporal_scale_factor - 1) * t_target;
    for (int64_t i = 0; i < M; ++i) {
      p.start[static_cast<size_t>(i)] = std::max(0.0f, p.start[static_cast<size_t>(i)] - shift);
      p.end[static_cast<size_t>(i)] = std::max(0.0f, p.end[static_cast<size_t>(i)] - shift);
    }
  }
  if (c.downscale_factor != 1) {
    const auto d = static_cast<float>(c.downscale_factor);
    for (int64_t i = M; i < 3 * M; ++i) {
      p.start[static_cast<size_t>(i)] *= d;
      p.end[static_cast<size_t>(i)] *= d;
    }
  }
  Positions joined;
  joined.n_axes = 3;
  joined.tokens = T;
  for (int64_t a = 0; a < 3; ++a) {
    auto take = [&](std::vector<float>& dst, const std::vector<float>& old, const std::vector<float>& add) {
      dst.insert(dst.end(), old.begin() + a * N, old.begin() + (a + 1) * N);
      dst.insert(dst.end(), add.begin() + a * M, add.begin() + (a + 1) * M);
    };
    take(joined.start, s.positions.start, p.start);
    take(joined.end, s.positions.end, p.end);
  }

  // update_attention_mask (the wrapper's, from the state before the item): none without a weight
  // and without an existing mask; a weight of ones when only the existing mask asks for one.
  Tensor attention;
  if (c.attention.defined() || s.attention_mask.defined()) {
    const std::vector<float> cross =
        c.attention.defined() ? c.attention.to(DType::F32).to_f32_vector() : std::vector<float>(static_cast<size_t>(M), 1.0f);
    std::vector<float> mask(static_cast<size_t>(T * T), 0.0f);
    const std::vector<float> old = s.attention_mask.defined() ? s.attention_mask.to_f32_vector() : std::vector<float>();
    for (int64_t i = 0; i < N; ++i)
      for (int64_t j = 0; j < N; ++j)
        mask[static_cast<size_t>(i * T + j)] = old.empty() ? 1.0f : old[static_cast<size_t>(i * N + j)];
    for (int64_t i = N; i < T; ++i)
      for (int64_t j = N; j < T; ++j) mask[static_cast<size_t>(i * T + j)] = 1.0f;
    for (int64_t i = 0; i < noisy; ++i)
      for (int64_t j = 0; j < M; ++j) mask[static_cast<size_t>(i * T + N + j)] = cross[static_cast<size_t>(j)];
    for (int64_t i = 0; i < M; ++i)
      for (int64_t j = 0; j < noisy; ++j) mask[static_cast<size_t>((N + i) * T + j)] = cross[static_cast<size_t>(i)];
    attention = Tensor::from_f32(mask, {1, T, T});
  }

  const auto m = static_cast<float>(1.0 - c.strength);
  s.latent = ops::concat({s.latent, Tensor::zeros({1, M, C}, DType::F32)}, 1);
  s.clean_latent = ops::concat({s.clean_latent, tokens}, 1);
  s.denoise_mask = ops::concat({s.denoise_mask, Tensor::full({1, M, 1}, m, DType::F32)}, 1);
  if (s.keyframes_mask.defined())  // extend_keyframes_mask(marked=False)
    s.keyframes_mask = ops::concat({s.keyframes_mask, Tensor::zeros({1, M, 1}, DType::F32)}, 1);
  s.positions = std::move(joined);
  s.attention_mask = attention;
}

}  // namespace vidax::ltx2
