// Parity kinds hunyuan.text.llama and hunyuan.text.clip (docs/parity.md): the official
// TextEncoder.encode on a golden's token ids. __metadata__.config holds TextEncoder's init args
// (text_encoder_type, max_length, hidden_state_skip_layer, apply_final_norm, use_attention_mask,
// prompt_template) and text_encoder_config, the model's transformers config; the parameters are
// loaded from the file through the translator (layout detected, strict).
//   llama: input.input_ids, input.attention_mask -> output (hidden_state, cropped),
//          output.attention_mask (the cropped mask; absent when use_attention_mask is false)
//   clip:  input.input_ids, input.attention_mask -> output (the pooled output),
//          inter.last_hidden_state (the final norm's output)
#include <mutex>

#include "backend/ops.h"
#include "models/hunyuan/text_encoder.h"
#include "parity/parity.h"
#include "translate/config_fields.h"
#include "translate/inspect.h"
#include "translate/source.h"

namespace vidax::hunyuan {
namespace {

DType compute_of(const parity::Options& opt, const char* kind) {
  if (opt.precision == "fp32") return DType::F32;
  if (opt.precision == "bf16") return DType::BF16;
  throw Error(msg() << kind << " parity: precision must be fp32 or bf16, found '" << opt.precision << "'");
}

std::map<std::string, Tensor> load_params(const parity::Golden& g, const translate::Component& comp,
                                          const nlohmann::json& cfg) {
  translate::MemorySource src(g.path);
  for (const std::string& n : g.file.names())
    if (!translate::is_golden_io_key(n)) src.add(n, g.file.get(n));
  return translate::load(src, comp, cfg);
}

const nlohmann::json& model_config(const parity::Golden& g) {
  VIDAX_CHECK(g.config.is_object() && g.config.contains("text_encoder_config"),
              g.path << ": " << g.kind << " needs __metadata__.config.text_encoder_config (the model's config.json)");
  return g.config.at("text_encoder_config");
}

void check_type(const parity::Golden& g, const char* want) {
  const auto it = g.config.find("text_encoder_type");
  VIDAX_CHECK(it == g.config.end() || (it->is_string() && it->get<std::string>() == want),
              g.path << ": " << g.kind << " runs text_encoder_type '" << want << "', the file says " << it->dump());
}

parity::Produced run_llama(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.mesh.empty(), g.path << ": hunyuan.text.llama runs on a single rank");
  check_type(g, "llm");
  const text::LlamaConfig cfg = text::LlamaConfig::from_json(model_config(g));
  const LlmEncodeOptions enc_opt = LlmEncodeOptions::from_json(g.config);
  const std::map<std::string, Tensor> params = load_params(g, text::llama_component(), cfg.to_json());
  const text::LlamaTextEncoder llm(cfg, [&](const std::string& n) { return params.at(n); },
                                   compute_of(opt, "hunyuan.text.llama"));
  const LlmEncoding e = encode_llm(llm, g.input("input_ids"), g.input("attention_mask"), enc_opt);
  parity::Produced out;
  out["output"] = e.hidden_state.to(DType::F32);
  if (e.attention_mask) out["output.attention_mask"] = *e.attention_mask;
  return out;
}

parity::Produced run_clip(const parity::Golden& g, const parity::Options& opt) {
  VIDAX_CHECK(opt.mesh.empty(), g.path << ": hunyuan.text.clip runs on a single rank");
  check_type(g, "clipL");
  const text::ClipTextConfig cfg = text::ClipTextConfig::from_json(model_config(g));
  const std::map<std::string, Tensor> params = load_params(g, text::clip_text_component(), cfg.to_json());
  const text::ClipTextEncoder clip(cfg, [&](const std::string& n) { return params.at(n); },
                                   compute_of(opt, "hunyuan.text.clip"));
  const bool use_mask = translate::value_or<bool>(g.config, "use_attention_mask", true);
  std::optional<Tensor> mask;
  if (use_mask) mask = g.input("attention_mask");
  const text::ClipTextOutput o = clip.forward(g.input("input_ids"), mask);
  parity::Produced out;
  out["output"] = o.pooler_output.to(DType::F32);
  out["inter.last_hidden_state"] = o.last_hidden_state.to(DType::F32);
  return out;
}

}  // namespace

void register_text_parity_kinds() {
  static std::once_flag once;
  std::call_once(once, [] {
    parity::register_kind("hunyuan.text.llama", run_llama);
    parity::register_kind("hunyuan.text.clip", run_clip);
  });
}

}  // namespace vidax::hunyuan
