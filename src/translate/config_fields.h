// Helpers every component's config reader and key map share (the families'
// checkpoint key tables in src/models/<family>/, the text encoders' in src/text/).
#pragma once
#include <cmath>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "translate/component.h"

namespace vidax::translate {

template <class T>
struct is_vector : std::false_type {};
template <class T>
struct is_vector<std::vector<T>> : std::true_type {};

// v as a T, strictly: nlohmann's get<int64_t>() reads 2.7 as 2 and get<bool>()
// reads 0 as false, which would build another model than the file describes. An
// integer field takes an integer (2.0 too: the same number), a bool field true or
// false, a number field a number, a string field a string, a list field a list
// of such. Anything else throws naming the field (`field`, "dim_mult[1]").
template <class T>
T strict_get(const Json& v, const std::string& field) {
  auto wrong = [&](const char* want) {
    return Error(msg() << "config field '" << field << "' must be " << want << ", found " << v.dump());
  };
  if constexpr (std::is_same_v<T, bool>) {
    if (!v.is_boolean()) throw wrong("true or false");
    return v.get<bool>();
  } else if constexpr (std::is_integral_v<T>) {
    if (v.is_number_integer()) return v.get<T>();
    if (v.is_number_float() && std::isfinite(v.get<double>()) && std::floor(v.get<double>()) == v.get<double>())
      return static_cast<T>(v.get<double>());
    throw wrong("an integer");
  } else if constexpr (std::is_floating_point_v<T>) {
    if (!v.is_number()) throw wrong("a number");
    return v.get<T>();
  } else if constexpr (std::is_same_v<T, std::string>) {
    if (!v.is_string()) throw wrong("a string");
    return v.get<std::string>();
  } else if constexpr (is_vector<T>::value) {
    if (!v.is_array()) throw wrong("a list");
    T out;
    for (size_t i = 0; i < v.size(); ++i)
      out.push_back(strict_get<typename T::value_type>(v[i], field + "[" + std::to_string(i) + "]"));
    return out;
  } else {
    try {
      return v.get<T>();
    } catch (const Json::exception&) {
      throw wrong("of another type");
    }
  }
}

// j[key] as a T (strict_get); fallback when the key is absent or null.
template <class T>
T value_or(const Json& j, const char* key, T fallback) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) return fallback;
  return strict_get<T>(*it, key);
}

// j[key] as a T (strict_get); throws naming the field when it is absent or null.
template <class T>
T required(const Json& j, const char* key) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) throw Error(msg() << "config field '" << key << "' is missing");
  return strict_get<T>(*it, key);
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

// Counts <prefix>{i} present under the layout (i = 0, 1, ... until one is absent).
inline int64_t count_layers(const TensorSource& src, const KeyMap& map, const std::string& probe_suffix,
                            const std::string& prefix = "blocks.") {
  int64_t n = 0;
  while (find_param(src, map, prefix + std::to_string(n) + "." + probe_suffix)) ++n;
  return n;
}

}  // namespace vidax::translate
