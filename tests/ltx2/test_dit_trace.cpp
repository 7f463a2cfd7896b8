// Records one velocity forward of the LTX-2.3 22B DiT at its real widths (48 blocks, video 32 x 128,
// audio 32 x 64, gated attention, cross-attention AdaLN) on Device::Meta for a 121-frame 512x768
// clip (latent 16 x 16 x 24 = 6144 video tokens, 126 audio frames) with a 1024-token prompt: every
// weight and activation is shape-only, nothing is computed. Checks that the whole forward records
// (no activation is read on the host), the output shapes, and the attention and RoPE counts the
// architecture implies (RoPE on both self-attentions and both cross-modal directions of every block).
#include <gtest/gtest.h>

#include <map>

#include "backend/recording.h"
#include "models/ltx2/dit.h"
#include "models/ltx2/rope.h"

using namespace vidax;

namespace {

nlohmann::json ltx23_config() {
  return nlohmann::json{
      {"dropout", 0.0}, {"attention_bias", true}, {"num_vector_embeds", nullptr},
      {"activation_fn", "gelu-approximate"}, {"num_embeds_ada_norm", 1000}, {"use_linear_projection", false},
      {"only_cross_attention", false}, {"cross_attention_norm", true}, {"double_self_attention", false},
      {"upcast_attention", false}, {"standardization_norm", "rms_norm"}, {"norm_elementwise_affine", false},
      {"qk_norm", "rms_norm"}, {"positional_embedding_type", "rope"}, {"use_audio_video_cross_attention", true},
      {"share_ff", false}, {"av_cross_ada_norm", true}, {"use_middle_indices_grid", true},
      {"num_attention_heads", 32}, {"audio_num_attention_heads", 32}, {"frequencies_precision", "float64"},
      {"caption_proj_before_connector", true}, {"apply_gated_attention", true}, {"cross_attention_adaln", true}};
}

// positions [1, axes, T, 2] from rope.h's bounds.
Tensor positions_tensor(const ltx2::Positions& p) {
  std::vector<float> v(static_cast<size_t>(p.n_axes * p.tokens * 2));
  for (int64_t a = 0; a < p.n_axes; ++a)
    for (int64_t t = 0; t < p.tokens; ++t) {
      const size_t i = static_cast<size_t>(a * p.tokens + t);
      v[2 * i] = p.start[i];
      v[2 * i + 1] = p.end[i];
    }
  return Tensor::from_f32(v, {1, p.n_axes, p.tokens, 2});
}

ltx2::Modality meta_modality(int64_t tokens, int64_t channels, int64_t width, const ltx2::Positions& pos) {
  ltx2::Modality m;
  m.latent = Tensor::empty({1, tokens, channels}, DType::F32, Device::Meta);
  m.sigma = Tensor::from_f32({0.7f}, {1});
  m.timesteps = Tensor::from_f32(std::vector<float>(static_cast<size_t>(tokens), 0.7f), {1, tokens});
  m.positions = positions_tensor(pos);
  m.context = Tensor::empty({1, 1024, width}, DType::F32, Device::Meta);
  return m;
}

}  // namespace

TEST(Ltx2DiTTrace, RecordsTheRealLtx23ModelOnMeta) {
  const ltx2::DiTConfig cfg = ltx2::DiTConfig::from_json(ltx23_config());
  ASSERT_EQ(cfg.num_layers, 48);
  ASSERT_EQ(cfg.inner_dim(), 4096);
  ASSERT_EQ(cfg.audio_inner_dim(), 2048);
  nn::ParamSource params = nn::ParamSource::generated(
      [](const std::string&, const Shape& shape) { return Tensor::empty(shape, DType::F32, Device::Meta); }, "meta");
  const ltx2::LTXModel model(cfg, params, DType::BF16);

  const ltx2::Positions vp = ltx2::video_positions(16, 16, 24, 24.0);
  const ltx2::Positions ap = ltx2::audio_positions(126);
  const ltx2::Modality video = meta_modality(vp.tokens, 128, 4096, vp);
  const ltx2::Modality audio = meta_modality(ap.tokens, 128, 2048, ap);
  ASSERT_EQ(video.latent.size(1), 6144);

  Trace trace;
  ltx2::DiTOutput y;
  {
    RecordingScope rec(trace);
    y = model.forward(&video, &audio);
  }
  EXPECT_EQ(y.video.shape(), (Shape{1, 6144, 128}));
  EXPECT_EQ(y.audio.shape(), (Shape{1, 126, 128}));
  EXPECT_EQ(y.video.device(), Device::Meta);
  std::map<std::string, int> n;
  for (const OpRecord* r : trace.of_kind(OpKind::Op)) ++n[r->name];
  // Per block: video / audio self and text attention, A2V and V2A.
  EXPECT_EQ(n["attention"], 48 * 6);
  // RoPE on q and k of both self-attentions and both cross-modal directions (the text attention has none).
  EXPECT_EQ(n["rope"], 48 * 8);
  // One GELU-fused FFN input linear per stream per block.
  EXPECT_EQ(n["linear_gelu"], 48 * 2);
}
