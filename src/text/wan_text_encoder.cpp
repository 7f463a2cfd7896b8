#include "text/wan_text_encoder.h"

#include <set>

#include "core/error.h"
#include "io/checkpoint.h"

namespace vidax::text {

WanTextEncoder WanTextEncoder::open(const std::string& checkpoint, const std::string& tokenizer, DType compute_dtype,
                                    int64_t text_len, const T5EncoderConfig& cfg) {
  io::Checkpoint ckpt = io::Checkpoint::open(checkpoint);
  // Strict: the checkpoint holds exactly the encoder's parameters.
  std::vector<std::string> expected = t5_encoder_parameter_names(cfg);
  std::set<std::string> wanted(expected.begin(), expected.end());
  msg problems;
  bool bad = false;
  for (const auto& name : ckpt.names()) {
    if (!wanted.count(name)) {
      problems << "\n  unused checkpoint tensor: " << name << " " << shape_str(ckpt.info(name).shape);
      bad = true;
    }
  }
  for (const auto& name : expected) {
    if (!ckpt.contains(name)) {
      problems << "\n  missing parameter: " << name;
      bad = true;
    }
  }
  VIDAX_CHECK(!bad, checkpoint << " is not an official " << (cfg.shared_pos ? "T5" : "UMT5")
                               << " encoder checkpoint (T5Encoder state_dict names):" << problems.str());
  T5Encoder enc(cfg, [&](const std::string& n) { return ckpt.get(n); }, compute_dtype);
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
