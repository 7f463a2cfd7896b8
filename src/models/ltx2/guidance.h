// The LTX-2 multimodal guidance (official ltx_core/components/guiders.py MultiModalGuider /
// MultiModalGuiderParams and ltx_pipelines/utils/denoisers.py _guided_denoise, Lightricks/LTX-2
// 400fd31) and the X0 conversion of the velocity model (X0Model, ltx_core/utils.py to_denoised).
//
// One denoiser call batches up to four passes through the DiT, in this order:
//   cond   the positive contexts, no perturbation                        (always)
//   uncond the negative contexts                                         (either guider's cfg != 1)
//   ptb    the positive contexts, STG: the video self-attention skipped in the video guider's
//          stg_blocks (when its stg_scale != 0), the audio's in the audio guider's (likewise)
//   mod    the positive contexts, both cross-modal directions (A2V, V2A) skipped in every block
//          (either guider's modality_scale != 1)
// and each stream's guider combines its share (a pass the call did not run counts as 0.0):
//   pred = cond + (cfg - 1)(cond - uncond) + stg (cond - ptb) + (modality - 1)(cond - mod)
//   rescale != 0: pred *= rescale * std(cond) / std(pred) + (1 - rescale)   (std over every value)
// "!= 1" / "!= 0" are Python's math.isclose (relative 1e-9). skip_step k > 0 skips the steps whose
// index is not a multiple of k + 1: that stream's previous denoised sample is reused and its pass
// runs with Modality.enabled false; when both skip, the DiT is not called at all.
#pragma once
#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <vector>

#include "core/tensor.h"

namespace vidax::ltx2 {

struct GuiderParams {  // MultiModalGuiderParams, with its defaults
  double cfg_scale = 1.0;
  double stg_scale = 0.0;
  std::optional<std::vector<int64_t>> stg_blocks = std::vector<int64_t>{};  // nullopt (None) = every block
  double rescale_scale = 0.0;
  double modality_scale = 1.0;
  int64_t skip_step = 0;

  // The dataclass's field names; absent fields keep the defaults, unknown ones are errors.
  static GuiderParams from_json(const nlohmann::json& j);
  nlohmann::json to_json() const;
  bool do_unconditional() const;      // cfg_scale != 1
  bool do_perturbed() const;          // stg_scale != 0
  bool do_isolated_modality() const;  // modality_scale != 1
  bool should_skip_step(int64_t step) const;
  bool perturbs_block(int64_t block) const;  // STG on this block (stg_blocks, None = all)
};

// The passes of one denoiser call, in batch order.
enum class Pass { Cond, Uncond, Perturbed, Modality };
std::vector<Pass> guidance_passes(const GuiderParams& video, const GuiderParams& audio);

// BatchedPerturbationConfig.block_masks for the passes, each repeated for `samples` samples:
// [4 (video self, audio self, A2V, V2A), num_layers, passes * samples] F32, 1 = keep.
Tensor perturbation_masks(const std::vector<Pass>& passes, const GuiderParams& video, const GuiderParams& audio,
                          int64_t num_layers, int64_t samples);

// MultiModalGuider.calculate: the passes' outputs (nullptr = not run, 0.0), all F32 of one shape.
Tensor guide(const GuiderParams& p, const Tensor& cond, const Tensor* uncond, const Tensor* perturbed,
             const Tensor* modality);

// to_denoised(sample, velocity, sigma) in fp32: sample - velocity * sigma.
Tensor to_denoised(const Tensor& sample, const Tensor& velocity, float sigma);

}  // namespace vidax::ltx2
