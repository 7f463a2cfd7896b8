// Runtime LoRAs (--lora-mode runtime / auto, docs/lora.md) handed from the reader
// (translate::apply_loras, which sits below nn) to the DiT's Linears (nn::LowRankAdapter).
#pragma once
#include <utility>

#include "nn/params.h"
#include "translate/lora.h"

namespace vidax::wan {

inline nn::Adapters to_adapters(translate::LoraDeltas deltas) {
  nn::Adapters out;
  for (auto& [name, list] : deltas)
    for (auto& d : list) out[name].push_back(nn::LowRankAdapter{std::move(d.down), std::move(d.up), std::move(d.label)});
  return out;
}

}  // namespace vidax::wan
