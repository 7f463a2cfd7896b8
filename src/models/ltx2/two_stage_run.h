// The two-stage pipelines' files in a family run (t2v_run.h: `vidax generate --two-stage`, and the
// distilled variant, which is always two-stage): the spatial upsampler and the distilled LoRA, found
// in the weights folder by the names MODELS-LTX-2.3.md publishes them under, or given by the flags
// named as the reference's CLI (utils/args.py default_2_stage_arg_parser):
//
//   --spatial-upsampler-path FILE   else DIR/ltx-2.3-spatial-upscaler-x2-1.1.safetensors, else the one
//                                   DIR/*spatial-upscaler-x2*.safetensors (the x2 upsampler only)
//   --distilled-lora FILE[:S]       else DIR/ltx-2.3-22b-distilled-lora-384-1.1.safetensors, else the one
//                                   DIR/*distilled-lora*.safetensors; strength S (default 1, the
//                                   reference's DEFAULT_LORA_STRENGTH)
//
// Both are read on the first two-stage run and kept (a server's later runs reuse them); a run that
// needs a missing one fails naming the file looked for and the flag.
#pragma once
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "models/ltx2/two_stage.h"
#include "translate/lora.h"

namespace vidax::ltx2 {

inline constexpr const char* kSpatialUpsamplerFile = "ltx-2.3-spatial-upscaler-x2-1.1.safetensors";
inline constexpr const char* kDistilledLoraFile = "ltx-2.3-22b-distilled-lora-384-1.1.safetensors";

struct TwoStageFiles {
  std::string dir;                          // the weights folder searched
  std::string upsampler;                    // "" = none found
  std::optional<translate::LoraSpec> lora;  // none found
  std::mutex mu;                            // held while the files are read
  std::shared_ptr<const LatentUpsampler> loaded_upsampler;
  std::shared_ptr<const nn::Adapters> loaded_lora;
};

// The files of `dir` (or the flags' files: each must exist). Throws naming the flag and the file
// for a flag's missing file, and the candidates when the folder holds more than one.
std::shared_ptr<TwoStageFiles> find_two_stage_files(const std::string& dir, const std::string& upsampler_flag,
                                                    const std::string& lora_flag);

// The upsampler (read on first use). Throws naming what was looked for and the flag.
std::shared_ptr<const LatentUpsampler> two_stage_upsampler(TwoStageFiles& f);
// The distilled LoRA as the DiT's runtime adapters (lora_as_adapters, read on first use).
std::shared_ptr<const nn::Adapters> two_stage_lora(TwoStageFiles& f, const std::map<std::string, Tensor>& dit_params,
                                                   const translate::Json& dit_config,
                                                   const std::vector<std::string>& linear_names);

}  // namespace vidax::ltx2
