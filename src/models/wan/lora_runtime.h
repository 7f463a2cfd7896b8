// Runtime LoRAs (--lora-mode runtime / auto, docs/lora.md) handed from the reader
// (translate::apply_loras, which sits below nn) to the DiT's Linears (nn::LowRankAdapter).
#pragma once
#include <utility>

#include "nn/params.h"
#include "pipeline/lora_load.h"
#include "translate/lora.h"

namespace vidax::wan {

inline nn::Adapters to_adapters(translate::LoraDeltas deltas) { return pipeline::lora_adapters(std::move(deltas)); }

}  // namespace vidax::wan
