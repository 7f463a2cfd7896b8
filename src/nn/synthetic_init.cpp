#include "nn/synthetic_init.h"

#include <map>
#include <nlohmann/json.hpp>
#include <vector>

#include "core/error.h"

namespace vidax::nn {

uint64_t fnv1a64(const std::string& s) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : s) h = (h ^ c) * 0x100000001b3ull;
  return h;
}

Tensor synthetic_uniform(uint64_t seed, const std::string& name, const Shape& shape, double bound, double offset) {
  const int64_t n = shape_numel(shape);
  std::vector<float> v(static_cast<size_t>(n));
  const uint64_t state = seed ^ fnv1a64(name);
  for (int64_t i = 0; i < n; ++i) {
    uint64_t z = state + 0x9E3779B97F4A7C15ull * static_cast<uint64_t>(i + 1);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    z = z ^ (z >> 31);
    const double u = (static_cast<double>(z >> 40) + 0.5) * 0x1p-24;
    // The Python side adds the offset to the float32 tensor (torch: f32 + python float -> f32).
    v[static_cast<size_t>(i)] = static_cast<float>((u * 2.0 - 1.0) * bound);
    if (offset != 0.0) v[static_cast<size_t>(i)] = static_cast<float>(v[static_cast<size_t>(i)] + offset);
  }
  return Tensor::from_f32(v, shape, DType::F32);
}

std::map<std::string, Tensor> synthetic_from_description(const std::string& json_text, const std::string& origin) {
  nlohmann::json d;
  try {
    d = nlohmann::json::parse(json_text);
  } catch (const nlohmann::json::exception& e) {
    throw Error(msg() << origin << ": __metadata__.synthetic_params is not JSON: " << e.what());
  }
  VIDAX_CHECK(d.is_object() && d.value("generator", "") == "splitmix64_uniform_v1" && d.contains("seed") &&
                  d.contains("tensors"),
              origin << ": __metadata__.synthetic_params needs generator splitmix64_uniform_v1, seed and tensors");
  const uint64_t seed = d.at("seed").get<uint64_t>();
  std::map<std::string, Tensor> out;
  for (const auto& [name, t] : d.at("tensors").items())
    out[name] = synthetic_uniform(seed, name, t.at("shape").get<Shape>(), t.at("bound").get<double>(),
                                  t.value("offset", 0.0));
  return out;
}

}  // namespace vidax::nn
