#include "models/hunyuan/prompt_encoder.h"

#include "core/error.h"

namespace vidax::hunyuan {

std::string apply_template(const std::string& tmpl, const std::string& prompt) {
  const size_t at = tmpl.find("{}");
  VIDAX_CHECK(at != std::string::npos, "HunyuanVideo prompt template has no \"{}\" for the prompt");
  const std::string before = tmpl.substr(0, at), after = tmpl.substr(at + 2);
  VIDAX_CHECK(before.find_first_of("{}") == std::string::npos && after.find_first_of("{}") == std::string::npos,
              "HunyuanVideo prompt template: braces besides the one \"{}\" are not supported (str.format escapes)");
  return before + prompt + after;  // str.format inserts the prompt as it is, braces included
}

HunyuanTextEncoders::HunyuanTextEncoders(std::shared_ptr<const text::LlamaTextEncoder> llm, LlmEncodeOptions llm_opt,
                                         PromptTemplate tmpl, Tokenize llm_tokenize,
                                         std::shared_ptr<const text::ClipTextEncoder> clip, Tokenize clip_tokenize,
                                         int64_t clip_max_length)
    : llm_(std::move(llm)),
      llm_opt_(llm_opt),
      tmpl_(std::move(tmpl)),
      llm_tokenize_(std::move(llm_tokenize)),
      clip_(std::move(clip)),
      clip_tokenize_(std::move(clip_tokenize)),
      clip_max_length_(clip_max_length) {
  VIDAX_CHECK(llm_ && clip_ && llm_tokenize_ && clip_tokenize_,
              "HunyuanVideo needs both text encoders (the LLM and CLIP-L) and their tokenizers");
  VIDAX_CHECK(llm_opt_.crop_start == tmpl_.crop_start,
              "HunyuanVideo text encoder: crop_start " << llm_opt_.crop_start << " but the template's is "
                                                       << tmpl_.crop_start);
}

PromptEmbeds HunyuanTextEncoders::encode(const std::string& raw_prompt) {
  // inference.py: prompt.strip() before both encoders (ASCII whitespace here).
  const size_t b = raw_prompt.find_first_not_of(" \t\n\r\v\f");
  const std::string prompt =
      b == std::string::npos ? std::string() : raw_prompt.substr(b, raw_prompt.find_last_not_of(" \t\n\r\v\f") - b + 1);
  auto check = [](const Tokenized& t, int64_t n, const char* who) {
    VIDAX_CHECK(t.input_ids.defined() && t.input_ids.shape() == Shape({1, n}) && t.attention_mask.defined() &&
                    t.attention_mask.shape() == Shape({1, n}),
                who << " tokenizer: expected input_ids and attention_mask [1, " << n << "], got "
                    << (t.input_ids.defined() ? t.input_ids.str() : "none") << " and "
                    << (t.attention_mask.defined() ? t.attention_mask.str() : "none"));
  };
  const Tokenized l = llm_tokenize_(apply_template(tmpl_.text, prompt), llm_opt_.max_length);
  check(l, llm_opt_.max_length, "the LLM");
  const LlmEncoding le = encode_llm(*llm_, l.input_ids, l.attention_mask, llm_opt_);
  const Tokenized c = clip_tokenize_(prompt, clip_max_length_);
  check(c, clip_max_length_, "the CLIP");
  PromptEmbeds e;
  e.text_states = le.hidden_state.squeeze(0).to(DType::F32);
  // use_attention_mask off: the reference passes no mask on; every position then counts.
  e.text_mask = le.attention_mask ? le.attention_mask->squeeze(0).to(DType::I64)
                                  : Tensor::full({e.text_states.size(0)}, 1.0, DType::I64);
  e.text_states_2 = encode_clip(*clip_, c.input_ids, c.attention_mask).squeeze(0).to(DType::F32);
  e.truncated = l.truncated || c.truncated;
  return e;
}

}  // namespace vidax::hunyuan
