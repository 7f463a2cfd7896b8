#include "sched/scheduler.h"

#include "core/error.h"

namespace vidax::sched {

std::unique_ptr<Scheduler> make_flow_unipc(const SchedulerOptions& opt);
std::unique_ptr<Scheduler> make_flow_dpmpp(const SchedulerOptions& opt);
std::unique_ptr<Scheduler> make_flow_euler(const SchedulerOptions& opt);
std::unique_ptr<Scheduler> make_flow_step_distill(const SchedulerOptions& opt);
std::unique_ptr<Scheduler> make_flow_match_discrete(const SchedulerOptions& opt);

namespace {

struct Entry {
  const char* name;
  std::unique_ptr<Scheduler> (*make)(const SchedulerOptions&);
};
constexpr Entry kSchedulers[] = {
    {"flow_unipc", make_flow_unipc},
    {"flow_dpmpp", make_flow_dpmpp},
    {"flow_euler", make_flow_euler},
    {"flow_step_distill", make_flow_step_distill},
    {"flow_match_discrete", make_flow_match_discrete},
};

}  // namespace

std::unique_ptr<Scheduler> make_scheduler(const SchedulerOptions& opt) {
  for (const auto& e : kSchedulers)
    if (opt.name == e.name) return e.make(opt);
  std::string known;
  for (const auto& e : kSchedulers) known += std::string(known.empty() ? "" : ", ") + e.name;
  throw Error(msg() << "unknown scheduler '" << opt.name << "' (known: " << known << ")");
}

std::vector<std::string> scheduler_names() {
  std::vector<std::string> names;
  for (const auto& e : kSchedulers) names.emplace_back(e.name);
  return names;
}

Tensor Scheduler::timesteps_tensor() const {
  const int64_t n = num_steps();
  if (schedule_.integer_timesteps) {
    std::vector<int64_t> v;
    for (double t : schedule_.timesteps) v.push_back(static_cast<int64_t>(t));
    return Tensor::from_i64(v, {n});
  }
  std::vector<float> v(schedule_.timesteps.begin(), schedule_.timesteps.end());
  return Tensor::from_f32(v, {n});
}

Tensor Scheduler::sigmas_tensor() const {
  return Tensor::from_f32(schedule_.sigmas, {static_cast<int64_t>(schedule_.sigmas.size())});
}

void Scheduler::begin_step(const Tensor& model_output, int64_t step_index, const Tensor& sample) {
  VIDAX_CHECK(step_index >= 0 && step_index < num_steps(),
              name_ << ": step index " << step_index << " out of range [0, " << num_steps() << ")");
  VIDAX_CHECK(step_index == next_step_, name_ << ": steps must run in order; expected step " << next_step_
                                              << ", got " << step_index << " (call reset() to start over)");
  VIDAX_CHECK(sample.dtype() == DType::F32 && model_output.dtype() == DType::F32,
              name_ << ": sample " << sample.str() << " and model output " << model_output.str()
                    << " must be F32 (the reference steps in float32; cast explicitly before)");
  VIDAX_CHECK(sample.shape() == model_output.shape(),
              name_ << ": sample " << sample.str() << " and model output " << model_output.str() << " differ in shape");
  ++next_step_;
}

Tensor Scheduler::draw_noise(const Shape& shape, const char* who) {
  if (noise_source_) {
    Tensor n = noise_source_(shape);
    VIDAX_CHECK(n.defined() && n.dtype() == DType::F32 && n.shape() == shape,
                who << ": the noise source gave " << (n.defined() ? n.str() : std::string("nothing")) << ", not F32"
                    << shape_str(shape));
    return n;
  }
  VIDAX_CHECK(generator_ != nullptr, who << " needs a generator (set_generator) or a noise source");
  return generator_->randn(shape, DType::F32);
}

}  // namespace vidax::sched
