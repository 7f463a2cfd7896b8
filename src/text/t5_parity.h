// Parity kind `t5.encoder` (DESIGN.md §4): rebuilds the T5/UMT5 encoder from a
// golden file (official T5Encoder names, or transformers T5EncoderModel /
// UMT5EncoderModel names, mapped by the translator's umt5-encoder component),
// runs input.ids / input.mask and returns `output`.
//
// The runner lives in the text layer and speaks io::Checkpoint; the
// registration (t5_parity_kind.h) is inline so that the call into vidax::parity
// compiles in the parity layer (src/parity/kinds.cpp), keeping the layer order.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor.h"
#include "io/checkpoint.h"
#include "text/t5_config.h"

namespace vidax::text {

// precision: "fp32" | "bf16"; path: for messages. Returns {"output": [B, L, dim] F32}.
std::map<std::string, Tensor> run_t5_golden(const io::Checkpoint& file, const nlohmann::json& config,
                                            const std::string& precision, const std::string& path);

// Golden-file parameters (official or transformers names) -> engine names,
// through the translator. Strict: throws listing every unused tensor, every
// missing parameter and every shape mismatch.
std::map<std::string, Tensor> t5_encoder_weights_from_golden(const std::map<std::string, Tensor>& params,
                                                            const T5EncoderConfig& cfg);

}  // namespace vidax::text
