#include "pipeline/prediction.h"

#include "backend/ops.h"
#include "core/error.h"

namespace vidax::pipeline {

const char* prediction_name(PredictionType p) {
  switch (p) {
    case PredictionType::FlowVelocity: return "flow";
    case PredictionType::Epsilon: return "epsilon";
    case PredictionType::X0: return "x0";
    case PredictionType::VPrediction: return "v_prediction";
  }
  return "?";
}

Tensor to_flow_velocity(PredictionType p, const Tensor& pred, const Tensor& x_t, double sigma) {
  switch (p) {
    case PredictionType::FlowVelocity: return pred;
    case PredictionType::X0:
      VIDAX_CHECK(sigma > 0, "an x0 prediction gives no flow velocity at sigma " << sigma);
      return ops::scale(ops::sub(x_t, pred), 1.0 / sigma);
    case PredictionType::Epsilon:
      VIDAX_CHECK(sigma < 1, "an epsilon prediction gives no flow velocity at sigma " << sigma);
      return ops::scale(ops::sub(pred, x_t), 1.0 / (1.0 - sigma));
    case PredictionType::VPrediction: break;
  }
  throw Error(msg() << "a " << prediction_name(p)
                    << " denoiser needs a DDPM-family scheduler (alphas, not flow sigmas); the flow samplers "
                       "(unipc, dpm++, euler) cannot step it");
}

Tensor to_scheduler_input(PredictionType p, const Tensor& prediction, const Tensor& x_t,
                          const sched::Scheduler& scheduler, int64_t step) {
  if (p == scheduler.prediction()) return prediction;
  VIDAX_CHECK(scheduler.prediction() == PredictionType::FlowVelocity,
              "a " << prediction_name(p) << " denoiser cannot drive a scheduler that steps with "
                   << prediction_name(scheduler.prediction()) << " predictions");
  return to_flow_velocity(p, prediction, x_t, scheduler.sigmas().at(static_cast<size_t>(step)));
}

}  // namespace vidax::pipeline
