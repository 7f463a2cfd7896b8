#include "models/hunyuan/prompt.h"

#include "core/error.h"
#include "pipeline/carried_embeddings.h"

namespace vidax::hunyuan {

pipeline::EncodedPrompt to_encoded_prompt(PromptEmbeds e, int64_t text_states_dim, int64_t text_states_dim_2) {
  VIDAX_CHECK(e.text_states.defined() && e.text_states.dim() == 2 && e.text_states.size(1) == text_states_dim,
              "HunyuanVideo prompt: text_states " << (e.text_states.defined() ? e.text_states.str() : "missing")
                                                  << ", expected [L, " << text_states_dim << "] (the LLM's hidden state)");
  const int64_t L = e.text_states.size(0);
  VIDAX_CHECK(L >= 1, "HunyuanVideo prompt: text_states has no tokens");
  VIDAX_CHECK(e.text_mask.defined() && e.text_mask.dim() == 1 && e.text_mask.size(0) == L,
              "HunyuanVideo prompt: text_mask " << (e.text_mask.defined() ? e.text_mask.str() : "missing")
                                                << ", expected [" << L << "] (one entry per text_states row)");
  VIDAX_CHECK(e.text_states_2.defined() && e.text_states_2.dim() == 1 && e.text_states_2.size(0) == text_states_dim_2,
              "HunyuanVideo prompt: text_states_2 "
                  << (e.text_states_2.defined() ? e.text_states_2.str() : "missing") << ", expected ["
                  << text_states_dim_2 << "] (CLIP's pooled output)");
  const Tensor context = e.text_states;
  const bool truncated = e.truncated;
  return pipeline::carry_embeddings(std::move(e), context, truncated);
}

const PromptEmbeds& prompt_embeds_of(const pipeline::EncodedPrompt& p) {
  return pipeline::carried_embeddings<PromptEmbeds>(p, "HunyuanVideo predict");
}

}  // namespace vidax::hunyuan
