#include "models/ltx2/text_encoder.h"

#include <cmath>
#include <limits>

#include "backend/ops.h"
#include "core/error.h"
#include "text/encoder_weights.h"

namespace vidax::ltx2 {

namespace {

constexpr const char* kWho = "ltx2 feature extractor";
constexpr float kEps = 1e-6f;

// The mask as per-position flags, checked against [B, L].
std::vector<bool> token_flags(const Tensor& mask, int64_t B, int64_t L) {
  VIDAX_CHECK(mask.shape() == (Shape{B, L}), kWho << ": attention_mask " << shape_str(mask.shape())
                                                  << " does not match the hidden states [" << B << ", " << L << "]");
  const std::vector<double> m = mask.to_f64_vector();
  std::vector<bool> keep(m.size());
  for (size_t i = 0; i < m.size(); ++i) {
    VIDAX_CHECK(m[i] == 0 || m[i] == 1, kWho << ": attention_mask holds " << m[i] << " (expected 0 or 1)");
    keep[i] = m[i] == 1;
  }
  return keep;
}

}  // namespace

FeatureExtractorVersion feature_extractor_version(const std::string& name) {
  if (name == "v1") return FeatureExtractorVersion::V1;
  if (name == "v2") return FeatureExtractorVersion::V2;
  throw Error(msg() << kWho << ": feature_extractor '" << name << "' is not one of v1, v2");
}

FeatureExtractor::FeatureExtractor(FeatureExtractorVersion version, const text::Gemma3Config& gemma,
                                   const WeightLookup& weights)
    : version_(version), hidden_(gemma.hidden_size), states_(gemma.num_hidden_layers + 1) {
  const int64_t flat = hidden_ * states_;
  auto get = [&](const std::string& name, const Shape& shape) {
    return text::checked_param(weights, name, shape, kWho).to(DType::F32);
  };
  if (version_ == FeatureExtractorVersion::V1) {
    w_ = get("aggregate_embed.weight", {hidden_, flat});
    return;
  }
  // V2: the output widths come from the stored weights (the DiT's video / audio inner dims).
  auto out_dim = [&](const std::string& name) {
    const Tensor t = weights(name);
    VIDAX_CHECK(t.defined() && t.dim() == 2, kWho << ": missing 2-d parameter " << name);
    return t.size(0);
  };
  const int64_t dv = out_dim("video_aggregate_embed.weight"), da = out_dim("audio_aggregate_embed.weight");
  video_w_ = get("video_aggregate_embed.weight", {dv, flat});
  video_b_ = get("video_aggregate_embed.bias", {dv});
  audio_w_ = get("audio_aggregate_embed.weight", {da, flat});
  audio_b_ = get("audio_aggregate_embed.bias", {da});
}

TextFeatures FeatureExtractor::forward(const std::vector<Tensor>& hidden_states, const Tensor& mask) const {
  VIDAX_CHECK(static_cast<int64_t>(hidden_states.size()) == states_,
              kWho << ": " << hidden_states.size() << " hidden states, expected " << states_);
  const Tensor& h0 = hidden_states.front();
  VIDAX_CHECK(h0.dim() == 3 && h0.size(2) == hidden_, kWho << ": hidden states must be [B, L, " << hidden_
                                                           << "], got " << shape_str(h0.shape()));
  const int64_t B = h0.size(0), L = h0.size(1), D = hidden_, S = states_;
  const std::vector<bool> keep = token_flags(mask, B, L);
  // normed[b, t, c * S + s] (torch.stack(dim=-1) then reshape), pads left at 0.
  std::vector<float> normed(static_cast<size_t>(B * L * D * S), 0.0f);
  for (int64_t s = 0; s < S; ++s) {
    const Tensor& hs = hidden_states[s];
    VIDAX_CHECK(hs.shape() == h0.shape(), kWho << ": hidden state " << s << " is " << shape_str(hs.shape())
                                               << ", expected " << shape_str(h0.shape()));
    const std::vector<float> x = hs.to_f32_vector();
    for (int64_t b = 0; b < B; ++b) {
      const float* xb = x.data() + b * L * D;
      float* ob = normed.data() + b * L * D * S;
      if (version_ == FeatureExtractorVersion::V1) {
        // _norm_and_concat_padded_batch: masked mean over (tokens, channels), masked min / max.
        double sum = 0;
        int64_t n = 0;
        float lo = std::numeric_limits<float>::infinity(), hi = -lo;
        for (int64_t t = 0; t < L; ++t) {
          if (!keep[b * L + t]) continue;
          ++n;
          for (int64_t c = 0; c < D; ++c) {
            const float v = xb[t * D + c];
            sum += v;
            lo = std::min(lo, v);
            hi = std::max(hi, v);
          }
        }
        VIDAX_CHECK(n > 0, kWho << ": attention_mask row " << b << " has no tokens");
        const float mean = static_cast<float>(sum) / (static_cast<float>(n * D) + kEps);
        const float range = hi - lo + kEps;
        for (int64_t t = 0; t < L; ++t) {
          if (!keep[b * L + t]) continue;
          for (int64_t c = 0; c < D; ++c) ob[(t * D + c) * S + s] = 8.0f * (xb[t * D + c] - mean) / range;
        }
      } else {
        // norm_and_concat_per_token_rms: x * rsqrt(mean over channels of x^2 + 1e-6).
        for (int64_t t = 0; t < L; ++t) {
          if (!keep[b * L + t]) continue;
          double sq = 0;
          for (int64_t c = 0; c < D; ++c) sq += static_cast<double>(xb[t * D + c]) * xb[t * D + c];
          const float r = 1.0f / std::sqrt(static_cast<float>(sq / static_cast<double>(D)) + kEps);
          for (int64_t c = 0; c < D; ++c) ob[(t * D + c) * S + s] = xb[t * D + c] * r;
        }
      }
    }
  }
  const Tensor x = Tensor::from_f32(normed, {B, L, D * S});
  if (version_ == FeatureExtractorVersion::V1) {
    const Tensor f = ops::linear(x, w_);
    return {f, f};
  }
  // _rescale_norm: x * sqrt(target_dim / source_dim) before each projection.
  auto project = [&](const Tensor& w, const std::optional<Tensor>& bias) {
    const double r = std::sqrt(static_cast<double>(w.size(0)) / static_cast<double>(D));
    return ops::linear(ops::scale(x, r), w, bias);
  };
  return {project(video_w_, video_b_), project(audio_w_, audio_b_)};
}

}  // namespace vidax::ltx2
