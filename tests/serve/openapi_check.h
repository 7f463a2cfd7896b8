// A small JSON Schema checker for the subset docs/openapi.json uses (OpenAPI 3.1 schemas):
// $ref, type (one or a list), const, enum, required, properties, additionalProperties: false,
// items, oneOf, minimum / maximum / exclusiveMinimum, minLength / maxLength, maxItems, pattern.
// Any other keyword in a schema is an error, so the document cannot say more than is checked.
#pragma once
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <string>
#include <vector>

namespace vidax::test {

class OpenApi {
 public:
  explicit OpenApi(nlohmann::json doc) : doc_(std::move(doc)) {}
  const nlohmann::json& doc() const { return doc_; }

  // The schema `ref` points at ("#/components/schemas/Video").
  const nlohmann::json& resolve(const std::string& ref) const {
    return doc_.at(nlohmann::json::json_pointer(ref.substr(1)));
  }

  // Problems of `v` against `schema`, each naming the place ("$.error.code: ...").
  std::vector<std::string> check(const nlohmann::json& schema, const nlohmann::json& v, const std::string& at = "$") const {
    std::vector<std::string> out;
    check_into(schema, v, at, out);
    return out;
  }

  // The schema of a route's answer: method "get", path "/v1/videos/{video_id}", status "200", type.
  const nlohmann::json* response_schema(const std::string& method, const std::string& path, const std::string& status,
                                        const std::string& content_type) const {
    const auto& r = doc_.at("paths").at(path).at(method).at("responses").at(status);
    if (!r.contains("content") || !r["content"].contains(content_type)) return nullptr;
    return &r["content"][content_type]["schema"];
  }

 private:
  static std::string type_of(const nlohmann::json& v) {
    if (v.is_null()) return "null";
    if (v.is_boolean()) return "boolean";
    if (v.is_number_integer()) return "integer";
    if (v.is_number()) return "number";
    if (v.is_string()) return "string";
    if (v.is_array()) return "array";
    return "object";
  }
  static bool has_type(const std::string& want, const nlohmann::json& v) {
    const std::string t = type_of(v);
    return want == t || (want == "number" && t == "integer");
  }

  void check_into(const nlohmann::json& s, const nlohmann::json& v, const std::string& at,
                  std::vector<std::string>& out) const {
    static const std::set<std::string> known = {
        "$ref", "type", "const", "enum", "required", "properties", "additionalProperties", "items", "oneOf",
        "minimum", "maximum", "exclusiveMinimum", "minLength", "maxLength", "maxItems", "pattern", "description",
        "default", "format"};
    for (auto it = s.begin(); it != s.end(); ++it)
      if (!known.count(it.key())) out.push_back(at + ": the schema uses '" + it.key() + "', which this checker does not know");
    if (s.contains("$ref")) return check_into(resolve(s["$ref"]), v, at, out);
    if (s.contains("type")) {
      bool ok = false;
      if (s["type"].is_array()) {
        for (const auto& t : s["type"]) ok = ok || has_type(t, v);
      } else {
        ok = has_type(s["type"], v);
      }
      if (!ok) return out.push_back(at + ": " + type_of(v) + " " + v.dump().substr(0, 80) + ", the document says " + s["type"].dump());
    }
    if (s.contains("const") && v != s["const"]) out.push_back(at + ": " + v.dump() + " is not " + s["const"].dump());
    if (s.contains("enum") && std::find(s["enum"].begin(), s["enum"].end(), v) == s["enum"].end())
      out.push_back(at + ": " + v.dump().substr(0, 80) + " is none of " + s["enum"].dump());
    if (s.contains("oneOf")) {
      int matched = 0;
      for (const auto& alt : s["oneOf"]) matched += check(alt, v, at).empty() ? 1 : 0;
      if (matched != 1) out.push_back(at + ": matches " + std::to_string(matched) + " of oneOf's schemas, not one");
    }
    if (v.is_number()) {
      const double d = v.get<double>();
      if (s.contains("minimum") && d < s["minimum"].get<double>()) out.push_back(at + ": " + v.dump() + " < minimum");
      if (s.contains("maximum") && d > s["maximum"].get<double>()) out.push_back(at + ": " + v.dump() + " > maximum");
      if (s.contains("exclusiveMinimum") && d <= s["exclusiveMinimum"].get<double>())
        out.push_back(at + ": " + v.dump() + " <= exclusiveMinimum");
    }
    if (v.is_string()) {
      const auto& str = v.get_ref<const std::string&>();
      if (s.contains("minLength") && str.size() < s["minLength"].get<size_t>()) out.push_back(at + ": shorter than minLength");
      if (s.contains("maxLength") && str.size() > s["maxLength"].get<size_t>()) out.push_back(at + ": longer than maxLength");
      if (s.contains("pattern") && !std::regex_search(str, std::regex(s["pattern"].get<std::string>())))
        out.push_back(at + ": '" + str.substr(0, 80) + "' does not match " + s["pattern"].get<std::string>());
    }
    if (v.is_array()) {
      if (s.contains("maxItems") && v.size() > s["maxItems"].get<size_t>()) out.push_back(at + ": more than maxItems");
      if (s.contains("items"))
        for (size_t i = 0; i < v.size(); ++i) check_into(s["items"], v[i], at + "[" + std::to_string(i) + "]", out);
    }
    if (v.is_object()) {
      for (const auto& r : s.value("required", nlohmann::json::array()))
        if (!v.contains(r.get<std::string>())) out.push_back(at + ": the required field '" + r.get<std::string>() + "' is missing");
      const nlohmann::json props = s.value("properties", nlohmann::json::object());
      for (auto it = v.begin(); it != v.end(); ++it) {
        if (props.contains(it.key()))
          check_into(props[it.key()], it.value(), at + "." + it.key(), out);
        else if (s.contains("additionalProperties") && s["additionalProperties"] == false)
          out.push_back(at + ": the field '" + it.key() + "' is not in the document");
      }
    }
  }

  nlohmann::json doc_;
};

}  // namespace vidax::test
