#include "models/hunyuan15/text_encoder.h"

#include <map>

#include "core/error.h"
#include "translate/config_fields.h"

namespace vidax::hunyuan15 {

using nlohmann::json;
using translate::value_or;

namespace {

// The marker calculate_crop_start looks for, and the text its first pass tokenizes.
constexpr const char* kUserMarker = "<|im_start|>user\n";
constexpr const char* kCropProbe = "a photo of a cat";
constexpr int64_t kCropPassLength = 256;  // the first pass's max_length (truncation)

}  // namespace

const ChatTemplate& prompt_template(const std::string& name) {
  // PROMPT_TEMPLATE_ENCODE_IMAGE_JSON / _VIDEO_JSON's system contents, verbatim.
  static const std::string gap(9, ' ');
  static const std::map<std::string, ChatTemplate> templates = {
      {"li-dit-encode-image-json",
       {"li-dit-encode-image-json",
        "You are a helpful assistant. Describe the image by detailing the following aspects:" + gap +
            "1. The main content and theme of the image." + gap +
            "2. The color, shape, size, texture, quantity, text, and spatial relationships of the objects." + gap +
            "3. The background environment, light, style and atmosphere."}},
      {"li-dit-encode-video-json",
       {"li-dit-encode-video-json",
        "You are a helpful assistant. Describe the video by detailing the following aspects:" + gap +
            "1. The main content and theme of the video." + gap +
            "2. The color, shape, size, texture, quantity, text, and spatial relationships of the objects." + gap +
            "3. Actions, events, behaviors temporal relationships, physical movement changes of the objects." + gap +
            "4. background environment, light, style and atmosphere." + gap +
            "5. camera angles, movements, and transitions used in the video."}},
  };
  auto it = templates.find(name);
  VIDAX_CHECK(it != templates.end(), "HunyuanVideo 1.5: unknown prompt template '"
                                         << name << "' (li-dit-encode-image-json, li-dit-encode-video-json)");
  return it->second;
}

std::string render_chat(const ChatTemplate& tmpl, const std::string& prompt) {
  return "<|im_start|>system\n" + tmpl.system + "<|im_end|>\n<|im_start|>user\n" + (prompt.empty() ? " " : prompt) +
         "<|im_end|>\n<|im_start|>assistant\n";
}

int64_t crop_start(const text::ByteLevelBpeTokenizer& tokenizer, const ChatTemplate& tmpl) {
  VIDAX_CHECK(std::string(tokenizer.pretokenizer()) == "qwen2",
              "HunyuanVideo 1.5: the text encoder's tokenizer.json must be Qwen2.5-VL's (Qwen2's pre-tokenizer); "
              "this one has "
                  << tokenizer.pretokenizer() << "'s");
  std::vector<int64_t> ids = tokenizer.encode(render_chat(tmpl, kCropProbe), /*add_special_tokens=*/true);
  if (static_cast<int64_t>(ids.size()) > kCropPassLength) ids.resize(kCropPassLength);
  const std::vector<int64_t> marker = tokenizer.encode(kUserMarker, /*add_special_tokens=*/false);
  for (size_t i = 0; i + marker.size() <= ids.size(); ++i)
    if (std::equal(marker.begin(), marker.end(), ids.begin() + static_cast<std::ptrdiff_t>(i)))
      return static_cast<int64_t>(i + marker.size());
  // The reference then looks for a special token named like "user" (Qwen2's have none): no crop.
  return 0;
}

text::TokenizedBatch text2tokens(const text::ByteLevelBpeTokenizer& tokenizer, const std::vector<std::string>& prompts,
                                 const ChatTemplate& tmpl, int64_t text_len, int64_t crop) {
  VIDAX_CHECK(text_len >= 1, "HunyuanVideo 1.5: text_len " << text_len << " must be positive");
  std::vector<std::string> texts;
  for (const std::string& p : prompts) texts.push_back(render_chat(tmpl, p));
  return tokenizer.encode_batch(texts, text_len + (crop > 0 ? crop : 0));
}

hunyuan::LlmEncodeOptions encode_options(const json& j) {
  VIDAX_CHECK(j.is_object(), "HunyuanVideo 1.5 text encoder: expected an object of TextEncoder args, found " << j.dump());
  json args = j;
  // TextEncoder.encode crops with prompt_template_video's crop_start for data_type "video" (when the
  // args hold one), else prompt_template's; encode's default data_type is "image".
  const std::string data_type = value_or<std::string>(j, "data_type", "image");
  VIDAX_CHECK(data_type == "image" || data_type == "video",
              "HunyuanVideo 1.5 text encoder: data_type '" << data_type << "' (image, video)");
  // The crop is gated on prompt_template (use_template): without one nothing is cropped.
  const bool use_template = j.contains("prompt_template") && !j["prompt_template"].is_null();
  if (use_template && data_type == "video" && j.contains("prompt_template_video") &&
      !j["prompt_template_video"].is_null())
    args["prompt_template"] = j["prompt_template_video"];
  // The 1.5 template names a conversation ({name, crop_start}, or the official {template,
  // crop_start}); encode_llm needs its crop_start.
  if (auto it = args.find("prompt_template"); it != args.end() && !it->is_null()) {
    VIDAX_CHECK(it->is_object() && it->contains("crop_start"),
                "HunyuanVideo 1.5 text encoder: prompt_template must be {name, crop_start}, found " << it->dump());
    if (it->contains("name")) prompt_template(translate::strict_get<std::string>(it->at("name"), "prompt_template.name"));
  }
  hunyuan::LlmEncodeOptions o = hunyuan::LlmEncodeOptions::from_json(args);
  // TextEncoder.encode gets batches of text_len + crop_start tokens.
  o.max_length += o.crop_start > 0 ? o.crop_start : 0;
  return o;
}

}  // namespace vidax::hunyuan15
