// Parity kind `wan.dit` (DESIGN.md par. 4): rebuilds the Wan DiT from a golden
// file (official or diffusers layout, stored or synthetic parameters), runs
// encode_context + forward and returns `output` and `inter.*` under the
// golden's names.
//
// The runner lives in the models layer and speaks io::Checkpoint; the
// registration (dit_parity_kind.h) is inline so that it compiles inside the
// parity layer (src/parity/kinds.cpp), which keeps the layer order.
#pragma once
#include "io/quant_policy.h"
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor.h"
#include "dist/mesh.h"
#include "io/checkpoint.h"
#include "translate/lora.h"

namespace vidax::wan {

// precision: "fp32" | "bf16"; path: for messages. loras: merged into the golden's parameters
// (engine names, after the translator) before the model is built (docs/lora.md). mesh (optional): run sharded (tp, sp); a cfg
// axis of 2 splits the batch of a T2V file with an even batch (each half on one cfg rank, then
// gathered) and replicates the run otherwise. Every rank returns the whole result.
// pjrt_plugin (non-empty): encode_context + forward are recorded as one program and run through
// that PJRT plugin (docs/pjrt.md), precision HIGHEST; the taps are outputs of the same program.
std::map<std::string, Tensor> run_dit_golden(const io::Checkpoint& file, const nlohmann::json& config,
                                             const std::string& precision, const std::string& path,
                                             const dist::Mesh* mesh = nullptr,
                                             const std::vector<translate::LoraSpec>& loras = {},
                                             const translate::LoraOptions& lora_opt = {},
                                             const io::QuantTarget& quantize = {},  // --quantize
                                             const std::string& pjrt_plugin = "");

}  // namespace vidax::wan
