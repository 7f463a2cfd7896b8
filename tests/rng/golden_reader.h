// Golden files for the rng/sched tests, read with io::Checkpoint: every tensor
// by name plus the safetensors __metadata__.
#pragma once
#include <map>
#include <string>

#include "core/tensor.h"
#include "io/checkpoint.h"

namespace vidax::testing {

struct GoldenFile {
  std::map<std::string, Tensor> tensors;
  std::map<std::string, std::string> metadata;

  static GoldenFile load(const std::string& path) {
    auto ck = io::Checkpoint::open(path);
    GoldenFile g;
    for (const auto& name : ck.names()) g.tensors.emplace(name, ck.get(name));
    g.metadata = ck.metadata();
    return g;
  }
};

}  // namespace vidax::testing
