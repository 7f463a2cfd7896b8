#include "text/byt5_tokenizer.h"

#include <algorithm>

#include "core/error.h"
#include "text/text_clean.h"
#include "text/tokenized_batch.h"
#include "text/unicode_classes.h"

namespace vidax::text {

namespace {

// Python's str.isspace: White_Space plus the information separators U+001C..U+001F.
bool py_space(char32_t c) { return is_unicode_white_space(c) || (c >= 0x1C && c <= 0x1F); }

}  // namespace

ByT5Tokenizer::ByT5Tokenizer(const std::vector<std::string>& added, int64_t extra_ids) {
  VIDAX_CHECK(extra_ids >= 0, "ByT5 tokenizer: extra_ids " << extra_ids << " is negative");
  added_.push_back({U"<pad>", kPad, true});
  added_.push_back({U"</s>", kEos, true});
  added_.push_back({U"<unk>", kUnk, true});
  int64_t next = 256 + kOffset;
  for (int64_t i = 0; i < extra_ids; ++i)
    added_.push_back({utf8_to_u32("<extra_id_" + std::to_string(i) + ">"), next++, false});
  for (const std::string& a : added) {
    VIDAX_CHECK(!a.empty(), "ByT5 tokenizer: an added token is empty");
    const std::u32string u = utf8_to_u32(a);
    // add_tokens skips a token the vocabulary already has.
    if (std::any_of(added_.begin(), added_.end(), [&](const Added& x) { return x.content == u; })) continue;
    added_.push_back({u, next++, false});
  }
  size_ = next;
  std::stable_sort(added_.begin(), added_.end(),
                   [](const Added& a, const Added& b) { return a.content.size() > b.content.size(); });
}

int64_t ByT5Tokenizer::token_id(const std::string& token) const {
  const std::u32string u = utf8_to_u32(token);
  for (const Added& a : added_)
    if (a.content == u) return a.id;
  throw Error(msg() << "ByT5 tokenizer: '" << token << "' is not an added token");
}

std::vector<int64_t> ByT5Tokenizer::encode(std::string_view text, bool add_eos) const {
  const std::u32string u = utf8_to_u32(text);
  // Split at the added tokens (leftmost, then longest); a stripping token takes the white space
  // next to it out of the text on both sides.
  struct Piece {
    size_t begin, end;
    int64_t id;  // -1: text
  };
  std::vector<Piece> pieces;
  size_t start = 0;
  for (size_t i = 0; i < u.size();) {
    const Added* hit = nullptr;
    for (const Added& a : added_)
      if (u.compare(i, a.content.size(), a.content) == 0) {
        hit = &a;
        break;
      }
    if (!hit) {
      ++i;
      continue;
    }
    size_t text_end = i;
    if (hit->strip)
      while (text_end > start && py_space(u[text_end - 1])) --text_end;
    pieces.push_back({start, text_end, -1});
    pieces.push_back({i, i + hit->content.size(), hit->id});
    i += hit->content.size();
    if (hit->strip)
      while (i < u.size() && py_space(u[i])) ++i;
    start = i;
  }
  pieces.push_back({start, u.size(), -1});
  std::vector<int64_t> ids;
  for (const Piece& p : pieces) {
    if (p.id >= 0) {
      ids.push_back(p.id);
      continue;
    }
    for (unsigned char b : u32_to_utf8(u.substr(p.begin, p.end - p.begin))) ids.push_back(b + kOffset);
  }
  if (add_eos && (ids.empty() || ids.back() != kEos)) ids.push_back(kEos);
  return ids;
}

TokenizedBatch ByT5Tokenizer::encode_batch(const std::vector<std::string>& texts, int64_t max_length) const {
  VIDAX_CHECK(max_length >= 1, "ByT5 tokenizer: max_length " << max_length << " leaves no room for </s>");
  std::vector<TokenizedPrompt> prompts;
  for (const std::string& text : texts) {
    TokenizedPrompt p;
    p.cleaned = text;
    p.ids = encode(text, /*add_eos=*/false);
    if (static_cast<int64_t>(p.ids.size()) > max_length - 1) {
      p.ids.resize(static_cast<size_t>(max_length - 1));
      p.truncated = true;
    }
    if (p.ids.empty() || p.ids.back() != kEos) p.ids.push_back(kEos);
    pad_right(p, max_length, kPad);
    prompts.push_back(std::move(p));
  }
  return stack_prompts(std::move(prompts), max_length);
}

}  // namespace vidax::text
