// Parity kind hunyuan1.5.text.qwen (docs/parity.md): the official TextEncoder.encode of
// HunyuanVideo 1.5 on a golden's token ids (tools/golden/hunyuan15_text.py). __metadata__.config
// holds the TextEncoder args (text_encoder_type "llm", max_length = text_len,
// hidden_state_skip_layer, apply_final_norm, use_attention_mask, prompt_template {name,
// crop_start}) and text_encoder_config, the Qwen2.5-VL config.json; the parameters are loaded from
// the file through the translator (layout detected among the text component's, strictly).
//   input.input_ids, input.attention_mask [B, text_len + crop_start] -> output (the hidden state,
//   cropped: [B, text_len, hidden]), output.attention_mask (the cropped mask; absent when
//   use_attention_mask is false)
#include <mutex>

#include "models/hunyuan15/text_encoder.h"
#include "parity/parity.h"
#include "translate/config_fields.h"
#include "translate/inspect.h"
#include "translate/source.h"

namespace vidax::hunyuan15 {
namespace {

constexpr const char* kKind = "hunyuan1.5.text.qwen";

parity::Produced run_qwen(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.mesh.empty(), g.path << ": " << kKind << " runs on a single rank");
  DType compute = DType::F32;
  if (opt.precision == "bf16")
    compute = DType::BF16;
  else
    VIDAX_CHECK(opt.precision == "fp32",
                g.path << ": " << kKind << " precision must be fp32 or bf16, found '" << opt.precision << "'");
  const auto type = g.config.find("text_encoder_type");
  VIDAX_CHECK(type == g.config.end() || *type == "llm",
              g.path << ": " << kKind << " runs text_encoder_type 'llm', the file says " << type->dump());
  VIDAX_CHECK(g.config.contains("text_encoder_config"),
              g.path << ": " << kKind << " needs __metadata__.config.text_encoder_config (the Qwen2.5-VL config.json)");
  const text::Qwen25VLTextConfig cfg = text::Qwen25VLTextConfig::from_json(g.config.at("text_encoder_config"));
  const hunyuan::LlmEncodeOptions enc = encode_options(g.config);
  translate::MemorySource src(g.path);
  for (const std::string& n : g.file.names())
    if (!translate::is_golden_io_key(n)) src.add(n, g.file.get(n));
  const std::map<std::string, Tensor> params = translate::load(src, text::qwen25_vl_text_component(), cfg.to_json());
  const text::LlamaTextEncoder llm(cfg.llama, [&](const std::string& n) { return params.at(n); }, compute);
  const hunyuan::LlmEncoding e = hunyuan::encode_llm(llm, g.input("input_ids"), g.input("attention_mask"), enc);
  parity::Produced out;
  out["output"] = e.hidden_state.to(DType::F32);
  if (e.attention_mask) out["output.attention_mask"] = *e.attention_mask;
  return out;
}

}  // namespace

void register_text_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] { parity::register_kind(kKind, run_qwen); });
}

}  // namespace vidax::hunyuan15
