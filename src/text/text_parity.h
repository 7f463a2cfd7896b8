// Parity kinds of the text layer (DESIGN.md §4): `t5.encoder`.
#pragma once
#include <map>
#include <string>

#include "core/tensor.h"
#include "text/t5_encoder.h"

namespace vidax::text {

// Registers `t5.encoder` with vidax::parity (called from src/parity/kinds.cpp).
void register_parity_kinds();

// Golden-file parameters (official T5Encoder names, or transformers
// T5EncoderModel/UMT5EncoderModel names) -> engine names. Strict: throws
// listing every unused tensor and every missing parameter.
std::map<std::string, Tensor> t5_encoder_weights_from_golden(const std::map<std::string, Tensor>& params,
                                                            const T5EncoderConfig& cfg);

}  // namespace vidax::text
