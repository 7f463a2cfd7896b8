#include "models/hunyuan/text_encoder.h"

#include <map>

#include "core/error.h"
#include "translate/config_fields.h"

namespace vidax::hunyuan {

using nlohmann::json;
using translate::value_or;

const PromptTemplate& prompt_template(const std::string& name) {
  // hyvideo/constants.py PROMPT_TEMPLATE_ENCODE / PROMPT_TEMPLATE_ENCODE_VIDEO, verbatim.
  static const std::map<std::string, PromptTemplate> templates = {
      {"dit-llm-encode",
       {"<|start_header_id|>system<|end_header_id|>\n\nDescribe the image by detailing the color, shape, size, texture, "
        "quantity, text, spatial relationships of the objects and background:<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n{}<|eot_id|>",
        36}},
      {"dit-llm-encode-video",
       {"<|start_header_id|>system<|end_header_id|>\n\nDescribe the video by detailing the following aspects: "
        "1. The main content and theme of the video."
        "2. The color, shape, size, texture, quantity, text, and spatial relationships of the objects."
        "3. Actions, events, behaviors temporal relationships, physical movement changes of the objects."
        "4. background environment, light, style and atmosphere."
        "5. camera angles, movements, and transitions used in the video:<|eot_id|>"
        "<|start_header_id|>user<|end_header_id|>\n\n{}<|eot_id|>",
        95}},
  };
  auto it = templates.find(name);
  VIDAX_CHECK(it != templates.end(),
              "HunyuanVideo: unknown prompt template '" << name << "' (dit-llm-encode, dit-llm-encode-video)");
  return it->second;
}

text::TokenizedBatch tokenize_llm(const text::ByteLevelBpeTokenizer& tokenizer, const std::vector<std::string>& prompts,
                                  const PromptTemplate& tmpl, int64_t text_len) {
  // str.format with one "{}" and no other braces: the prompt spliced in as it is.
  const size_t at = tmpl.text.find("{}");
  VIDAX_CHECK(at != std::string::npos && tmpl.text.find_first_of("{}", at + 2) == std::string::npos &&
                  tmpl.text.find_first_of("{}") == at,
              "HunyuanVideo: a prompt template needs exactly one {} and no other braces");
  VIDAX_CHECK(text_len >= 1, "HunyuanVideo: text_len " << text_len);
  std::vector<std::string> texts;
  for (const std::string& p : prompts) texts.push_back(tmpl.text.substr(0, at) + p + tmpl.text.substr(at + 2));
  return tokenizer.encode_batch(texts, text_len + tmpl.crop_start);
}

LlmEncodeOptions LlmEncodeOptions::from_json(const json& j) {
  VIDAX_CHECK(j.is_object(), "HunyuanVideo text encoder: expected an object of TextEncoder args, found " << j.dump());
  LlmEncodeOptions o;
  o.max_length = translate::required<int64_t>(j, "max_length");
  if (auto it = j.find("hidden_state_skip_layer"); it != j.end())
    o.hidden_state_skip_layer =
        it->is_null() ? std::nullopt : std::optional<int64_t>(translate::strict_get<int64_t>(*it, "hidden_state_skip_layer"));
  o.apply_final_norm = value_or<bool>(j, "apply_final_norm", false);
  o.use_attention_mask = value_or<bool>(j, "use_attention_mask", true);
  o.crop_start = 0;  // no template: nothing cropped
  if (auto it = j.find("prompt_template"); it != j.end() && !it->is_null()) {
    VIDAX_CHECK(it->is_object(), "HunyuanVideo text encoder: prompt_template must be an object {template, crop_start}");
    o.crop_start = value_or<int64_t>(*it, "crop_start", -1);  // TextEncoder.encode's .get("crop_start", -1)
  }
  VIDAX_CHECK(o.max_length >= 1, "HunyuanVideo text encoder: max_length " << o.max_length);
  VIDAX_CHECK(!o.hidden_state_skip_layer || *o.hidden_state_skip_layer >= 0,
              "HunyuanVideo text encoder: hidden_state_skip_layer " << *o.hidden_state_skip_layer << " is negative");
  return o;
}

LlmEncoding encode_llm(const text::LlamaTextEncoder& llm, const Tensor& input_ids, const Tensor& attention_mask,
                       const LlmEncodeOptions& opt) {
  VIDAX_CHECK(input_ids.dim() == 2 && attention_mask.shape() == input_ids.shape(),
              "HunyuanVideo LLM encoder: input_ids " << shape_str(input_ids.shape()) << " and attention_mask "
                                                     << shape_str(attention_mask.shape()) << " must be one [B, L]");
  const int64_t L = input_ids.size(1), layers = llm.config().num_hidden_layers;
  VIDAX_CHECK(L <= opt.max_length, "HunyuanVideo LLM encoder: " << L << " tokens, more than max_length "
                                                                << opt.max_length << " (the tokenizer truncates to it)");
  const int64_t skip = opt.hidden_state_skip_layer.value_or(0);
  VIDAX_CHECK(skip <= layers, "HunyuanVideo LLM encoder: hidden_state_skip_layer " << skip << " with " << layers
                                                                                   << " layers (hidden_states has "
                                                                                   << layers + 1 << " entries)");
  // hidden_states[-(skip + 1)] = hidden_states[layers - skip]; the last one is the normed output.
  std::optional<Tensor> mask;
  if (opt.use_attention_mask) mask = attention_mask;
  Tensor h = llm.hidden_state(input_ids, mask, layers - skip);
  if (opt.hidden_state_skip_layer && skip > 0 && opt.apply_final_norm) h = llm.final_norm(h);
  LlmEncoding out;
  if (opt.crop_start > 0) {
    VIDAX_CHECK(opt.crop_start < L, "HunyuanVideo LLM encoder: crop_start " << opt.crop_start << " leaves nothing of "
                                                                            << L << " tokens");
    h = h.slice(1, opt.crop_start, L).contiguous();
    if (mask) mask = mask->slice(1, opt.crop_start, L).contiguous();
  }
  out.hidden_state = h;
  out.attention_mask = mask;
  return out;
}

Tensor encode_clip(const text::ClipTextEncoder& clip, const Tensor& input_ids, const Tensor& attention_mask,
                   bool use_attention_mask) {
  std::optional<Tensor> mask;
  if (use_attention_mask) mask = attention_mask;
  return clip.forward(input_ids, mask).pooler_output;
}

}  // namespace vidax::hunyuan
