// LTX-2's embeddings connectors (ltx_core.text_encoders.gemma: embeddings_connector.py
// Embeddings1DConnector, embeddings_processor.py EmbeddingsProcessor.create_embeddings): the
// feature extractor's output -> the DiT's video / audio context.
//
//   per row: a stable reorder putting the mask's tokens first, pads after ([valid, pad]);
//   per connector: pads replaced by the learnable registers (tiled over the sequence, S a multiple of
//     their count; the attention mask then all open), or, without registers, the pads masked as keys;
//     positions 0..S-1 (one axis, max_pos, theta; the fp64 frequency build) as RoPE;
//     per block: x += attn1(RMS(x), pe)  x += ff(RMS(x))   (the DiT's Attention / FeedForward,
//     RMS without affine, eps 1e-6);  out = RMS(x)
//   video = video_connector(...) * binary, audio = audio_connector(...), mask = binary, where binary
//   = (the connector's returned additive mask < 1e-6): the reference's rule, which is 1 at every
//   position (its pads are -finfo.max), so nothing is zeroed.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/tensor.h"
#include "models/ltx2/dit_blocks.h"
#include "nn/params.h"

namespace vidax::ltx2 {

// Embeddings1DConnector's init args, same names and defaults.
struct ConnectorConfig {
  int64_t attention_head_dim = 128, num_attention_heads = 30, num_layers = 2;
  double positional_embedding_theta = 10000.0;
  std::vector<int64_t> positional_embedding_max_pos{1};
  int64_t num_learnable_registers = 128;  // 0: none (null)
  RopeLayout rope_type = RopeLayout::Split;
  bool double_precision_rope = false, apply_gated_attention = false, ff_bias = true;
  // Unknown keys are errors; double_precision_rope false (the fp32 frequency build) is refused.
  static ConnectorConfig from_json(const nlohmann::json& j);
  int64_t inner_dim() const { return attention_head_dim * num_attention_heads; }
};

class EmbeddingsConnector {
 public:
  // Parameters under `prefix` (e.g. "video_connector."): transformer_1d_blocks.{i}.attn1.*, .ff.*,
  // learnable_registers.
  EmbeddingsConnector(const ConnectorConfig& cfg, nn::ParamSource& params, const std::string& prefix);
  // x [B, S, inner] F32, already right-padded; lens: each row's token count -> [B, S, inner].
  Tensor forward(const Tensor& x, const std::vector<int64_t>& lens) const;
  const ConnectorConfig& config() const { return cfg_; }

 private:
  struct Block {
    Attention attn;
    FeedForward ff;
  };
  ConnectorConfig cfg_;
  std::vector<Block> blocks_;
  Tensor registers_;  // [num_learnable_registers, inner] F32 or undefined
};

struct TextContext {
  Tensor video, audio, mask;  // [B, S, Dv], [B, S, Da] (undefined without an audio connector), [B, S] I64
};

// EmbeddingsProcessor.create_embeddings: mask [B, S] of 0/1 (>= 1 token per row).
TextContext create_embeddings(const EmbeddingsConnector& video, const EmbeddingsConnector* audio,
                              const Tensor& video_features, const std::optional<Tensor>& audio_features,
                              const Tensor& mask);

// Kind ltx2.text.connector (docs/parity.md): config {"video": init args, "audio": init args | null};
// params video_connector.* / audio_connector.*, strictly; input.video_features, input.audio_features,
// input.attention_mask -> output.video, output.audio, output.mask (fp32 only).
void register_connector_parity_kind();

}  // namespace vidax::ltx2
