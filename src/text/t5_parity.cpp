// Parity kind `t5.encoder` (DESIGN.md §4): rebuild the encoder from a golden
// file (official T5Encoder names, or transformers T5/UMT5 encoder names mapped
// by the small table below until the translator owns that layout), run
// input.ids / input.mask, return the full output.
#include <regex>
#include <set>

#include "core/error.h"
#include "text/t5_encoder.h"
#include "text/t5_parity.h"

namespace vidax::text {
namespace {

// transformers (T5EncoderModel / UMT5EncoderModel) -> official Wan T5Encoder names.
// TODO(translate): the translator's text_encoder/ key map replaces this table.
struct KeyRule {
  const char* pattern;
  const char* replacement;
};
constexpr KeyRule kTransformersToOfficial[] = {
    {R"(shared\.weight)", "token_embedding.weight"},
    {R"(encoder\.embed_tokens\.weight)", "token_embedding.weight"},
    {R"(encoder\.block\.(\d+)\.layer\.0\.SelfAttention\.([qkvo])\.weight)", "blocks.$1.attn.$2.weight"},
    {R"(encoder\.block\.(\d+)\.layer\.0\.SelfAttention\.relative_attention_bias\.weight)",
     "blocks.$1.pos_embedding.embedding.weight"},
    {R"(encoder\.block\.(\d+)\.layer\.0\.layer_norm\.weight)", "blocks.$1.norm1.weight"},
    {R"(encoder\.block\.(\d+)\.layer\.1\.DenseReluDense\.wi_0\.weight)", "blocks.$1.ffn.gate.0.weight"},
    {R"(encoder\.block\.(\d+)\.layer\.1\.DenseReluDense\.wi_1\.weight)", "blocks.$1.ffn.fc1.weight"},
    {R"(encoder\.block\.(\d+)\.layer\.1\.DenseReluDense\.wo\.weight)", "blocks.$1.ffn.fc2.weight"},
    {R"(encoder\.block\.(\d+)\.layer\.1\.layer_norm\.weight)", "blocks.$1.norm2.weight"},
    {R"(encoder\.final_layer_norm\.weight)", "norm.weight"},
};

bool is_transformers_layout(const std::map<std::string, Tensor>& params) {
  return params.count("shared.weight") || params.count("encoder.embed_tokens.weight");
}

std::optional<std::string> map_transformers_name(const std::string& name, const T5EncoderConfig& cfg) {
  for (const auto& rule : kTransformersToOfficial) {
    std::regex re(rule.pattern);
    if (!std::regex_match(name, re)) continue;
    std::string mapped = std::regex_replace(name, re, rule.replacement);
    // T5 v1.1 keeps its one shared table in block 0's attention.
    if (cfg.shared_pos && mapped == "blocks.0.pos_embedding.embedding.weight") mapped = "pos_embedding.embedding.weight";
    return mapped;
  }
  return std::nullopt;
}

}  // namespace

std::map<std::string, Tensor> t5_encoder_weights_from_golden(const std::map<std::string, Tensor>& params,
                                                            const T5EncoderConfig& cfg) {
  std::map<std::string, Tensor> engine;
  std::vector<std::string> unmatched;
  const bool hf = is_transformers_layout(params);
  for (const auto& [name, t] : params) {
    std::string mapped = name;
    if (hf) {
      auto m = map_transformers_name(name, cfg);
      if (!m) {
        unmatched.push_back(name + " " + shape_str(t.shape()));
        continue;
      }
      mapped = *m;
    }
    if (auto it = engine.find(mapped); it != engine.end()) {
      // Only the tied embedding may appear twice (shared + encoder.embed_tokens); it must be the same table.
      VIDAX_CHECK(mapped == "token_embedding.weight" && it->second.to_f32_vector() == t.to_f32_vector(),
                  "t5 weights: two checkpoint tensors map to " << mapped << " and differ");
      continue;
    }
    engine.emplace(mapped, t);
  }
  std::set<std::string> expected;
  for (const auto& n : t5_encoder_parameter_names(cfg)) expected.insert(n);
  for (const auto& [name, t] : engine)
    if (!expected.count(name)) unmatched.push_back(name + " " + shape_str(t.shape()));
  std::vector<std::string> missing;
  for (const auto& n : expected)
    if (!engine.count(n)) missing.push_back(n);
  if (!unmatched.empty() || !missing.empty()) {
    msg m;
    m << "t5 weights do not match the " << (cfg.shared_pos ? "T5 (shared_pos)" : "UMT5") << " encoder config ("
      << (hf ? "transformers" : "official") << " layout):";
    for (const auto& u : unmatched) m << "\n  unused checkpoint tensor: " << u;
    for (const auto& n : missing) m << "\n  missing engine parameter: " << n;
    throw Error(m.str());
  }
  return engine;
}

std::map<std::string, Tensor> run_t5_golden(const io::Checkpoint& file, const nlohmann::json& config,
                                            const std::string& precision, const std::string& path) {
  try {
    T5EncoderConfig cfg = T5EncoderConfig::from_json(config);
    std::map<std::string, Tensor> params;
    for (const std::string& name : file.names()) {
      if (name.rfind("input.", 0) == 0 || name.rfind("output", 0) == 0 || name.rfind("inter.", 0) == 0) continue;
      params.emplace(name, file.get(name));
    }
    auto weights = t5_encoder_weights_from_golden(params, cfg);
    VIDAX_CHECK(precision == "fp32" || precision == "bf16", "precision must be fp32 or bf16, got " << precision);
    DType dtype = precision == "bf16" ? DType::BF16 : DType::F32;
    T5Encoder enc(cfg, [&](const std::string& n) { return weights.at(n); }, dtype);
    VIDAX_CHECK(file.contains("input.ids") && file.contains("input.mask"), "needs input.ids and input.mask");
    Tensor out = enc.forward(file.get("input.ids"), file.get("input.mask"));
    return {{"output", out.to(DType::F32)}};
  } catch (const Error& e) {
    throw Error(msg() << path << " (t5.encoder): " << e.what());
  }
}

}  // namespace vidax::text
