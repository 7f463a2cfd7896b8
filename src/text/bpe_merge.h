// The steps the two BPE tokenizers share (bpe_tokenizer.cpp: Llama-3's tokenizer.json;
// clip_tokenizer.cpp: CLIP's vocab.json + merges.txt): the text split at its special tokens, and
// the BPE step: a piece split into its UTF-8 characters, then the adjacent pair of lowest merge
// rank joined, again and again, as tokenizers' BPE model does (the leftmost pair among equal ranks).
#pragma once
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <utility>
#include <unordered_map>
#include <vector>

namespace vidax::text {

// The UTF-8 sequences of `piece`, one string each (a byte-level alphabet's symbols).
inline std::vector<std::string> utf8_symbols(const std::string& piece) {
  std::vector<std::string> parts;
  for (size_t i = 0; i < piece.size();) {
    const auto c = static_cast<unsigned char>(piece[i]);
    const size_t len = c < 0x80 ? 1 : c < 0xE0 ? 2 : c < 0xF0 ? 3 : 4;
    parts.push_back(piece.substr(i, len));
    i += len;
  }
  return parts;
}

// Joins pairs of `parts` by `merge_rank` ("a b" -> rank, lower first) until none applies.
inline void merge_by_rank(std::vector<std::string>& parts, const std::unordered_map<std::string, int64_t>& merge_rank) {
  while (parts.size() > 1) {
    int64_t best = std::numeric_limits<int64_t>::max();
    size_t at = 0;
    for (size_t i = 0; i + 1 < parts.size(); ++i)
      if (auto it = merge_rank.find(parts[i] + " " + parts[i + 1]); it != merge_rank.end() && it->second < best) {
        best = it->second;
        at = i;
      }
    if (best == std::numeric_limits<int64_t>::max()) break;
    parts[at] += parts[at + 1];
    parts.erase(parts.begin() + static_cast<std::ptrdiff_t>(at) + 1);
  }
}

// Walks `u`: where one of `specials` (content, id; the first that matches wins, so list the
// longest first) starts, the text before it goes to encode_span and its id to `ids`; the rest of
// the text after the last one goes to encode_span too. Empty contents never match.
template <class EncodeSpan>
void split_at_special_tokens(std::u32string_view u, const std::vector<std::pair<std::u32string, int64_t>>& specials,
                             const EncodeSpan& encode_span, std::vector<int64_t>& ids) {
  size_t start = 0;
  for (size_t i = 0; i < u.size();) {
    const std::pair<std::u32string, int64_t>* hit = nullptr;
    for (const auto& s : specials)
      if (!s.first.empty() && u.compare(i, s.first.size(), s.first) == 0) {
        hit = &s;
        break;
      }
    if (!hit) {
      ++i;
      continue;
    }
    encode_span(u.substr(start, i - start));
    ids.push_back(hit->second);
    i += hit->first.size();
    start = i;
  }
  encode_span(u.substr(start));
}

}  // namespace vidax::text
