// A minimal safetensors reader for the rng/sched tests, so that they do not
// depend on io::Checkpoint (another layer). Reads the whole file; small
// golden files only.
#pragma once
#include <cstdint>
#include <cstring>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/error.h"
#include "core/tensor.h"

namespace vidax::testing {

struct GoldenFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;

  static GoldenFile load(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    VIDAX_CHECK(f, "cannot open golden file " << path);
    uint64_t hlen = 0;
    f.read(reinterpret_cast<char*>(&hlen), 8);
    VIDAX_CHECK(f && hlen < (1u << 26), path << ": bad safetensors header length");
    std::string header(hlen, '\0');
    f.read(header.data(), static_cast<std::streamsize>(hlen));
    std::vector<char> bytes((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
    GoldenFile g;
    auto j = nlohmann::json::parse(header);
    for (auto& [name, v] : j.items()) {
      if (name == "__metadata__") {
        for (auto& [k, val] : v.items()) g.metadata[k] = val.get<std::string>();
        continue;
      }
      DType dt;
      VIDAX_CHECK(dtype_from_name(v["dtype"].get<std::string>(), &dt), path << ": " << name << ": unknown dtype");
      Shape shape = v["shape"].get<Shape>();
      const size_t b = v["data_offsets"][0].get<size_t>(), e = v["data_offsets"][1].get<size_t>();
      VIDAX_CHECK(e <= bytes.size() && e - b == static_cast<size_t>(shape_numel(shape)) * dtype_size(dt),
                  path << ": " << name << ": bad data offsets");
      Tensor t = Tensor::empty(shape, dt);
      std::memcpy(t.data_ptr(), bytes.data() + b, e - b);
      g.tensors.emplace(name, t);
    }
    return g;
  }
};

}  // namespace vidax::testing
