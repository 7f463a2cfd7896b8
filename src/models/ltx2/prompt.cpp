#include "models/ltx2/prompt.h"

#include "core/error.h"
#include "text/text_clean.h"
#include "text/tokenized_batch.h"

namespace vidax::ltx2 {

text::TokenizedPrompt tokenize_prompt(const text::GemmaTokenizer& tokenizer, std::string_view prompt,
                                      int64_t max_length) {
  VIDAX_CHECK(max_length >= 1, "LTX-2 prompt: max_length must be >= 1, found " << max_length);
  const std::optional<int64_t> bos = tokenizer.bos_id();
  VIDAX_CHECK(bos, "LTX-2 prompt: the Gemma tokenizer has no bos_token (tokenizer_config.json); the encode "
                   "path requires a leading <bos>");
  const std::optional<int64_t> pad = tokenizer.pad_id() ? tokenizer.pad_id() : tokenizer.eos_id();
  VIDAX_CHECK(pad, "LTX-2 prompt: the Gemma tokenizer has neither a pad_token nor an eos_token to pad with");
  text::TokenizedPrompt p;
  p.cleaned = text::u32_to_utf8(text::python_strip(text::utf8_to_u32(prompt)));
  std::vector<int64_t> ids = tokenizer.encode_truncated(p.cleaned, max_length, &p.truncated);
  if (ids.empty() || ids.front() != *bos) {
    ids.insert(ids.begin(), *bos);
    if (static_cast<int64_t>(ids.size()) > max_length) {
      ids.resize(static_cast<size_t>(max_length));
      p.truncated = true;
    }
  }
  p.length = static_cast<int64_t>(ids.size());
  const auto pads = static_cast<size_t>(max_length - p.length);
  p.ids.assign(pads, *pad);
  p.ids.insert(p.ids.end(), ids.begin(), ids.end());
  p.mask.assign(pads, 0);
  p.mask.resize(static_cast<size_t>(max_length), 1);
  return p;
}

text::TokenizedBatch tokenize_prompts(const text::GemmaTokenizer& tokenizer, const std::vector<std::string>& prompts,
                                      int64_t max_length) {
  VIDAX_CHECK(!prompts.empty(), "LTX-2 prompt: no prompts to tokenize");
  std::vector<text::TokenizedPrompt> tokenized;
  for (const std::string& prompt : prompts) tokenized.push_back(tokenize_prompt(tokenizer, prompt, max_length));
  return text::stack_prompts(std::move(tokenized), max_length);
}

EncodedPrompts encode_prompts(const PromptEncoder& parts, const std::vector<std::string>& prompts) {
  VIDAX_CHECK(parts.tokenizer && parts.gemma && parts.features && parts.video,
              "LTX-2 prompt: encode_prompts needs a tokenizer, the Gemma-3 encoder, the feature extractor and "
              "the video connector");
  EncodedPrompts out;
  out.tokens = tokenize_prompts(*parts.tokenizer, prompts, parts.max_length);
  for (const text::TokenizedPrompt& p : out.tokens.prompts)
    for (int64_t id : p.ids)
      VIDAX_CHECK(id < parts.gemma->config().vocab_size,
                  "LTX-2 prompt: token id " << id << " is beyond the Gemma-3 model's vocabulary ("
                                            << parts.gemma->config().vocab_size << "): tokenizer and model differ");
  std::vector<Tensor> states = parts.gemma->hidden_states(out.tokens.ids, out.tokens.mask);
  for (Tensor& s : states) s = s.to(DType::F32);
  out.features = parts.features->forward(states, out.tokens.mask);
  out.context = create_embeddings(*parts.video, parts.audio, out.features.video,
                                  parts.audio ? std::optional<Tensor>(out.features.audio) : std::nullopt,
                                  out.tokens.mask);
  return out;
}

}  // namespace vidax::ltx2
