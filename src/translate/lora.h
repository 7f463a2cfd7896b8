// LoRA files as users have them (docs/lora.md), read strictly and mapped to
// the engine's parameter names through a component's own key maps: no second
// key table per family.
//
// Formats, told apart by the keys' prefix (the module naming) and suffix (the
// tensor's role):
//   comfyui   diffusion_model.<module in the component's first ("original")
//             layout>.{lora_down.weight, lora_up.weight, alpha, diff, diff_b}
//             (ComfyUI, musubi-tuner, lightx2v; lora_A / lora_B accepted too)
//   kohya     lora_unet_<original module with '.' as '_'>.{lora_down.weight,
//             lora_up.weight, alpha}: matched against the underscore form of
//             the engine's own module names (never guessed back to dots)
//   diffusers transformer.<module in the "diffusers" layout>.{lora_A.weight,
//             lora_B.weight, lora_B.bias (PEFT lora_bias: bias += factor * it)};
//             "peft" is the same with PEFT's base_model.model.
//             prefix. No alpha key: the adapter's lora_alpha (and
//             alpha_pattern) from the file's __metadata__.lora_adapter_metadata
//             or a PEFT adapter_config.json beside it, else factor 1.
//
// The update of one weight W (engine shape), in fp32:
//   W += scale * (alpha / rank) * up @ down      (low rank; factor 1 without alpha)
//   W += scale * diff,  bias += scale * diff_b   (full differences)
// Every LoRA of a load is summed into an fp32 copy of each touched parameter,
// which is cast once, at the end, to the parameter's own (storage) dtype.
#pragma once
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "translate/component.h"

namespace vidax::translate {

// One --lora argument: FILE[:SCALE]; the last ':number' is the scale (default 1).
struct LoraSpec {
  std::string path;
  double scale = 1.0;
};
LoraSpec parse_lora_spec(const std::string& arg);

struct LoraTarget {
  enum class Kind { LowRank, Diff };
  Kind kind = Kind::LowRank;
  std::string module;  // the file's module name (format prefix stripped)
  std::string param;   // the engine parameter it changes
  std::string down_key, up_key;  // LowRank: the file's keys
  std::string diff_key;          // Diff: the file's key
  int64_t rank = 0;              // LowRank
  double alpha = 0;              // LowRank: alpha / rank is the factor
  std::string alpha_from;        // "key", "metadata", "none (factor 1)"
  bool rslora = false;           // PEFT use_rslora: the factor is alpha / sqrt(rank)
  double diff_factor = 1.0;      // Diff: 1, or a lora_B.bias's pair factor
  double factor() const {
    if (kind == Kind::Diff) return diff_factor;
    return alpha / (rslora ? std::sqrt(static_cast<double>(rank)) : static_cast<double>(rank));
  }
};

struct LoraPlan {
  std::string label;   // the file
  std::string format;  // comfyui | kohya | diffusers | peft
  std::string layout;  // the component layout its module names are in
  std::vector<LoraTarget> targets;
  std::vector<std::string> unmatched;  // the file's keys that change no engine parameter (sorted)
  std::vector<std::string> problems;   // shape mismatches, a down without its up, ...: always errors
  // Parameters of the model of their kind (2-D+ weights, 1-D biases/gains) and how many are targeted.
  size_t weight_params = 0, targeted_weights = 0;
  size_t other_params = 0, targeted_other = 0;
  size_t merged = 0, kept_runtime = 0;  // apply_loras: targets merged / kept at run time
  std::string summary() const;  // format, ranks, alphas, coverage, one line each
};

// Maps every key of `lora` onto `comp`'s parameters for `config` (nothing is read but
// shapes, and alpha scalars). Throws when the keys are of no known format.
LoraPlan plan_lora(const TensorSource& lora, const Component& comp, const Json& config);

// --lora-mode: how a LoRA reaches a weight. merge: added into it (fp32 sum, one cast back);
// runtime: kept beside it, the Linear adds scale * (alpha / rank) * up @ (down @ x) in fp32 and
// the weight's bytes stay as stored (the way for GGUF / fp8 / int8 weights); auto: runtime for a
// quantized weight, merge for the rest. Norm gains, biases and modulation tables (no Linear
// reads them as a weight) are always merged.
enum class LoraMode { Merge, Runtime, Auto };
LoraMode parse_lora_mode(const std::string& s);  // merge | runtime | auto (throws otherwise)
const char* lora_mode_name(LoraMode m);

struct LoraOptions {
  bool allow_unmatched = false;  // --lora-allow-unmatched: proceed, reporting the keys
  LoraMode mode = LoraMode::Merge;
};

// One LoRA kept at run time on one weight (nn::LowRankAdapter's fields; translate is below nn).
struct LoraDelta {
  Tensor down;  // [rank, in...] fp32, or undefined for a full difference
  Tensor up;    // [out, rank] fp32 with scale * factor folded in, or scale * diff as [out, in]
  std::string label;  // the file
};
using LoraDeltas = std::map<std::string, std::vector<LoraDelta>>;  // engine weight name -> its LoRAs, in order
// Throws naming every problem, and every unmatched key unless allowed.
void check_lora(const LoraPlan& p, const LoraOptions& opt);

// Plans, checks and merges each LoRA into `params` (engine name -> tensor; untouched
// tensors are left as they are, touched ones are replaced by new buffers). warn: told
// the unmatched keys of an allowed file. Returns the plans, in order.
// With opt.mode runtime / auto, the targets kept at run time go to `runtime` (required then)
// and their parameters are left untouched; each plan's `merged` / `kept_runtime` count them.
// A quantized parameter (GGUF blocks, fp8, int8) is never merged: merge mode refuses it.
std::vector<LoraPlan> apply_loras(std::map<std::string, Tensor>& params, const std::vector<LoraSpec>& loras,
                                  const Component& comp, const Json& config, const LoraOptions& opt = {},
                                  const std::function<void(const std::string&)>& warn = {},
                                  LoraDeltas* runtime = nullptr);

// True when `src` holds LoRA keys (any key ending in a LoRA role suffix).
bool looks_like_lora(const TensorSource& src);

// A LoRA on its own (`vidax inspect LORA.safetensors`): the component that claims most of its
// targets, the config inferred from the shapes the LoRA implies (num_layers from its block
// indices), and the plan against it.
struct LoraInspection {
  const Component* comp = nullptr;
  Json config;
  LoraPlan plan;
  std::string to_text() const;
};
LoraInspection inspect_lora(const TensorSource& lora, const std::vector<const Component*>& candidates = components());

}  // namespace vidax::translate
