#include "pipeline/sampler.h"

#include "core/error.h"

namespace vidax::pipeline {

namespace {
struct Entry {
  const char* user;
  const char* sched;
};
// User name -> src/sched scheduler name.
constexpr Entry kSamplers[] = {{"unipc", "flow_unipc"}, {"dpm++", "flow_dpmpp"}, {"euler", "flow_euler"}};
}  // namespace

const std::vector<std::string>& sampler_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& e : kSamplers) v.push_back(e.user);
    return v;
  }();
  return names;
}

std::unique_ptr<sched::Scheduler> make_sampler(const std::string& name, int64_t steps, double shift) {
  for (const auto& e : kSamplers)
    if (name == e.user) {
      sched::SchedulerOptions o;
      o.name = e.sched;
      o.steps = steps;
      o.shift = shift;
      return sched::make_scheduler(o);
    }
  throw Error(msg() << "--sampler " << name << ": unknown; choose one of unipc, dpm++, euler");
}

}  // namespace vidax::pipeline
