// LTX-2's prompt -> Gemma-3 token ids and mask, as the pipeline's LTXGemmaTokenizer does it
// (ltx_core.text_encoders.gemma.tokenizer.tokenize_with_weights, built by base_encoder's
// build_gemma_tokenizer with max_length 1024 and LEFT padding):
//
//   text = prompt.strip()                              (Python's str.strip: Unicode white space)
//   ids  = tokenizer(text, truncation=True, max_length) (text/gemma_tokenizer.h: <bos> + the text's
//                                                        ids cut to max_length - 1)
//   if ids is empty or ids[0] != <bos>: ids = [<bos>, *ids][:max_length]
//   padded on the LEFT to max_length with the pad token (tokenizer_config.json's pad_token, else
//   <eos>: the wrapper sets pad = eos when there is none); mask 0 on the pads, 1 on the ids.
//
// No EOS is appended. A tokenizer without a <bos> is refused (the reference raises too).
//
// encode_prompts is then the whole text path from strings, as the pipeline runs it: the ids through
// Gemma-3 (every hidden state), the feature extractor and the embeddings connectors
// (EmbeddingsProcessor.process_hidden_states).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "models/ltx2/text_connector.h"
#include "models/ltx2/text_encoder.h"
#include "text/gemma3_encoder.h"
#include "text/gemma_tokenizer.h"
#include "text/t5_tokenizer.h"

namespace vidax::ltx2 {

inline constexpr int64_t kPromptMaxLength = 1024;  // gemma_assets.TOKENIZER_MAX_LENGTH

// One prompt: ids and mask of max_length (left-padded), length = the mask's ones, truncated = the
// text's ids did not all fit, cleaned = the stripped text.
text::TokenizedPrompt tokenize_prompt(const text::GemmaTokenizer& tokenizer, std::string_view prompt,
                                      int64_t max_length = kPromptMaxLength);
// The prompts stacked as LTXGemmaTextEncoder.encode stacks them: ids and mask [B, max_length] I64.
text::TokenizedBatch tokenize_prompts(const text::GemmaTokenizer& tokenizer, const std::vector<std::string>& prompts,
                                      int64_t max_length = kPromptMaxLength);

// The parts of the text path (not owned); audio may be null (a video-only connector set).
struct PromptEncoder {
  const text::GemmaTokenizer* tokenizer = nullptr;
  const text::Gemma3TextEncoder* gemma = nullptr;
  const FeatureExtractor* features = nullptr;
  const EmbeddingsConnector* video = nullptr;
  const EmbeddingsConnector* audio = nullptr;
  int64_t max_length = kPromptMaxLength;
};

struct EncodedPrompts {
  text::TokenizedBatch tokens;  // ids, mask [B, max_length]
  TextFeatures features;        // the extractor's video / audio features [B, max_length, D]
  TextContext context;          // the connectors' video / audio context and mask
};

EncodedPrompts encode_prompts(const PromptEncoder& parts, const std::vector<std::string>& prompts);

}  // namespace vidax::ltx2
