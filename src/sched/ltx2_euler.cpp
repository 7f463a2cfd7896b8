// ltx_core.components.diffusion_steps.EulerDiffusionStep, float32 as the reference.
#include "core/error.h"
#include "core/tensor.h"
#include "sched/latent_math.h"
#include "sched/ltx2_schedule.h"

namespace vidax::sched {

Tensor ltx2_euler_step(const Tensor& sample, const Tensor& denoised, const std::vector<float>& sigmas, int64_t i) {
  VIDAX_CHECK(i >= 0 && i + 1 < static_cast<int64_t>(sigmas.size()),
              "ltx2 euler step: step " << i << " outside a schedule of " << sigmas.size() << " sigmas");
  VIDAX_CHECK(sample.shape() == denoised.shape(), "ltx2 euler step: sample and denoised shapes differ");
  VIDAX_CHECK(sample.dtype() == DType::F32 && denoised.dtype() == DType::F32,
              "ltx2 euler step: sample and denoised must be float32");
  const float sigma = sigmas[i], sigma_next = sigmas[i + 1];
  VIDAX_CHECK(sigma != 0.0f, "ltx2 euler step: sigma can't be 0 (step " << i << ")");
  const float dt = sigma_next - sigma;
  const Tensor v = lm::div(lm::sub(sample, denoised), sigma);
  return lm::add(sample, lm::mul(dt, v));
}

}  // namespace vidax::sched
