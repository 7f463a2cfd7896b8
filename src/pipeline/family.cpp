#include "pipeline/family.h"

#include "core/error.h"

namespace vidax::pipeline {

nlohmann::json Family::make_demo(const std::string& variant, const DemoOptions&) const {
  throw Error(msg() << "the " << name() << " family has no demo checkpoint (asked for " << variant << ")");
}

nlohmann::json Family::bench(const BenchOptions&, const std::function<void(const std::string&)>&) const {
  throw Error(msg() << "vidax bench does not know the " << name() << " family yet");
}

const Variant& Family::variant(const std::string& n) const {
  std::string known;
  for (const auto& v : variants()) {
    if (v.name == n) return v;
    known += (known.empty() ? "" : ", ") + v.name;
  }
  throw Error(msg() << "unknown " << name() << " model '" << n << "'; known: " << known);
}

bool Family::has_variant(const std::string& n) const {
  for (const auto& v : variants())
    if (v.name == n) return true;
  return false;
}

}  // namespace vidax::pipeline
