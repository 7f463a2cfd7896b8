// How a family carries its per-prompt embeddings through the generic loop: in
// EncodedPrompt::conditioning (opaque to the loop), wrapped by the family's encode_prompt and read
// back by its predict.
#pragma once
#include <memory>
#include <utility>

#include "core/error.h"
#include "pipeline/parts.h"

namespace vidax::pipeline {

// A family's per-prompt embeddings carried through the loop as EncodedPrompt::conditioning (the
// family's encode_prompt wraps them, its predict reads them back); context: what the loop sees.
template <class Embeds>
EncodedPrompt carry_embeddings(Embeds e, const Tensor& context, bool truncated) {
  EncodedPrompt p;
  p.context = context;
  p.truncated = truncated;
  p.conditioning = std::make_shared<const Embeds>(std::move(e));
  return p;
}
// The embeddings carry_embeddings put in p; who names the reader in the error when it holds none.
template <class Embeds>
const Embeds& carried_embeddings(const EncodedPrompt& p, const char* who) {
  VIDAX_CHECK(p.conditioning, who << ": the prompt carries no embeddings (not encoded by this family's encode_prompt)");
  return *static_cast<const Embeds*>(p.conditioning.get());
}

}  // namespace vidax::pipeline
