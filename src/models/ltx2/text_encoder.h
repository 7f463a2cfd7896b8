// The LTX-2 text path after the tokenizer: Gemma-3's hidden states (text/gemma3_encoder.h, every
// one, as LTXGemmaTextEncoder.encode takes them) through the feature extractor
// (ltx_core.text_encoders.gemma.feature_extractor):
//
//   V1 (LTX-2 19B): per prompt and per hidden state, over the prompt's tokens (mask 1) and all
//       channels: mean, min, max; x' = 8 (x - mean) / (max - min + 1e-6); the states stacked on a
//       last axis and flattened ([B, L, hidden * S], channel-major: index c * S + s), pads zeroed;
//       features = aggregate_embed(x') (no bias), returned for video and audio alike.
//   V2 (LTX-2.3 22B): per token and per hidden state x' = x * rsqrt(mean_c(x^2) + 1e-6), flattened
//       and pads zeroed as V1; video = video_aggregate_embed(x' * sqrt(D_video / hidden)), audio =
//       audio_aggregate_embed(x' * sqrt(D_audio / hidden)) (both with bias).
//
// S = num_hidden_layers + 1 (the embeddings and each layer's output). The embeddings connector
// (embeddings_connector.py) that follows is not here yet.
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "text/gemma3_config.h"

namespace vidax::ltx2 {

enum class FeatureExtractorVersion { V1, V2 };

struct TextFeatures {
  Tensor video, audio;  // [B, L, D_video] / [B, L, D_audio] (V1: the same tensor)
};

class FeatureExtractor {
 public:
  using WeightLookup = std::function<Tensor(const std::string& name)>;
  // Parameters under the official names (V1 aggregate_embed.weight [hidden, hidden * S]; V2
  // video_aggregate_embed.{weight,bias}, audio_aggregate_embed.{weight,bias}, [D_out, hidden * S]).
  FeatureExtractor(FeatureExtractorVersion version, const text::Gemma3Config& gemma, const WeightLookup& weights);

  // hidden_states: S tensors [B, L, hidden] F32; mask [B, L] of 0/1 (any padding side, >= 1 token
  // per row).
  TextFeatures forward(const std::vector<Tensor>& hidden_states, const Tensor& mask) const;

 private:
  FeatureExtractorVersion version_;
  int64_t hidden_, states_;
  Tensor w_, video_w_, audio_w_;
  std::optional<Tensor> video_b_, audio_b_;
};

// "v1" / "v2" (the golden config's feature_extractor field); throws naming the value otherwise.
FeatureExtractorVersion feature_extractor_version(const std::string& name);

// Kind ltx2.text.gemma3 (docs/parity.md): a golden's Gemma-3 text model (config.text_config, params
// by Gemma3TextModel names) and feature extractor (config.feature_extractor, params prefixed
// `feature_extractor.`), strictly; input.input_ids / input.attention_mask -> output.video /
// output.audio (fp32 only).
void register_text_parity_kinds();

}  // namespace vidax::ltx2
