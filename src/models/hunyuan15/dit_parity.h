// Parity kind `hunyuan1.5.dit` (docs/parity.md): rebuilds the HunyuanVideo 1.5 DiT from a golden
// file (official or diffusers layout, through the translator, strictly), runs one forward on the
// file's input.* tensors (named after the official forward's arguments; byt5_text_states /
// byt5_text_mask are its extra_kwargs; the string argument mask_type is __metadata__.mask_type,
// default "t2v") and returns `output` and `inter.*` under the golden's names.
#pragma once
#include <map>
#include <nlohmann/json.hpp>
#include <string>

#include "core/tensor.h"
#include "io/checkpoint.h"
#include "models/hunyuan15/dit.h"

namespace vidax::hunyuan15 {

// The golden's parameters under the engine's names (stored ones and __metadata__.synthetic_params
// regenerated), through the translator, strictly.
std::map<std::string, Tensor> golden_params(const io::Checkpoint& file, const nlohmann::json& config,
                                            const std::string& path);
// The forward's inputs from the file's input.* tensors (absent optional ones stay absent).
DiTInputs golden_inputs(const io::Checkpoint& file, const std::string& path);

// precision: "fp32" | "bf16"; path: for messages.
std::map<std::string, Tensor> run_dit_golden(const io::Checkpoint& file, const nlohmann::json& config,
                                             const std::string& precision, const std::string& path);

// Registers `hunyuan1.5.dit` with the parity registry (engine::register_builtin_kinds calls it).
void register_dit_parity_kinds();

}  // namespace vidax::hunyuan15
