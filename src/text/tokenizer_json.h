// Pieces of a tokenizers `tokenizer.json` that more than one tokenizer here reads
// (bpe_tokenizer.cpp: Llama-3's; gemma_tokenizer.cpp: Gemma-3's).
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

namespace vidax::text {

// j[key] as a string: "" when absent or null, a non-string value as its JSON text.
std::string json_field_str(const nlohmann::json& j, const char* key);

// The post-processor's ids before and after $A (TemplateProcessing's "single"), through a Sequence
// and ByteLevel (which adds nothing); null adds nothing. Anything else is refused naming `path`.
void read_template_post_processor(const nlohmann::json& post_processor, const std::string& path,
                                  std::vector<int64_t>& prefix, std::vector<int64_t>& suffix);

}  // namespace vidax::text
