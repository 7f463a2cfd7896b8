// Parity kind `hunyuan.dit` (docs/parity.md): rebuilds the HunyuanVideo DiT from a golden file
// (official or diffusers layout, through the translator, strictly), runs one forward on the file's
// input.* tensors and returns `output` and `inter.*` under the golden's names (the diffusers module
// paths for a diffusers file).
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor.h"
#include "io/checkpoint.h"
#include "models/hunyuan/dit.h"
#include "translate/component.h"

namespace vidax::hunyuan {

// What the 1.0 and 1.5 DiT kinds share (hunyuan15/dit_parity.cpp uses them):
// the golden's parameters under the engine's names (the stored ones and the ones
// __metadata__.synthetic_params describes, regenerated) through `component`, strictly ...
std::map<std::string, Tensor> golden_params(const io::Checkpoint& file, const nlohmann::json& config,
                                            const std::string& path, const translate::Component& component);
// ... and the compute dtype of a kind's precision ("fp32" | "bf16"; throws naming another).
DType compute_of(const std::string& precision);

// The 1.0 forward's inputs from the file's input.* tensors (input.guidance for a guidance_embed model).
DiTInputs golden_inputs(const io::Checkpoint& file, const DiTConfig& cfg, const std::string& path);

// precision: "fp32" | "bf16"; path: for messages. pjrt_plugin (non-empty): the forward is recorded
// as one program and run through that PJRT plugin (docs/pjrt.md); the taps are outputs of it.
std::map<std::string, Tensor> run_dit_golden(const io::Checkpoint& file, const nlohmann::json& config,
                                             const std::string& precision, const std::string& path,
                                             const std::string& pjrt_plugin = "");

// Registers `hunyuan.dit` with the parity registry (engine::register_builtin_kinds calls it).
void register_parity_kinds();

}  // namespace vidax::hunyuan
