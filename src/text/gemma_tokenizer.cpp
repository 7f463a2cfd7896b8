#include "text/gemma_tokenizer.h"

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <queue>

#include "core/error.h"
#include "core/tensor.h"
#include "io/checkpoint.h"
#include "io/text_file.h"
#include "text/bpe_merge.h"
#include "text/text_clean.h"
#include "text/tokenizer_json.h"

namespace vidax::text {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

uint64_t pair_key(int64_t a, int64_t b) { return (static_cast<uint64_t>(a) << 32) | static_cast<uint64_t>(b); }

// A special token of tokenizer_config.json: a string, or an AddedToken's {"content": ...}; "" = none.
std::string config_token(const json& cfg, const char* key) {
  auto it = cfg.find(key);
  if (it == cfg.end() || it->is_null()) return "";
  if (it->is_string()) return it->get<std::string>();
  VIDAX_CHECK(it->is_object() && it->contains("content"), "tokenizer_config.json: " << key << " " << it->dump()
                                                                                     << " is not a token");
  return it->at("content").get<std::string>();
}

std::string utf8_char(char32_t c) { return u32_to_utf8(std::u32string(1, c)); }

}  // namespace

GemmaTokenizer GemmaTokenizer::from_json(const std::string& text, const std::string& config_text,
                                         const std::string& source) {
  json j, cfg = json::object();
  try {
    j = json::parse(text);
    if (!config_text.empty()) cfg = json::parse(config_text);
  } catch (const json::exception& e) {
    throw Error(msg() << "Gemma tokenizer: " << source << " is not JSON: " << e.what());
  }
  VIDAX_CHECK(j.is_object() && j.contains("model"), source << ": not a tokenizers tokenizer.json (no \"model\")");
  VIDAX_CHECK(cfg.is_object(), source << ": tokenizer_config.json is not a JSON object");
  GemmaTokenizer t;
  try {
    // Normalizer: Replace (string patterns) and Prepend, alone or in a Sequence.
    const json norm = j.value("normalizer", json());
    std::vector<json> steps;
    if (json_field_str(norm, "type") == "Sequence") {
      for (const json& n : norm.at("normalizers")) steps.push_back(n);
    } else if (!norm.is_null()) {
      steps.push_back(norm);
    }
    for (const json& n : steps) {
      const std::string type = json_field_str(n, "type");
      Normalize step;
      if (type == "Replace") {
        VIDAX_CHECK(n.at("pattern").contains("String"), source << ": normalizer Replace with pattern "
                                                               << n["pattern"].dump() << " (only String patterns)");
        step.pattern = utf8_to_u32(n["pattern"]["String"].get<std::string>());
        VIDAX_CHECK(!step.pattern.empty(), source << ": normalizer Replace with an empty pattern");
      } else {
        VIDAX_CHECK(type == "Prepend", source << ": normalizer " << n.dump()
                                              << " is not supported (Gemma's: Replace \" \" -> \"\u2581\")");
        step.prepend = true;
      }
      step.content = utf8_to_u32(n.at(step.prepend ? "prepend" : "content").get<std::string>());
      t.normalizer_.push_back(std::move(step));
    }
    // Pre-tokenizer: none, or a Split on a string the normalizer has replaced everywhere (and no
    // step brings back), which then never matches.
    const json pre = j.value("pre_tokenizer", json());
    if (!pre.is_null()) {
      const bool is_split = json_field_str(pre, "type") == "Split" && pre.contains("pattern") &&
                            pre["pattern"].contains("String") && !pre.value("invert", false);
      bool no_op = false;
      if (is_split) {
        const std::u32string s = utf8_to_u32(pre["pattern"]["String"].get<std::string>());
        for (const Normalize& n : t.normalizer_) {
          if (!n.prepend && n.pattern == s) no_op = true;
          if (n.content.find(s) != std::u32string::npos) no_op = false;
        }
        no_op = no_op && s.size() == 1;  // a one-character pattern cannot re-form from the replacement
      }
      VIDAX_CHECK(no_op, source << ": pre_tokenizer " << pre.dump()
                                << " is not supported (none, or a Split on what the normalizer replaces)");
    }
    const json& model = j.at("model");
    VIDAX_CHECK(json_field_str(model, "type") == "BPE",
                source << ": model type '" << json_field_str(model, "type") << "' (a BPE tokenizer.json expected)");
    VIDAX_CHECK(!model.contains("dropout") || model["dropout"].is_null(), source << ": BPE dropout is not supported");
    VIDAX_CHECK(json_field_str(model, "continuing_subword_prefix").empty() &&
                    json_field_str(model, "end_of_word_suffix").empty(),
                source << ": continuing_subword_prefix / end_of_word_suffix are not supported");
    t.ignore_merges_ = model.value("ignore_merges", false);
    t.fuse_unk_ = model.value("fuse_unk", false);
    t.byte_fallback_ = model.value("byte_fallback", false);
    int64_t max_id = -1;
    for (const auto& [tok, id] : model.at("vocab").items()) {
      t.vocab_.emplace(tok, id.get<int64_t>());
      max_id = std::max(max_id, id.get<int64_t>());
    }
    VIDAX_CHECK(max_id < (int64_t{1} << 32), source << ": token ids beyond 2^32");
    if (const std::string unk = json_field_str(model, "unk_token"); !unk.empty()) {
      auto it = t.vocab_.find(unk);
      VIDAX_CHECK(it != t.vocab_.end(), source << ": unk_token '" << unk << "' is not in the vocabulary");
      t.unk_id_ = it->second;
    }
    t.byte_ids_.assign(256, -1);
    for (int b = 0; b < 256; ++b) {
      static const char* hex = "0123456789ABCDEF";
      const std::string name = std::string("<0x") + hex[b >> 4] + hex[b & 15] + ">";
      if (auto it = t.vocab_.find(name); it != t.vocab_.end()) t.byte_ids_[b] = it->second;
    }
    int64_t rank = 0;
    for (const json& m : model.at("merges")) {
      std::string a, b;
      if (m.is_string()) {
        const std::string s = m.get<std::string>();
        const size_t sp = s.find(' ');
        VIDAX_CHECK(sp != std::string::npos, source << ": merge '" << s << "' is not a pair");
        a = s.substr(0, sp);
        b = s.substr(sp + 1);
      } else {
        VIDAX_CHECK(m.is_array() && m.size() == 2, source << ": merge " << m.dump() << " is not a pair");
        a = m[0].get<std::string>();
        b = m[1].get<std::string>();
      }
      const auto ia = t.vocab_.find(a), ib = t.vocab_.find(b), iab = t.vocab_.find(a + b);
      VIDAX_CHECK(ia != t.vocab_.end() && ib != t.vocab_.end() && iab != t.vocab_.end(),
                  source << ": merge " << m.dump() << " names a token that is not in the vocabulary");
      t.merges_[pair_key(ia->second, ib->second)] = {rank++, iab->second};  // a repeated pair: its last rank
    }
    // Added tokens get their ids as tokenizers' AddedVocabulary::add_tokens gives them (the file's
    // "id" is not read back): an earlier added token's or the vocabulary's id for the same content,
    // else the next id after the vocabulary's entry count (or after the largest added id, when that
    // is already beyond it). Gap-free files (Gemma's) end with the ids they list.
    const auto model_size = static_cast<int64_t>(t.vocab_.size());
    std::optional<int64_t> max_added;
    std::unordered_map<std::string, int64_t> added_ids;
    if (auto it = j.find("added_tokens"); it != j.end() && !it->is_null())
      for (const json& a : *it) {
        const std::string content = a.at("content").get<std::string>();
        VIDAX_CHECK(!a.value("lstrip", false) && !a.value("rstrip", false) && !a.value("single_word", false),
                    source << ": added token " << content << " uses lstrip / rstrip / single_word (not supported)");
        int64_t id;
        if (auto known = added_ids.find(content); known != added_ids.end()) {
          id = known->second;
        } else if (auto in_vocab = t.vocab_.find(content); in_vocab != t.vocab_.end()) {
          id = in_vocab->second;
        } else {
          id = max_added && (*max_added >= model_size || model_size == 0) ? *max_added + 1 : model_size;
        }
        added_ids.emplace(content, id);
        max_added = std::max(max_added.value_or(id), id);
        const bool special = a.value("special", false);
        // Matched after normalization, as its normalized content, when "normalized" (tokenizers'
        // default: not special).
        if (a.value("normalized", !special))
          t.normalized_added_.emplace_back(t.normalize(utf8_to_u32(content)), id);
        else
          t.raw_added_.emplace_back(utf8_to_u32(content), id);
        max_id = std::max(max_id, id);
      }
    const auto longest_first = [](const auto& x, const auto& y) { return x.first.size() > y.first.size(); };
    std::stable_sort(t.raw_added_.begin(), t.raw_added_.end(), longest_first);
    std::stable_sort(t.normalized_added_.begin(), t.normalized_added_.end(), longest_first);
    t.vocab_size_ = max_id + 1;

    // tokenizer_config.json's named special tokens must be tokens of these files (transformers
    // would add a missing one with a new id: not reproduced).
    const auto named = [&](const char* key) -> std::optional<int64_t> {
      const std::string tok = config_token(cfg, key);
      if (tok.empty()) return std::nullopt;
      const std::optional<int64_t> id = t.token_id(tok);
      VIDAX_CHECK(id, source << ": tokenizer_config.json's " << key << " '" << tok
                             << "' is not in the vocabulary or the added tokens");
      const auto has_id = [&](const auto& a) { return a.second == *id; };
      VIDAX_CHECK(std::any_of(t.raw_added_.begin(), t.raw_added_.end(), has_id) ||
                      std::any_of(t.normalized_added_.begin(), t.normalized_added_.end(), has_id),
                  source << ": tokenizer_config.json's " << key << " '" << tok
                         << "' is not an added token of tokenizer.json (transformers would add it: not supported)");
      return id;
    };
    t.bos_id_ = named("bos_token");
    t.eos_id_ = named("eos_token");
    t.pad_id_ = named("pad_token");
    named("unk_token");
    // The post-processor: rebuilt by transformers from add_bos_token / add_eos_token when the config
    // names either (TokenizersBackend.update_post_processor), else tokenizer.json's.
    if (cfg.contains("add_bos_token") || cfg.contains("add_eos_token")) {
      if (cfg.value("add_bos_token", false) && t.bos_id_) t.prefix_ = {*t.bos_id_};
      if (cfg.value("add_eos_token", false) && t.eos_id_) t.suffix_ = {*t.eos_id_};
    } else {
      read_template_post_processor(j.value("post_processor", json()), source, t.prefix_, t.suffix_);
    }
    VIDAX_CHECK(!cfg.contains("truncation_side") || cfg["truncation_side"] == "right",
                source << ": tokenizer_config.json truncation_side " << cfg["truncation_side"].dump()
                       << " (only \"right\" is supported)");
  } catch (const json::exception& e) {
    throw Error(msg() << source << ": unexpected tokenizer.json / tokenizer_config.json structure: " << e.what());
  }
  return t;
}

GemmaTokenizer GemmaTokenizer::from_files(const std::string& tokenizer_json, const std::string& tokenizer_config) {
  const std::string config = tokenizer_config.empty() ? "" : io::read_text_file(tokenizer_config, "Gemma tokenizer");
  return from_json(io::read_text_file(tokenizer_json, "Gemma tokenizer"), config, tokenizer_json);
}

GemmaTokenizer GemmaTokenizer::from_dir(const std::string& dir) {
  VIDAX_CHECK(fs::is_directory(dir), "Gemma tokenizer: " << dir << " is not a directory");
  std::vector<fs::path> jsons, configs;
  for (const auto& e : fs::recursive_directory_iterator(dir, fs::directory_options::follow_directory_symlink)) {
    if (!e.is_regular_file()) continue;
    if (e.path().filename() == "tokenizer.json") jsons.push_back(e.path());
    if (e.path().filename() == "tokenizer_config.json") configs.push_back(e.path());
  }
  fs::path json_path = fs::path(dir) / "tokenizer.json";
  if (!fs::is_regular_file(json_path)) {
    VIDAX_CHECK(!jsons.empty(), "Gemma tokenizer: no tokenizer.json in or below " << dir);
    if (jsons.size() > 1) {
      std::sort(jsons.begin(), jsons.end());
      msg m;
      m << "Gemma tokenizer: " << dir << " holds no tokenizer.json but " << jsons.size() << " below it (";
      for (size_t i = 0; i < jsons.size(); ++i) m << (i ? ", " : "") << jsons[i].string();
      m << "): give the folder of one";
      throw Error(m.str());
    }
    json_path = jsons[0];
  }
  VIDAX_CHECK(!configs.empty(), "Gemma tokenizer: no tokenizer_config.json in or below "
                                    << dir << " (the LTX-2 pipeline requires it)");
  std::sort(configs.begin(), configs.end());
  return from_files(json_path.string(), configs[0].string());
}

namespace {

// A packed file's byte tensor as text (numpy's astype(uint8) of any integer dtype: modulo 256).
std::string tensor_bytes(const Tensor& t, const std::string& what) {
  VIDAX_CHECK(t.shape().size() == 1, what << " must be a 1-D byte tensor, found " << t.str());
  const Tensor h = t.to_host();
  if (h.dtype() == DType::U8 || h.dtype() == DType::I8)
    return std::string(h.data<char>(), static_cast<size_t>(h.numel()));
  VIDAX_CHECK(h.dtype() == DType::I16 || h.dtype() == DType::I32 || h.dtype() == DType::I64 ||
                  h.dtype() == DType::U16 || h.dtype() == DType::U32 || h.dtype() == DType::U64,
              what << " must hold integers (bytes), found " << t.str());
  std::string out;
  for (double v : h.to_f64_vector()) out += static_cast<char>(static_cast<uint8_t>(static_cast<int64_t>(v) & 0xFF));
  return out;
}

}  // namespace

GemmaTokenizer GemmaTokenizer::from_packed(const std::string& path) {
  const io::Checkpoint file = io::Checkpoint::open(path);
  const std::vector<std::string> names = file.names();
  const auto has = [&](const std::string& n) { return std::binary_search(names.begin(), names.end(), n); };
  VIDAX_CHECK(has("tokenizer_json"), "Gemma tokenizer: " << path << " holds no tensor 'tokenizer_json' (a packed "
                                                            "LTX-2 text encoder stores tokenizer.json there)");
  const std::string json_text = tensor_bytes(file.get("tokenizer_json"), path + ": tokenizer_json");
  std::string config;
  if (has("hf_asset__tokenizer_config.json")) {
    config = tensor_bytes(file.get("hf_asset__tokenizer_config.json"), path + ": hf_asset__tokenizer_config.json");
  } else if (auto it = file.metadata().find("tokenizer_config.json"); it != file.metadata().end()) {
    config = it->second;
  } else {
    throw Error(msg() << "Gemma tokenizer: " << path << " holds no tokenizer_config.json (tensor "
                      << "'hf_asset__tokenizer_config.json' or metadata 'tokenizer_config.json'; the LTX-2 "
                         "pipeline requires it)");
  }
  return from_json(json_text, config, path);
}

GemmaTokenizer GemmaTokenizer::load(const std::string& path) {
  if (fs::is_directory(path)) return from_dir(path);
  VIDAX_CHECK(fs::is_regular_file(path) && fs::path(path).extension() == ".safetensors",
              "Gemma tokenizer: " << path << " is neither a directory nor a .safetensors file");
  return from_packed(path);
}

std::optional<int64_t> GemmaTokenizer::token_id(const std::string& token) const {
  const std::u32string u = utf8_to_u32(token);
  for (const auto& [content, id] : raw_added_)
    if (content == u) return id;
  if (auto it = vocab_.find(token); it != vocab_.end()) return it->second;
  return std::nullopt;
}

std::u32string GemmaTokenizer::normalize(std::u32string_view text) const {
  std::u32string s(text);
  for (const Normalize& n : normalizer_) {
    if (n.prepend) {
      if (!s.empty()) s = n.content + s;
      continue;
    }
    std::u32string out;
    for (size_t i = 0; i < s.size();) {
      if (s.compare(i, n.pattern.size(), n.pattern) == 0) {
        out += n.content;
        i += n.pattern.size();
      } else {
        out += s[i++];
      }
    }
    s = std::move(out);
  }
  return s;
}

void GemmaTokenizer::bpe_word(std::u32string_view word, std::vector<int64_t>& ids) const {
  if (word.empty()) return;
  if (ignore_merges_)
    if (auto it = vocab_.find(u32_to_utf8(word)); it != vocab_.end()) {
      ids.push_back(it->second);
      return;
    }
  // The symbols, as tokenizers' BPE::merge_word makes them: each character's token, or its bytes'
  // <0xNN> tokens, or <unk>. A pending <unk> is written when a known character follows (or at the
  // end), so byte tokens right after an unknown character land before its <unk>, as there.
  std::vector<int64_t> sym;
  std::optional<int64_t> unk;
  for (char32_t c : word) {
    const std::string s = utf8_char(c);
    if (auto it = vocab_.find(s); it != vocab_.end()) {
      if (unk) sym.push_back(*unk);
      unk.reset();
      sym.push_back(it->second);
      continue;
    }
    if (byte_fallback_ && std::all_of(s.begin(), s.end(), [&](char b) {
          return byte_ids_[static_cast<unsigned char>(b)] >= 0;
        })) {
      for (unsigned char b : s) sym.push_back(byte_ids_[b]);
      continue;
    }
    VIDAX_CHECK(unk_id_, "Gemma tokenizer: the character " << json(s).dump()
                                                           << " is not in the vocabulary and there is no unk_token");
    if (unk && !fuse_unk_) sym.push_back(*unk);
    unk = unk_id_;
  }
  if (unk) sym.push_back(*unk);

  // Merges by rank, the leftmost first among equal ranks (tokenizers' Word::merge_all: a min-heap
  // of (rank, position), stale entries skipped), over a linked list of the symbols.
  const size_t n = sym.size();
  std::vector<int64_t> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (size_t i = 0; i < n; ++i) {
    prev[i] = static_cast<int64_t>(i) - 1;
    next[i] = i + 1 < n ? static_cast<int64_t>(i + 1) : -1;
  }
  struct Cand {
    int64_t rank, pos, id;
    bool operator>(const Cand& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
  };
  std::priority_queue<Cand, std::vector<Cand>, std::greater<Cand>> heap;
  const auto push = [&](int64_t pos) {
    if (pos < 0 || next[pos] < 0) return;
    if (auto it = merges_.find(pair_key(sym[pos], sym[next[pos]])); it != merges_.end())
      heap.push({it->second.first, pos, it->second.second});
  };
  for (size_t i = 0; i + 1 < n; ++i) push(static_cast<int64_t>(i));
  while (!heap.empty()) {
    const Cand top = heap.top();
    heap.pop();
    if (!alive[top.pos] || next[top.pos] < 0) continue;
    const int64_t right = next[top.pos];
    auto it = merges_.find(pair_key(sym[top.pos], sym[right]));
    if (it == merges_.end() || it->second.second != top.id) continue;  // the pair changed since
    sym[top.pos] = top.id;
    alive[right] = false;
    next[top.pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = top.pos;
    push(prev[top.pos]);
    push(top.pos);
  }
  for (size_t i = 0; i < n; ++i)
    if (alive[i]) ids.push_back(sym[i]);
}

void GemmaTokenizer::encode_raw_span(std::u32string_view span, std::vector<int64_t>& ids) const {
  if (span.empty()) return;
  const std::u32string normalized = normalize(span);
  split_at_special_tokens(normalized, normalized_added_, [&](std::u32string_view word) { bpe_word(word, ids); },
                          ids);
}

std::vector<int64_t> GemmaTokenizer::encode(std::string_view text, bool add_special_tokens) const {
  const std::u32string u = utf8_to_u32(text);
  std::vector<int64_t> ids;
  if (add_special_tokens) ids = prefix_;
  split_at_special_tokens(u, raw_added_, [&](std::u32string_view span) { encode_raw_span(span, ids); }, ids);
  if (add_special_tokens) ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  return ids;
}

std::vector<int64_t> GemmaTokenizer::encode_truncated(std::string_view text, int64_t max_length,
                                                      bool* truncated) const {
  const int64_t specials = special_tokens_added();
  VIDAX_CHECK(max_length >= specials, "Gemma tokenizer: max_length " << max_length << " is shorter than the "
                                                                     << specials << " special tokens");
  std::vector<int64_t> body = encode(text, /*add_special_tokens=*/false);
  const bool cut = static_cast<int64_t>(body.size()) > max_length - specials;
  if (cut) body.resize(static_cast<size_t>(max_length - specials));
  if (truncated) *truncated = cut;
  std::vector<int64_t> ids = prefix_;
  ids.insert(ids.end(), body.begin(), body.end());
  ids.insert(ids.end(), suffix_.begin(), suffix_.end());
  return ids;
}

}  // namespace vidax::text
