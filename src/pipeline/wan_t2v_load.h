// Loading a Wan 2.1 T2V checkpoint into the parts run_wan_t2v() calls: the
// UMT5 encoder + tokenizer, the DiT and the VAE decoder, each through the
// translator (original or diffusers layout; strict: every key consumed, every
// parameter filled).
#pragma once
#include <functional>
#include <string>

#include "dist/mesh.h"
#include "pipeline/wan_presets.h"
#include "pipeline/wan_t2v.h"
#include "pipeline/wan_weights.h"

namespace vidax::pipeline {

struct WanT2VLoadOptions {
  std::string weights_dir;
  std::string model;      // a preset name; "" = detect from the weights directory
  std::string precision;  // "fp32" | "bf16"; "" = the preset's
  std::function<void(const std::string&)> on_stage;  // "loading the DiT (...)", ...
  // Run sharded (docs/parallelism.md): the DiT takes its tp/sp part, the cfg axis splits the
  // guidance branches. Must outlive the loaded parts; every rank of the mesh loads.
  const dist::Mesh* mesh = nullptr;
};

struct LoadedWanT2V {
  WanT2VPreset preset;  // with the architecture actually loaded (configs from the weights)
  WanWeightFiles files;
  std::string precision;
  WanT2VComponents parts;  // owns the loaded models
};

// The preset for a weights directory: `model` when given (checked against the
// weights' config), else detected; throws naming the known models otherwise.
WanT2VPreset resolve_wan_t2v_preset(const std::string& weights_dir, const std::string& model);

LoadedWanT2V load_wan_t2v(const WanT2VLoadOptions& opt);

}  // namespace vidax::pipeline
