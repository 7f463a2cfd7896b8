// Also the parity kind hunyuan1.5.text.byt5 (docs/parity.md; tools/golden/hunyuan15_byt5.py):
// __metadata__.config {byt5_max_length, text_encoder_config (the T5Stack's T5Config), added_tokens};
// parameters under T5Stack's names (layout t5-stack) or the other T5 layouts, strictly;
// input.input_ids, input.attention_mask [1, L] -> output [1, L, d_model] (byt5_model(ids,
// attention_mask=mask.float())[0]); output.attention_mask, when the file has one, is the mask the
// pipeline returns beside the states (the tokenizer's, unchanged).
#include "models/hunyuan15/text_byt5.h"

#include <algorithm>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>

#include "core/error.h"
#include "parity/parity.h"
#include "text/t5_parity.h"
#include "text/text_clean.h"
#include "translate/inspect.h"

namespace vidax::hunyuan15 {

std::vector<std::string> extract_glyph_texts(const std::string& prompt) {
  const std::u32string u = text::utf8_to_u32(prompt);
  std::vector<std::string> found;
  // findall of two alternatives: at each position try "...", then “...”; the closing quote is the
  // first one after the opening with no line break between ("." is not \n); no match: next position.
  const auto close_at = [&](size_t open, char32_t closing) -> size_t {
    for (size_t j = open + 1; j < u.size(); ++j) {
      if (u[j] == U'\n') return std::u32string::npos;
      if (u[j] == closing) return j;
    }
    return std::u32string::npos;
  };
  for (size_t i = 0; i < u.size();) {
    size_t end = std::u32string::npos;
    if (u[i] == U'"') end = close_at(i, U'"');
    else if (u[i] == U'\u201c') end = close_at(i, U'\u201d');
    if (end == std::u32string::npos) {
      ++i;
      continue;
    }
    found.push_back(text::u32_to_utf8(u.substr(i + 1, end - i - 1)));
    i = end + 1;
  }
  if (found.size() <= 1) return found;
  std::vector<std::string> unique;  // list(dict.fromkeys(result))
  for (const std::string& t : found)
    if (std::find(unique.begin(), unique.end(), t) == unique.end()) unique.push_back(t);
  return unique;
}

std::string format_glyph_prompt(const std::vector<std::string>& texts) {
  std::string out;
  for (const std::string& t : texts) out += "Text \"" + t + "\". ";
  return out;
}

std::vector<std::string> glyph_special_tokens(const std::string& color_path, const std::string& font_path) {
  const auto read = [](const std::string& path) {
    std::ifstream f(path);
    VIDAX_CHECK(f, "HunyuanVideo 1.5 glyph assets: cannot open " << path);
    try {
      return nlohmann::ordered_json::parse(f);
    } catch (const nlohmann::json::exception& e) {
      throw Error(msg() << path << " is not JSON: " << e.what());
    }
  };
  const nlohmann::ordered_json colors = read(color_path), fonts = read(font_path);
  VIDAX_CHECK(colors.is_object() && fonts.is_object(),
              "HunyuanVideo 1.5 glyph assets: " << color_path << " and " << font_path << " must be JSON objects");
  std::vector<std::string> out;
  for (size_t i = 0; i < colors.size(); ++i) out.push_back("<color-" + std::to_string(i) + ">");
  for (const auto& [code, idx] : fonts.items()) {
    VIDAX_CHECK(idx.is_number_integer(), font_path << ": font " << code << " has index " << idx.dump());
    out.push_back("<" + code.substr(0, 2) + "-font-" + std::to_string(idx.get<int64_t>()) + ">");
  }
  return out;
}

GlyphEncoding encode_glyph_prompt(const text::ByT5Tokenizer& tokenizer, const text::T5Encoder& encoder,
                                  const std::string& prompt, int64_t max_length) {
  const std::vector<std::string> texts = extract_glyph_texts(prompt);
  if (texts.empty())
    return {Tensor::zeros({1, max_length, kByt5Width}, DType::F32), Tensor::zeros({1, max_length}, DType::I64)};
  const text::TokenizedBatch b = tokenizer.encode_batch({format_glyph_prompt(texts)}, max_length);
  return {encoder.forward(b.ids, b.mask), b.mask};
}

namespace {

constexpr const char* kKind = "hunyuan1.5.text.byt5";

parity::Produced run_byt5(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.mesh.empty(), g.path << ": " << kKind << " runs on a single rank");
  VIDAX_CHECK(opt.precision == "fp32" || opt.precision == "bf16",
              g.path << ": " << kKind << " precision must be fp32 or bf16, found '" << opt.precision << "'");
  VIDAX_CHECK(g.config.contains("text_encoder_config"),
              g.path << ": " << kKind << " needs __metadata__.config.text_encoder_config (the T5 config)");
  const text::T5EncoderConfig cfg = text::T5EncoderConfig::from_json(g.config.at("text_encoder_config"));
  std::map<std::string, Tensor> params;
  for (const std::string& n : g.file.names())
    if (!translate::is_golden_io_key(n)) params.emplace(n, g.file.get(n));
  const std::map<std::string, Tensor> weights = text::t5_encoder_weights_from_golden(params, cfg);
  const text::T5Encoder enc(cfg, [&](const std::string& n) { return weights.at(n); },
                            opt.precision == "bf16" ? DType::BF16 : DType::F32);
  const Tensor ids = g.input("input_ids");
  for (double id : ids.to_f64_vector())
    VIDAX_CHECK(id >= 0 && id < cfg.vocab, g.path << ": token id " << static_cast<int64_t>(id)
                                                  << " outside the vocabulary [0, " << cfg.vocab << ")");
  parity::Produced out;
  out["output"] = enc.forward(ids, g.input("attention_mask")).to(DType::F32);
  // _process_single_byt5_prompt returns the tokenizer's mask with the states (byt5_mask = text_mask).
  if (g.has("output.attention_mask")) out["output.attention_mask"] = g.input("attention_mask");
  return out;
}

}  // namespace

void register_byt5_parity_kind() {
  static std::once_flag once;
  std::call_once(once, [] { parity::register_kind(kKind, run_byt5); });
}

}  // namespace vidax::hunyuan15
