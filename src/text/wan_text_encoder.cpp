#include "text/wan_text_encoder.h"

#include "core/error.h"
#include "translate/component.h"
#include "text/umt5_keys.h"

namespace vidax::text {

WanTextEncoder WanTextEncoder::open(const std::string& checkpoint, const std::string& tokenizer, DType compute_dtype,
                                    int64_t text_len, const std::optional<T5EncoderConfig>& cfg) {
  auto src = translate::CheckpointSource::open(checkpoint);
  std::optional<nlohmann::json> given;
  if (cfg) given = cfg->to_json();
  translate::Match m = translate::match(*src, translate::t5::umt5_component(), given);
  auto weights = translate::materialize(*src, m.plan, {});  // throws listing unused / missing / mismatched
  T5EncoderConfig config = T5EncoderConfig::from_json(m.config);
  if (cfg) {  // keep what the translator's spelling does not carry
    config.max_distance = cfg->max_distance;
    config.eps = cfg->eps;
  }
  T5Encoder enc(config, [&](const std::string& n) { return weights.at(n); }, compute_dtype);
  return WanTextEncoder(T5Tokenizer::load(tokenizer), std::move(enc), text_len);
}

WanTextEncoder::WanTextEncoder(T5Tokenizer tokenizer, T5Encoder encoder, int64_t text_len)
    : tokenizer_(std::move(tokenizer)), encoder_(std::move(encoder)), text_len_(text_len) {
  // (Added tokens such as <extra_id_N> may lie past the table; the embedding lookup rejects those ids.)
  VIDAX_CHECK(tokenizer_.piece_count() <= encoder_.config().vocab,
              "tokenizer " << tokenizer_.model_path() << " has " << tokenizer_.piece_count()
                           << " pieces, more than the encoder's vocabulary " << encoder_.config().vocab);
}

EncodedPrompts WanTextEncoder::encode(const std::vector<std::string>& prompts) const {
  TokenizedBatch batch = tokenizer_.encode_batch(prompts, text_len_, PromptClean::Whitespace);
  Tensor context = encoder_.forward(batch.ids, batch.mask);
  EncodedPrompts out;
  out.context = trim_to_prompt_lengths(context, batch.mask);
  for (const auto& p : batch.prompts) {
    out.truncated.push_back(p.truncated);
    out.cleaned.push_back(p.cleaned);
  }
  return out;
}

}  // namespace vidax::text
