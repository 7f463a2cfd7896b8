// Kind ltx2.text.gemma3 (docs/parity.md): Gemma-3 hidden states -> feature extractor, against
// tools/golden/ltx2_text.py (the official LTXGemmaTextEncoder.encode + FeatureExtractorV1/V2).
#include <map>
#include <mutex>
#include <set>

#include "core/error.h"
#include "models/ltx2/text_connector.h"
#include "models/ltx2/text_encoder.h"
#include "parity/parity.h"
#include "text/gemma3_encoder.h"
#include "translate/inspect.h"

namespace vidax::ltx2 {
namespace {

// A lookup over `params` that records what it hands out, for the strict unused-parameter check.
struct Recorder {
  const std::map<std::string, Tensor>& params;
  std::set<std::string> taken;
  Tensor operator()(const std::string& name) {
    auto it = params.find(name);
    if (it == params.end()) return {};
    taken.insert(name);
    return it->second;
  }
};

parity::Produced run_text(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.precision.empty() || opt.precision == "fp32" || opt.precision == "bf16",
              "ltx2.text.gemma3 parity: precision fp32 or bf16, found '" << opt.precision << "'");
  const DType compute = opt.precision == "bf16" ? DType::BF16 : DType::F32;
  VIDAX_CHECK(opt.mesh.empty(), "ltx2.text.gemma3 parity: runs on a single rank (mesh '" << opt.mesh << "' given)");
  VIDAX_CHECK(opt.loras.empty() && opt.quantize.empty() && (opt.device.empty() || opt.device == "cpu"),
              "ltx2.text.gemma3 parity: --lora, --quantize and --device are not supported");
  VIDAX_CHECK(g.config.is_object() && g.config.contains("text_config") && g.config.contains("feature_extractor"),
              g.path << ": config must hold text_config and feature_extractor, found " << g.config.dump());
  const text::Gemma3Config cfg = text::Gemma3Config::from_json(g.config.at("text_config"));
  const FeatureExtractorVersion version = feature_extractor_version(g.config.at("feature_extractor").get<std::string>());
  const std::string fe_prefix = "feature_extractor.";
  const bool with_context = g.config.contains("connectors");
  std::map<std::string, Tensor> lm, fe, conn;
  for (const std::string& n : g.file.names()) {
    if (translate::is_golden_io_key(n)) continue;
    if (n.rfind(fe_prefix, 0) == 0)
      fe[n.substr(fe_prefix.size())] = g.file.get(n);
    else if (with_context && (n.rfind("video_connector.", 0) == 0 || n.rfind("audio_connector.", 0) == 0))
      conn[n] = g.file.get(n);
    else
      lm[n] = g.file.get(n);
  }
  Recorder lm_rec{lm, {}}, fe_rec{fe, {}};
  const text::Gemma3TextEncoder encoder(cfg, std::ref(lm_rec), compute);
  const FeatureExtractor extractor(version, cfg, std::ref(fe_rec));
  for (const auto& [rec, prefix] : {std::pair{&lm_rec, std::string()}, std::pair{&fe_rec, fe_prefix}})
    for (const auto& [name, t] : rec->params)
      VIDAX_CHECK(rec->taken.count(name), g.path << ": parameter '" << prefix << name << "' is not used by the model");
  const Tensor mask = g.input("attention_mask");
  const TextFeatures f = extractor.forward(encoder.hidden_states(g.input("input_ids"), mask), mask);
  parity::Produced out{{"output.video", f.video}, {"output.audio", f.audio}};
  if (with_context) {
    // EmbeddingsProcessor.process_hidden_states: the features through the connectors.
    const nlohmann::json& c = g.config.at("connectors");
    VIDAX_CHECK(c.is_object() && c.contains("video") && c.contains("audio") && !c.at("audio").is_null(),
                g.path << ": config.connectors must hold video and audio connector args, found " << c.dump());
    nn::ParamSource src = nn::ParamSource::from_map(std::move(conn), g.path);
    const EmbeddingsConnector video(ConnectorConfig::from_json(c.at("video")), src, "video_connector.");
    const EmbeddingsConnector audio(ConnectorConfig::from_json(c.at("audio")), src, "audio_connector.");
    src.expect_all_taken();
    const TextContext ctx = create_embeddings(video, &audio, f.video, f.audio, mask);
    out["output.video_context"] = ctx.video;
    out["output.audio_context"] = ctx.audio;
    out["output.context_mask"] = ctx.mask;
  }
  return out;
}

}  // namespace

void register_text_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] { parity::register_kind("ltx2.text.gemma3", run_text); });
}

}  // namespace vidax::ltx2
