// The LTX-2 bundled checkpoint and the Gemma folder (checkpoint.h).
#include "models/ltx2/checkpoint.h"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "io/checkpoint.h"
#include "translate/component.h"
#include "translate/source.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace vidax::ltx2 {

namespace {

json read_json_file(const fs::path& p) {
  std::ifstream is(p);
  VIDAX_CHECK(is.is_open(), "cannot read " << p.string());
  const json j = json::parse(is, nullptr, /*allow_exceptions=*/false);
  VIDAX_CHECK(!j.is_discarded(), p.string() << ": malformed JSON");
  return j;
}

bool is_gemma3_folder(const fs::path& dir) {
  std::error_code ec;
  if (!fs::is_regular_file(dir / "config.json", ec)) return false;
  std::ifstream is(dir / "config.json");
  const json j = json::parse(is, nullptr, false);
  if (!j.is_object()) return false;
  const std::string type = j.value("model_type", std::string());
  return type == "gemma3" || type == "gemma3_text";
}

}  // namespace

std::vector<int64_t> parse_model_version(const std::string& version) {
  // ltx_core.loader.parse_model_version on the "-" -> "." normalized string: the leading numeric
  // components ("2.3.rc1" -> (2, 3)).
  std::vector<int64_t> out;
  std::string v = version;
  std::replace(v.begin(), v.end(), '-', '.');
  size_t i = 0;
  while (i < v.size()) {
    size_t j = v.find('.', i);
    if (j == std::string::npos) j = v.size();
    const std::string part = v.substr(i, j - i);
    if (part.empty() || part.find_first_not_of("0123456789") != std::string::npos) break;
    out.push_back(std::stoll(part));
    i = j + 1;
  }
  return out;
}

CheckpointFiles read_checkpoint_header(const std::string& path) {
  const io::Checkpoint ck = io::Checkpoint::open(path);
  CheckpointFiles f;
  f.checkpoint = path;
  const auto& meta = ck.metadata();
  if (auto it = meta.find("config"); it != meta.end()) {
    f.config = json::parse(it->second, nullptr, false);
    VIDAX_CHECK(!f.config.is_discarded() && f.config.is_object(),
                path << ": the metadata's \"config\" is not a JSON object");
  }
  if (auto it = meta.find("model_version"); it != meta.end()) f.model_version = it->second;
  return f;
}

CheckpointFiles find_checkpoint(const std::string& dir, bool distilled) {
  std::error_code ec;
  VIDAX_CHECK(fs::is_directory(dir, ec), "LTX-2: weights directory " << dir << " does not exist");
  std::vector<fs::path> files, gemmas;
  for (const auto& e : fs::directory_iterator(dir, ec)) {
    if (e.is_regular_file() && e.path().extension() == ".safetensors") files.push_back(e.path());
    if (e.is_directory() && is_gemma3_folder(e.path())) gemmas.push_back(e.path());
  }
  std::sort(files.begin(), files.end());
  std::sort(gemmas.begin(), gemmas.end());
  std::vector<CheckpointFiles> found;
  std::string others;
  for (const fs::path& p : files) {
    CheckpointFiles f = read_checkpoint_header(p.string());
    if (f.config.is_object() && f.config.contains("transformer"))
      found.push_back(std::move(f));
    else
      others += (others.empty() ? "" : ", ") + p.filename().string();
  }
  VIDAX_CHECK(!found.empty(), "LTX-2: " << dir
                                        << " holds no LTX-2 checkpoint (a .safetensors whose metadata \"config\" has "
                                           "a \"transformer\", e.g. ltx-2.3-22b-dev.safetensors)"
                                        << (others.empty() ? std::string() : "; found only " + others));
  if (found.size() > 1) {  // the dev and the distilled checkpoint side by side (MODELS-LTX-2.3.md): the dev one
    std::vector<CheckpointFiles> dev;
    for (auto& f : found)
      if ((fs::path(f.checkpoint).filename().string().find("distilled") != std::string::npos) == distilled)
        dev.push_back(f);
    if (dev.size() == 1) found = std::move(dev);
  }
  if (found.size() > 1) {
    std::string names;
    for (const auto& f : found) names += "\n  " + f.checkpoint;
    throw Error(msg() << "LTX-2: " << dir << " holds " << found.size()
                      << " LTX-2 checkpoints; keep one per folder (which one to run is otherwise a guess):" << names);
  }
  VIDAX_CHECK(!gemmas.empty(), "LTX-2: " << dir
                                         << " has no Gemma-3 folder beside " << fs::path(found[0].checkpoint).filename().string()
                                         << " (a subfolder with a Gemma-3 config.json, tokenizer.json and weights, e.g. "
                                            "gemma-3-12b-it-qat-q4_0-unquantized/ as MODELS-LTX-2.3.md links it)");
  VIDAX_CHECK(gemmas.size() == 1, "LTX-2: " << dir << " has " << gemmas.size() << " Gemma-3 folders ("
                                            << gemmas[0].filename().string() << ", " << gemmas[1].filename().string()
                                            << "); keep one");
  CheckpointFiles out = std::move(found[0]);
  out.gemma_root = gemmas[0].string();
  std::string missing;
  for (const char* n : {"tokenizer.json", "tokenizer_config.json"})
    if (!fs::is_regular_file(gemmas[0] / n, ec)) missing += "\n  " + (gemmas[0] / n).string();
  VIDAX_CHECK(missing.empty(), "LTX-2: the Gemma-3 folder is missing:" << missing);
  for (const char* part : {"vae", "audio_vae", "vocoder"})
    VIDAX_CHECK(out.config.contains(part), "LTX-2: " << out.checkpoint << ": the metadata config has no \"" << part
                                                     << "\" (a bundled checkpoint holds the DiT, both VAEs and the "
                                                        "vocoder; split files are not read yet)");
  return out;
}

ConnectorConfig video_connector_config(const json& t) {
  ConnectorConfig c;
  c.rope_type = t.value("rope_type", std::string("split")) == "interleaved" ? RopeLayout::Interleaved : RopeLayout::Split;
  VIDAX_CHECK(t.value("rope_type", std::string("split")) == "split" || t.value("rope_type", std::string()) == "interleaved",
              "LTX-2: transformer rope_type " << t.at("rope_type").dump() << " (split or interleaved)");
  c.double_precision_rope = t.contains("frequencies_precision") && t.at("frequencies_precision") == "float64";
  c.positional_embedding_max_pos =
      t.value("connector_positional_embedding_max_pos", std::vector<int64_t>{1});
  c.num_attention_heads = t.value("connector_num_attention_heads", int64_t{30});
  c.attention_head_dim = t.value("connector_attention_head_dim", int64_t{128});
  c.num_layers = t.value("connector_num_layers", int64_t{2});
  c.apply_gated_attention = t.value("connector_apply_gated_attention", false);
  c.ff_bias = t.value("connector_ff_bias", true);
  // num_learnable_registers, positional_embedding_theta: Embeddings1DConnector's defaults (128, 10000).
  VIDAX_CHECK(c.double_precision_rope,
              "LTX-2: the connectors' RoPE is built in fp64 only (transformer frequencies_precision \"float64\"), found "
                  << (t.contains("frequencies_precision") ? t.at("frequencies_precision").dump() : std::string("none")));
  return c;
}

ConnectorConfig audio_connector_config(const json& t) {
  ConnectorConfig c = video_connector_config(t);
  c.num_attention_heads = t.value("audio_connector_num_attention_heads", c.num_attention_heads);
  c.attention_head_dim = t.value("audio_connector_attention_head_dim", c.attention_head_dim);
  c.num_layers = t.value("audio_connector_num_layers", c.num_layers);
  return c;
}

FeatureExtractorVersion feature_extractor_version_of(const json& t) {
  static const std::vector<std::pair<std::string, bool>> v2 = {{"caption_proj_before_connector", true},
                                                               {"caption_projection_first_linear", false},
                                                               {"caption_proj_input_norm", false},
                                                               {"caption_projection_second_linear", false}};
  std::string present, missing, wrong;
  for (const auto& [k, want] : v2) {
    if (!t.contains(k)) {
      missing += (missing.empty() ? "" : ", ") + k;
      continue;
    }
    present += k;
    if (t.at(k) != want) wrong += (wrong.empty() ? "" : ", ") + k + "=" + t.at(k).dump();
  }
  if (present.empty()) return FeatureExtractorVersion::V1;
  VIDAX_CHECK(missing.empty(), "LTX-2: partial V2 feature-extractor config in the transformer config: missing " << missing);
  VIDAX_CHECK(wrong.empty(), "LTX-2: unknown feature-extractor config in the transformer config: " << wrong);
  return FeatureExtractorVersion::V2;
}

text::Gemma3Config read_gemma_config(const std::string& gemma_root) {
  return text::Gemma3Config::from_json(read_json_file(fs::path(gemma_root) / "config.json"));
}

std::map<std::string, Tensor> read_gemma_weights(const std::string& gemma_root, const text::Gemma3Config& cfg) {
  std::error_code ec;
  std::string weights;
  if (fs::is_regular_file(fs::path(gemma_root) / "model.safetensors.index.json", ec)) {
    weights = (fs::path(gemma_root) / "model.safetensors.index.json").string();
  } else {
    for (const auto& e : fs::directory_iterator(gemma_root, ec))
      if (e.is_regular_file() && e.path().extension() == ".safetensors") weights = gemma_root;
  }
  VIDAX_CHECK(!weights.empty(), "LTX-2: the Gemma-3 folder " << gemma_root
                                                             << " holds no weights (model.safetensors, or model-*.safetensors "
                                                                "with model.safetensors.index.json)");
  auto src = translate::CheckpointSource::open(weights);
  return translate::load(*src, text::gemma3_component(), cfg.to_json());
}

}  // namespace vidax::ltx2
