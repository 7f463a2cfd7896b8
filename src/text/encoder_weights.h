// What the transformer text encoders of src/text (llama_encoder, clip_text) share at their
// edges: fetching a parameter with its shape checked, and the token counts of a right-padded mask.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace vidax::text {

// A parameter by name from `weights`, its shape checked; a block-quantized weight is widened to F32
// at load (docs/quantization.md). `who` ("llama text encoder") names the encoder in errors.
Tensor checked_param(const std::function<Tensor(const std::string&)>& weights, const std::string& name,
                     const Shape& shape, const std::string& who);

// The mask's per-row token counts (right-padded 1s then 0s, at least one token), for messages
// named `who`.
std::vector<int64_t> right_padded_lengths(const Tensor& mask, const std::string& who);

}  // namespace vidax::text
