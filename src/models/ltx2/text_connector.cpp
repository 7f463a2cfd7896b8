#include "models/ltx2/text_connector.h"

#include <algorithm>
#include <mutex>

#include "core/error.h"
#include "parity/parity.h"
#include "translate/config_fields.h"
#include "translate/inspect.h"

namespace vidax::ltx2 {

using nlohmann::json;
using translate::value_or;

namespace {

constexpr const char* kWho = "LTX-2 embeddings connector";
constexpr double kEps = 1e-6;  // ltx_core.utils.rms_norm's and Attention's norm_eps default

}  // namespace

ConnectorConfig ConnectorConfig::from_json(const json& j) {
  VIDAX_CHECK(j.is_object(), kWho << " config: expected a JSON object, found " << j.dump());
  static const std::vector<std::string> known{
      "attention_head_dim",      "num_attention_heads", "num_layers",           "positional_embedding_theta",
      "positional_embedding_max_pos", "causal_temporal_positioning", "num_learnable_registers", "rope_type",
      "double_precision_rope",   "apply_gated_attention", "ff_bias"};
  for (const auto& [key, v] : j.items())
    VIDAX_CHECK(std::find(known.begin(), known.end(), key) != known.end(),
                kWho << " config: unknown key '" << key << "' (Embeddings1DConnector's init args)");
  ConnectorConfig c;
  c.attention_head_dim = value_or(j, "attention_head_dim", c.attention_head_dim);
  c.num_attention_heads = value_or(j, "num_attention_heads", c.num_attention_heads);
  c.num_layers = value_or(j, "num_layers", c.num_layers);
  c.positional_embedding_theta = value_or(j, "positional_embedding_theta", c.positional_embedding_theta);
  c.positional_embedding_max_pos = value_or(j, "positional_embedding_max_pos", c.positional_embedding_max_pos);
  // null disables the registers (as 0 does: `if self.num_learnable_registers`).
  c.num_learnable_registers = value_or<int64_t>(j, "num_learnable_registers", j.contains("num_learnable_registers") ? 0 : 128);
  const std::string rope = value_or<std::string>(j, "rope_type", "split");
  VIDAX_CHECK(rope == "split" || rope == "interleaved", kWho << " config: rope_type '" << rope
                                                             << "' (split or interleaved)");
  c.rope_type = rope == "split" ? RopeLayout::Split : RopeLayout::Interleaved;
  c.double_precision_rope = value_or(j, "double_precision_rope", c.double_precision_rope);
  c.apply_gated_attention = value_or(j, "apply_gated_attention", c.apply_gated_attention);
  c.ff_bias = value_or(j, "ff_bias", c.ff_bias);
  // causal_temporal_positioning is stored by the reference but changes nothing in its forward.
  VIDAX_CHECK(c.attention_head_dim >= 2 && c.attention_head_dim % 2 == 0 && c.num_attention_heads >= 1 &&
                  c.num_layers >= 0 && c.num_learnable_registers >= 0,
              kWho << " config: head dim (even), heads, layers and registers out of range: " << j.dump());
  VIDAX_CHECK(c.positional_embedding_max_pos.size() == 1,
              kWho << " config: positional_embedding_max_pos must have one entry (one position axis)");
  VIDAX_CHECK(c.double_precision_rope, kWho << " config: double_precision_rope false (the fp32 frequency grid, "
                                               "generate_freq_grid_pytorch) is not built; only the fp64 build is");
  return c;
}

EmbeddingsConnector::EmbeddingsConnector(const ConnectorConfig& cfg, nn::ParamSource& params, const std::string& prefix)
    : cfg_(cfg) {
  const int64_t d = cfg_.inner_dim();
  for (int64_t i = 0; i < cfg_.num_layers; ++i) {
    const std::string p = prefix + "transformer_1d_blocks." + std::to_string(i);
    blocks_.push_back({Attention::load(params, p + ".attn1", d, d, cfg_.num_attention_heads, cfg_.attention_head_dim,
                                       cfg_.apply_gated_attention, kEps, DType::F32),
                       FeedForward::load(params, p + ".ff", d, cfg_.ff_bias, DType::F32)});
  }
  if (cfg_.num_learnable_registers > 0)
    registers_ = params.take(prefix + "learnable_registers", {cfg_.num_learnable_registers, d}).to(DType::F32);
}

Tensor EmbeddingsConnector::forward(const Tensor& x, const std::vector<int64_t>& lens) const {
  const int64_t d = cfg_.inner_dim();
  VIDAX_CHECK(x.dim() == 3 && x.size(2) == d, kWho << ": features must be [B, S, " << d << "], got " << shape_str(x.shape()));
  const int64_t B = x.size(0), S = x.size(1);
  VIDAX_CHECK(static_cast<int64_t>(lens.size()) == B, kWho << ": " << lens.size() << " token counts for a batch of " << B);
  Tensor h = x.to(DType::F32);
  ops::AttentionOptions mask;
  if (registers_.defined()) {
    // _replace_padded_with_learnable_registers: the registers tiled over S fill the pads; the
    // attention mask is then all open.
    const int64_t R = cfg_.num_learnable_registers;
    VIDAX_CHECK(S % R == 0, kWho << ": sequence length " << S << " is not a multiple of the " << R << " registers");
    const Tensor tiled = ops::concat(std::vector<Tensor>(static_cast<size_t>(S / R), registers_), 0);  // [S, d]
    std::vector<Tensor> rows;
    for (int64_t b = 0; b < B; ++b) {
      std::vector<Tensor> parts;
      if (lens[b] > 0) parts.push_back(h.slice(0, b, b + 1).slice(1, 0, lens[b]));
      if (lens[b] < S) parts.push_back(tiled.slice(0, lens[b], S).unsqueeze(0));
      rows.push_back(parts.size() == 1 ? ops::copy(parts[0]) : ops::concat(parts, 1));
    }
    h = ops::concat(rows, 0);
  } else {
    mask.kv_lens = lens;  // the additive pad mask on keys of right-padded rows
  }
  // Positions 0..S-1 on one axis (use_middle_indices_grid false: the index itself).
  Positions pos;
  pos.n_axes = 1;
  pos.tokens = S;
  for (int64_t t = 0; t < S; ++t) pos.start.push_back(static_cast<float>(t));
  pos.end = pos.start;
  RopeSpec spec;
  spec.dim = d;
  spec.heads = cfg_.num_attention_heads;
  spec.theta = cfg_.positional_embedding_theta;
  spec.max_pos = cfg_.positional_embedding_max_pos;
  spec.layout = cfg_.rope_type;
  const StreamRope pe{{rope_tables(pos, spec)}};
  for (const Block& blk : blocks_) {
    h = ops::add(blk.attn(ops::rms_norm(h, std::nullopt, kEps), nullptr, mask, &pe, nullptr), h);
    h = ops::add(blk.ff(ops::rms_norm(h, std::nullopt, kEps)), h);
  }
  return ops::rms_norm(h, std::nullopt, kEps);
}

TextContext create_embeddings(const EmbeddingsConnector& video, const EmbeddingsConnector* audio,
                              const Tensor& video_features, const std::optional<Tensor>& audio_features,
                              const Tensor& mask) {
  VIDAX_CHECK(static_cast<bool>(audio) == audio_features.has_value(),
              kWho << ": audio features " << (audio ? "missing for the audio connector" : "given without an audio connector"));
  VIDAX_CHECK(mask.dim() == 2 && video_features.dim() == 3 && video_features.size(0) == mask.size(0) &&
                  video_features.size(1) == mask.size(1),
              kWho << ": attention_mask " << shape_str(mask.shape()) << " does not match the features "
                   << shape_str(video_features.shape()));
  const int64_t B = mask.size(0), S = mask.size(1);
  const std::vector<double> m = mask.to_f64_vector();
  // _compute_right_pad_order: a stable sort of each row, tokens first.
  std::vector<int64_t> lens(static_cast<size_t>(B));
  std::vector<std::vector<int64_t>> order(static_cast<size_t>(B));
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t t = 0; t < S; ++t) {
      const double v = m[b * S + t];
      VIDAX_CHECK(v == 0 || v == 1, kWho << ": attention_mask holds " << v << " (expected 0 or 1)");
      if (v == 1) order[b].push_back(t);
    }
    lens[b] = static_cast<int64_t>(order[b].size());
    VIDAX_CHECK(lens[b] > 0, kWho << ": attention_mask row " << b << " has no tokens");
    for (int64_t t = 0; t < S; ++t)
      if (m[b * S + t] == 0) order[b].push_back(t);
  }
  auto reorder = [&](const Tensor& f) {
    VIDAX_CHECK(f.dim() == 3 && f.size(0) == B && f.size(1) == S,
                kWho << ": features " << shape_str(f.shape()) << " do not match the mask [" << B << ", " << S << "]");
    std::vector<Tensor> rows;
    for (int64_t b = 0; b < B; ++b) {
      const Tensor table = f.slice(0, b, b + 1).reshape({S, f.size(2)});
      rows.push_back(ops::embedding(Tensor::from_i64(order[b], {1, S}), table));
    }
    return ops::concat(rows, 0);
  };
  TextContext out;
  // The connector's returned mask is all zeros (registers) or 0 / -finfo.max; binary = mask < 1e-6
  // is 1 everywhere either way: the product leaves the video context as it is.
  out.mask = Tensor::from_i64(std::vector<int64_t>(static_cast<size_t>(B * S), 1), {B, S});
  out.video = video.forward(reorder(video_features), lens);
  if (audio) out.audio = audio->forward(reorder(*audio_features), lens);
  return out;
}

namespace {

parity::Produced run_connector(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.precision.empty() || opt.precision == "fp32",
              "ltx2.text.connector parity: only fp32 is supported, found '" << opt.precision << "'");
  VIDAX_CHECK(opt.mesh.empty() && opt.loras.empty() && opt.quantize.empty() && (opt.device.empty() || opt.device == "cpu"),
              "ltx2.text.connector parity: --mesh, --lora, --quantize and --device are not supported");
  VIDAX_CHECK(g.config.is_object() && g.config.contains("video"),
              g.path << ": config must hold video (and audio) connector args, found " << g.config.dump());
  std::map<std::string, Tensor> params;
  for (const std::string& n : g.file.names())
    if (!translate::is_golden_io_key(n)) params[n] = g.file.get(n);
  nn::ParamSource src = nn::ParamSource::from_map(std::move(params), g.path);
  const EmbeddingsConnector video(ConnectorConfig::from_json(g.config.at("video")), src, "video_connector.");
  std::optional<EmbeddingsConnector> audio;
  if (g.config.contains("audio") && !g.config.at("audio").is_null())
    audio.emplace(ConnectorConfig::from_json(g.config.at("audio")), src, "audio_connector.");
  src.expect_all_taken();
  std::optional<Tensor> audio_features;
  if (audio) audio_features = g.input("audio_features");
  const TextContext c = create_embeddings(video, audio ? &*audio : nullptr, g.input("video_features"), audio_features,
                                          g.input("attention_mask"));
  parity::Produced out{{"output.video", c.video}, {"output.mask", c.mask}};
  if (audio) out["output.audio"] = c.audio;
  return out;
}

}  // namespace

void register_connector_parity_kind() {
  static std::once_flag once;
  std::call_once(once, [] { parity::register_kind("ltx2.text.connector", run_connector); });
}

}  // namespace vidax::ltx2
