// What the tokenizers share once a prompt's ids are known: padding it to max_length and stacking
// the prompts into a TokenizedBatch (text/t5_tokenizer.h's types).
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "text/t5_tokenizer.h"

namespace vidax::text {

// Right padding (every tokenizer here but Gemma's, which pads on the left): p.ids holds the tokens;
// length = their count, mask 1 over them, then ids and mask padded to max_length with pad_id and 0.
inline void pad_right(TokenizedPrompt& p, int64_t max_length, int64_t pad_id) {
  p.length = static_cast<int64_t>(p.ids.size());
  p.mask.assign(p.ids.size(), 1);
  p.ids.resize(static_cast<size_t>(max_length), pad_id);
  p.mask.resize(static_cast<size_t>(max_length), 0);
}

// The batch of prompts padded to max_length each: ids and mask stacked to [B, max_length] I64.
inline TokenizedBatch stack_prompts(std::vector<TokenizedPrompt> prompts, int64_t max_length) {
  TokenizedBatch batch;
  std::vector<int64_t> ids, mask;
  for (const TokenizedPrompt& p : prompts) {
    ids.insert(ids.end(), p.ids.begin(), p.ids.end());
    mask.insert(mask.end(), p.mask.begin(), p.mask.end());
  }
  const auto b = static_cast<int64_t>(prompts.size());
  batch.ids = Tensor::from_i64(ids, {b, max_length});
  batch.mask = Tensor::from_i64(mask, {b, max_length});
  batch.prompts = std::move(prompts);
  return batch;
}

}  // namespace vidax::text
