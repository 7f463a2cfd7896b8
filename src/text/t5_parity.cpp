// Parity kind `t5.encoder` (DESIGN.md §4): rebuild the encoder from a golden
// file (official T5Encoder names, or transformers T5/UMT5 encoder names, mapped
// by the translator), run input.ids / input.mask, return the full output.
#include "core/error.h"
#include "text/t5_encoder.h"
#include "text/t5_parity.h"
#include "translate/component.h"
#include "text/umt5_keys.h"

namespace vidax::text {

std::map<std::string, Tensor> t5_encoder_weights_from_golden(const std::map<std::string, Tensor>& params,
                                                            const T5EncoderConfig& cfg) {
  // The translator's umt5-encoder component: layout (original / transformers)
  // detected from the keys, strict plan (every key used, every parameter filled).
  translate::MemorySource src("golden parameters");
  for (const auto& [name, t] : params) src.add(name, t);
  return translate::load(src, translate::t5::umt5_component(), cfg.to_json());
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
