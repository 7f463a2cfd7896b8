// HunyuanVideo 1.5's ByT5 glyph encoder as its pipeline uses it (hunyuan_video_pipeline.py
// _extract_glyph_texts, _process_single_byt5_prompt, get_byt5_text_tokens;
// hyvideo/models/text_encoders/byT5/__init__.py load_glyph_byT5_v2 / add_special_token;
// byT5/format_prompt.py MultilingualPromptFormat.format_prompt):
//
//   1. the quoted texts of the prompt: re.findall(r'\"(.*?)\"|“(.*?)”') (the shortest quote, "." not
//      crossing a line break), first group or second, deduplicated in order when more than one;
//   2. none: the glyph states are zeros [1, byt5_max_length, 1472] (the width hard-coded in the
//      reference, byt5-small's d_model) and the mask zeros;
//   3. else format_prompt with the pipeline's styles (color and font None): 'Text "{t}". ' per text;
//   4. ByT5's tokenizer (text::ByT5Tokenizer: bytes + 3, the Glyph-SDXL-v2 color tokens <color-i>
//      then font tokens <xx-font-i> added after the sentinels), byt5_max_length (256) with
//      truncation and padding; the T5 encoder (text::T5Encoder, T5 v1.1 / byt5-small, T5Stack names:
//      layout "t5-stack") with the mask: its last hidden state [1, byt5_max_length, d_model] + the mask.
// The ByT5 mapper the DiT applies to these states (byt5_in) is part of the DiT (dit_blocks.h).
#pragma once
#include <string>
#include <vector>

#include "core/tensor.h"
#include "text/byt5_tokenizer.h"
#include "text/t5_encoder.h"

namespace vidax::hunyuan15 {

constexpr int64_t kByt5Width = 1472;       // the zeros' width (_process_single_byt5_prompt)
constexpr int64_t kByt5MaxLength = 256;    // the pipeline's byt5_max_length

std::vector<std::string> extract_glyph_texts(const std::string& prompt);
std::string format_glyph_prompt(const std::vector<std::string>& texts);  // styles None

// The tokens add_special_token adds: <color-i> for each entry of color_idx.json (i in 0..n-1), then
// <{code[:2]}-font-{idx}> for each (code, idx) of multilingual_10-lang_idx.json in file order.
std::vector<std::string> glyph_special_tokens(const std::string& color_json_path, const std::string& font_json_path);

struct GlyphEncoding {
  Tensor states;  // [1, max_length, d_model] (zeros [1, max_length, 1472] without glyph text)
  Tensor mask;    // [1, max_length] I64
};
GlyphEncoding encode_glyph_prompt(const text::ByT5Tokenizer& tokenizer, const text::T5Encoder& encoder,
                                  const std::string& prompt, int64_t max_length = kByt5MaxLength);

// Registers `hunyuan1.5.text.byt5` (engine::register_builtin_kinds calls it with the qwen kind).
void register_byt5_parity_kind();

}  // namespace vidax::hunyuan15
