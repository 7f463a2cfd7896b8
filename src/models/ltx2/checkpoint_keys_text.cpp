// The text side of the bundled LTX-2 checkpoint as the translator sees it (checkpoint_keys.h): the
// embeddings connectors and the feature extractor's projection, the parts ltx-core's
// EMBEDDINGS_PROCESSOR_KEY_OPS takes from the single file.

#include "models/ltx2/checkpoint.h"
#include "models/ltx2/checkpoint_keys.h"
#include "models/ltx2/text_connector.h"
#include "translate/config_fields.h"

namespace vidax::ltx2 {

using translate::Json;
using translate::KeyMap;
using translate::ParamSpec;

namespace {

// ParamSpec of whatever `build` takes from a generated (Meta) source: the names and shapes are the
// modules' own, so the list cannot drift from what the loader reads.
template <class Build>
ParamSpec probe_params(const Build& build) {
  ParamSpec s;
  nn::ParamSource probe = nn::ParamSource::generated(
      [&s](const std::string& name, const Shape& shape) {
        s.add(name, shape);
        return Tensor::empty(shape, DType::F32, Device::Meta);
      },
      "shapes");
  build(probe);
  return s;
}

// ===========================================================================
// The embeddings connectors
// ===========================================================================

Json connector_json(const ConnectorConfig& c) {
  return Json{{"attention_head_dim", c.attention_head_dim},
              {"num_attention_heads", c.num_attention_heads},
              {"num_layers", c.num_layers},
              {"positional_embedding_theta", c.positional_embedding_theta},
              {"positional_embedding_max_pos", c.positional_embedding_max_pos},
              {"num_learnable_registers", c.num_learnable_registers},
              {"rope_type", c.rope_type == RopeLayout::Split ? "split" : "interleaved"},
              {"double_precision_rope", c.double_precision_rope},
              {"apply_gated_attention", c.apply_gated_attention},
              {"ff_bias", c.ff_bias}};
}

// {"video": ..., "audio": ...} from the checkpoint metadata's transformer dict, as
// Embeddings1DConnectorConfigurator / AudioEmbeddings1DConnectorConfigurator read it.
Json connectors_json_of_transformer(const Json& t) {
  return Json{{"video", connector_json(video_connector_config(t))}, {"audio", connector_json(audio_connector_config(t))}};
}

const char* const kStreams[] = {"video", "audio"};

// engine (EmbeddingsProcessor's module names) <- the single file's (EMBEDDINGS_PROCESSOR_KEY_OPS).
const translate::SuffixTable kConnectorCheckpoint = {
    {"video_connector.{x*}", "model.diffusion_model.video_embeddings_connector.{x}"},
    {"audio_connector.{x*}", "model.diffusion_model.audio_embeddings_connector.{x}"},
};

class ConnectorsComponent : public translate::Component {
 public:
  std::string name() const override { return "ltx2-text-connectors"; }
  std::string family() const override { return "ltx2"; }
  std::vector<std::string> layouts() const override { return {"original", "checkpoint"}; }
  // Embeddings1DConnector's defaults for both streams (what detection matches names against).
  Json default_config() const override { return connectors_json_of_transformer(Json{{"frequencies_precision", "float64"}}); }
  std::optional<Json> read_config(const Json& j) const override {
    if (!j.is_object()) return std::nullopt;
    // The connectors' own config (the ltx2.text.connector goldens): {"video": {...}[, "audio": {...}]}.
    if (translate::has(j, "video") && j["video"].is_object() && !translate::has(j, "transformer")) {
      Json out{{"video", connector_json(ConnectorConfig::from_json(j["video"]))}};
      if (translate::has(j, "audio") && j["audio"].is_object())
        out["audio"] = connector_json(ConnectorConfig::from_json(j["audio"]));
      return out;
    }
    // The checkpoint metadata's whole config, or its transformer dict; an audio-video model's only
    // (a video-only one stores a single `embeddings_connector.`, not built here).
    const Json* t = translate::has(j, "transformer") && j["transformer"].is_object() ? &j["transformer"] : &j;
    if (!translate::has(*t, "audio_num_attention_heads") && !translate::has(*t, "connector_num_layers")) return std::nullopt;
    if (translate::has(*t, "model_type") && t->at("model_type") != model_type_name(ModelType::AudioVideo))
      return std::nullopt;
    return connectors_json_of_transformer(*t);
  }
  // From the shapes: each stream's width (its first query), layer count, gates (their rows are the
  // heads; without them 128-wide heads, as the published connectors), registers and FFN biases.
  // RoPE settings are not in the shapes: Embeddings1DConnector's defaults.
  Json infer_config(const translate::TensorSource& src, const std::string& layout) const override {
    const KeyMap m = keymap(layout, Json());
    Json out = Json::object();
    const Json dflt = default_config();
    for (const char* s : kStreams) {
      const std::string p = std::string(s) + "_connector.", b0 = p + "transformer_1d_blocks.0.attn1.";
      const translate::TensorInfo* q = translate::find_param(src, m, b0 + "to_q.weight");
      if (!q || q->shape.size() != 2) continue;
      Json c = dflt.at(s);
      const int64_t d = q->shape[0];
      const translate::TensorInfo* gate = translate::find_param(src, m, b0 + "to_gate_logits.weight");
      const int64_t heads = gate && !gate->shape.empty() ? gate->shape[0] : (d % 128 == 0 ? d / 128 : 1);
      c["num_attention_heads"] = heads;
      c["attention_head_dim"] = d / heads;
      c["apply_gated_attention"] = gate != nullptr;
      c["num_layers"] = translate::count_layers(src, m, "attn1.to_q.weight", p + "transformer_1d_blocks.");
      const translate::TensorInfo* reg = translate::find_param(src, m, p + "learnable_registers");
      c["num_learnable_registers"] = reg && !reg->shape.empty() ? reg->shape[0] : 0;
      c["ff_bias"] = translate::find_param(src, m, p + "transformer_1d_blocks.0.ff.net.0.proj.bias") != nullptr;
      out[s] = c;
    }
    return out.empty() ? dflt : out;
  }
  ParamSpec params(const Json& cfg) const override {
    return probe_params([&](nn::ParamSource& src) {
      for (const char* s : kStreams)
        if (translate::has(cfg, s)) (void)EmbeddingsConnector(ConnectorConfig::from_json(cfg.at(s)), src, std::string(s) + "_connector.");
    });
  }
  KeyMap keymap(const std::string& layout, const Json&) const override {
    if (layout == "original") return translate::original_identity();
    VIDAX_CHECK(layout == "checkpoint", name() << ": unknown layout '" << layout << "' (original, checkpoint)");
    KeyMap m{"checkpoint", {}, {}};
    translate::add_nested(m.rules, "", "", kConnectorCheckpoint);
    return m;
  }
  std::string variant(const Json& cfg) const override { return cfg == default_config() ? "ltx-2" : "custom"; }
};

// ===========================================================================
// The feature extractor's projection
// ===========================================================================

// Gemma-3-12B's text model (google/gemma-3-12b-it): hidden 3840, 48 layers (+ the embeddings: 49
// states); LTX-2.3 22B's DiT widths 4096 (video) and 2048 (audio).
constexpr int64_t kGemmaHidden = 3840, kGemmaStates = 49, kVideoInner = 4096, kAudioInner = 2048;

// Two components, as the vocoder's (detection matches names with each one's default config): V2
// (LTX-2.3) and V1 (LTX-2.0).
class ProjectionComponent : public translate::Component {
 public:
  explicit ProjectionComponent(bool v1) : v1_(v1) {}
  std::string name() const override { return v1_ ? "ltx2-text-projection-v1" : "ltx2-text-projection"; }
  std::string family() const override { return "ltx2"; }
  std::vector<std::string> layouts() const override { return {"original", "checkpoint"}; }
  // Gemma-3-12B's widths: V2 into LTX-2.3 22B's 4096 / 2048, V1 back to Gemma's 3840.
  Json default_config() const override {
    if (v1_) return Json{{"feature_extractor", "v1"}, {"flat_dim", kGemmaHidden * kGemmaStates}, {"embedding_dim", kGemmaHidden}};
    return Json{{"feature_extractor", "v2"},
                {"flat_dim", kGemmaHidden * kGemmaStates},
                {"video_inner_dim", kVideoInner},
                {"audio_inner_dim", kAudioInner}};
  }
  // Its own config only: the flat width is Gemma's (hidden x (layers + 1)), which the checkpoint's
  // metadata does not hold, so a checkpoint's projection is read from its shapes.
  std::optional<Json> read_config(const Json& j) const override {
    if (!j.is_object() || !translate::has(j, "flat_dim") || !translate::has(j, "feature_extractor") ||
        j["feature_extractor"] != (v1_ ? "v1" : "v2"))
      return std::nullopt;
    return j;
  }
  // _create_feature_extractor's shapes: V1 aggregate_embed [hidden, flat] (no bias), V2
  // video_ / audio_aggregate_embed [inner, flat] with biases.
  Json infer_config(const translate::TensorSource& src, const std::string& layout) const override {
    const KeyMap m = keymap(layout, Json());
    auto shape = [&](const std::string& n) -> Shape {
      const translate::TensorInfo* t = translate::find_param(src, m, n);
      return t ? t->shape : Shape{};
    };
    Json c = default_config();
    if (v1_) {
      if (const Shape w = shape("aggregate_embed.weight"); w.size() == 2) c["flat_dim"] = w[1], c["embedding_dim"] = w[0];
      return c;
    }
    if (const Shape v = shape("video_aggregate_embed.weight"); v.size() == 2) c["flat_dim"] = v[1], c["video_inner_dim"] = v[0];
    if (const Shape a = shape("audio_aggregate_embed.weight"); a.size() == 2) c["audio_inner_dim"] = a[0];
    return c;
  }
  ParamSpec params(const Json& cfg) const override {
    const int64_t flat = cfg.at("flat_dim").get<int64_t>();
    ParamSpec s;
    if (v1_) {
      s.add("aggregate_embed.weight", {cfg.at("embedding_dim").get<int64_t>(), flat});
      return s;
    }
    for (const char* st : kStreams) {
      const int64_t d = cfg.at(std::string(st) + "_inner_dim").get<int64_t>();
      s.add(std::string(st) + "_aggregate_embed.weight", {d, flat});
      s.add(std::string(st) + "_aggregate_embed.bias", {d});
    }
    return s;
  }
  KeyMap keymap(const std::string& layout, const Json&) const override {
    if (layout == "original") return translate::original_identity();
    VIDAX_CHECK(layout == "checkpoint", name() << ": unknown layout '" << layout << "' (original, checkpoint)");
    return translate::with_key_prefix(translate::original_identity(), "text_embedding_projection.", "checkpoint");
  }
  std::string variant(const Json& cfg) const override {
    return cfg == default_config() ? (v1_ ? "ltx-2" : "ltx-2.3") : "custom";
  }

 private:
  bool v1_;
};

}  // namespace

const translate::Component& text_connectors_component() {
  static const ConnectorsComponent c;
  return c;
}
const translate::Component& text_projection_component() {
  static const ProjectionComponent c(false);
  return c;
}
const translate::Component& text_projection_v1_component() {
  static const ProjectionComponent c(true);
  return c;
}

}  // namespace vidax::ltx2
