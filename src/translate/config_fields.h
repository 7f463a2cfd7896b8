// Helpers every component's config reader and key map share (the families'
// checkpoint key tables in src/models/<family>/, the text encoders' in src/text/).
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "translate/component.h"

namespace vidax::translate {

// j[key] as a T; fallback when the key is absent or null. A value of another type
// throws an Error that names the field.
template <class T>
T value_or(const Json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  try {
    return it->get<T>();
  } catch (const Json::exception&) {
    throw Error(msg() << "config field '" << key << "' has the wrong type (" << it->dump() << ")");
  }
}

inline bool has(const Json& j, const char* key) { return j.is_object() && j.contains(key); }

// Rules that put `engine_prefix` + each engine suffix onto `key_prefix` + its
// key suffix: how a sub-module table is reused under many prefixes.
using SuffixTable = std::vector<std::pair<std::string, std::string>>;
inline void add_nested(std::vector<Rule>& rules, const std::string& engine_prefix, const std::string& key_prefix,
                       const SuffixTable& table) {
  for (const auto& [e, k] : table) rules.push_back(key_rule(engine_prefix + e, key_prefix + k));
}

// The identity map: engine names are the checkpoint's (a family's original layout).
inline KeyMap original_identity() { return KeyMap{"original", {key_rule("{name*}", "{name}")}}; }

// Counts blocks.{i} present under the layout (i = 0, 1, ... until one is absent).
inline int64_t count_layers(const TensorSource& src, const KeyMap& map, const std::string& probe_suffix) {
  int64_t n = 0;
  while (find_param(src, map, "blocks." + std::to_string(n) + "." + probe_suffix)) ++n;
  return n;
}

}  // namespace vidax::translate
