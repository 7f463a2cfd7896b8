// Shared helpers for the Wan DiT tests.
#pragma once
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "models/wan/dit_config.h"
#include "nn/params.h"
#include "nn/synthetic_init.h"
#include "test_diff.h"

namespace wan_dit_test {

inline std::filesystem::path golden_dir() { return std::filesystem::path(VIDAX_TEST_DATA_DIR) / "golden"; }

// Every tests/golden/wan_dit_*.safetensors, sorted.
inline std::vector<std::string> golden_files() {
  std::vector<std::string> out;
  for (const auto& e : std::filesystem::directory_iterator(golden_dir())) {
    const std::string name = e.path().filename().string();
    if (name.rfind("wan_dit_", 0) == 0 && e.path().extension() == ".safetensors") out.push_back(e.path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

// Synthetic weights for any config: 1/sqrt(fan_in) weights, small biases, gains near 1.
inline vidax::nn::ParamSource synthetic_params(uint64_t seed) {
  return vidax::nn::ParamSource::generated(
      [seed](const std::string& name, const vidax::Shape& shape) {
        const bool gain = name.find("norm") != std::string::npos && name.size() > 7 &&
                          name.compare(name.size() - 7, 7, ".weight") == 0;
        double bound = 0.05;
        if (name.find("modulation") != std::string::npos) bound = 1.0 / std::sqrt(double(shape.back()));
        else if (shape.size() >= 2) bound = 1.0 / std::sqrt(double(vidax::shape_numel(shape) / shape[0]));
        if (gain) bound = 0.2;
        return vidax::nn::synthetic_uniform(seed, name, shape, bound, gain ? 1.0 : 0.0);
      },
      "synthetic");
}

// Shape-only parameters (Device::Meta) for recording a step: no memory, no data.
inline vidax::nn::ParamSource meta_params() {
  return vidax::nn::ParamSource::generated(
      [](const std::string&, const vidax::Shape& shape) {
        return vidax::Tensor::empty(shape, vidax::DType::F32, vidax::Device::Meta);
      },
      "meta");
}

using vidax::test::Diff;
using vidax::test::diff;

// The tiny config the behaviour tests use (head dim 24: rope split 8/8/8).
inline vidax::wan::DiTConfig tiny_config() {
  vidax::wan::DiTConfig c;
  c.patch_size = {1, 2, 2};
  c.text_len = 16, c.in_dim = 4, c.dim = 48, c.ffn_dim = 96, c.freq_dim = 32, c.text_dim = 40, c.out_dim = 4;
  c.num_heads = 2, c.num_layers = 2;
  return c;
}

}  // namespace wan_dit_test
