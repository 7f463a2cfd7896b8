#include "text/tokenizer_json.h"

#include "core/error.h"

namespace vidax::text {

using nlohmann::json;

std::string json_field_str(const json& j, const char* key) {
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? std::string() : it->is_string() ? it->get<std::string>() : it->dump();
}

void read_template_post_processor(const json& pp, const std::string& path, std::vector<int64_t>& prefix,
                                  std::vector<int64_t>& suffix) {
  if (pp.is_null()) return;
  const std::string type = json_field_str(pp, "type");
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    for (const json& p : pp.at("processors")) read_template_post_processor(p, path, prefix, suffix);
    return;
  }
  VIDAX_CHECK(type == "TemplateProcessing", path << ": post_processor type '" << type
                                                 << "' is not supported (TemplateProcessing, ByteLevel, Sequence)");
  bool seen_a = false;
  for (const json& item : pp.at("single")) {
    if (item.contains("Sequence")) {
      VIDAX_CHECK(!seen_a && json_field_str(item["Sequence"], "id") == "A",
                  path << ": post_processor single template must hold $A once: " << pp["single"].dump());
      seen_a = true;
      continue;
    }
    VIDAX_CHECK(item.contains("SpecialToken"), path << ": post_processor template item " << item.dump());
    const std::string name = json_field_str(item["SpecialToken"], "id");
    const json& special = pp.at("special_tokens").at(name);
    for (const json& id : special.at("ids")) (seen_a ? suffix : prefix).push_back(id.get<int64_t>());
  }
  VIDAX_CHECK(seen_a, path << ": post_processor single template has no $A");
}

}  // namespace vidax::text
