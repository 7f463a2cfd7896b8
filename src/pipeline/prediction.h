// What a denoiser predicts, and its conversion to what the flow samplers step
// with. For a flow-matching sample x_t = (1 - sigma) x0 + sigma eps the flow
// velocity is v = eps - x0, so
//   x0 prediction:      v = (x_t - x0) / sigma
//   epsilon prediction: v = (eps - x_t) / (1 - sigma)
// v-prediction belongs to the DDPM family (alphas, not sigmas): it needs a
// scheduler of that family (CogVideoX) and is refused on a flow sampler.
#pragma once
#include "core/tensor.h"
#include "sched/scheduler.h"

namespace vidax::pipeline {

using sched::PredictionType;
const char* prediction_name(PredictionType p);  // "flow" | "epsilon" | "x0" | "v_prediction"

// The flow velocity at x_t, noise level sigma, from a prediction of type `p`
// (all F32, x_t's shape). Throws for VPrediction, and for sigma where the
// conversion divides by zero (x0 at sigma 0, epsilon at sigma 1).
Tensor to_flow_velocity(PredictionType p, const Tensor& prediction, const Tensor& x_t, double sigma);

// The denoiser's output as `scheduler` steps with: unchanged when the types agree,
// converted for a flow solver (to_flow_velocity at the step's sigma), else refused.
Tensor to_scheduler_input(PredictionType p, const Tensor& prediction, const Tensor& x_t,
                          const sched::Scheduler& scheduler, int64_t step);

}  // namespace vidax::pipeline
