#include "pipeline/sampler.h"

#include "core/error.h"

namespace vidax::pipeline {

namespace {
struct Entry {
  const char* user;
  const char* sched;
};
// User name -> src/sched scheduler name: the one list of the samplers `--sampler` offers.
constexpr Entry kSamplers[] = {
    {"unipc", "flow_unipc"}, {"dpm++", "flow_dpmpp"}, {"euler", "flow_euler"}, {"lightx2v", "flow_step_distill"},
    {"flow_match_euler", "flow_match_discrete"}};
}  // namespace

const std::vector<std::string>& sampler_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& e : kSamplers) v.push_back(e.user);
    return v;
  }();
  return names;
}

size_t sampler_index(const std::string& name) {
  for (size_t i = 0; i < std::size(kSamplers); ++i)
    if (name == kSamplers[i].user) return i;
  std::string names;
  for (const auto& n : sampler_names()) names += (names.empty() ? "" : ", ") + n;
  throw Error(msg() << "--sampler " << name << ": unknown; choose one of " << names);
}

std::unique_ptr<sched::Scheduler> make_sampler(const std::string& name, int64_t steps, double shift) {
  sched::SchedulerOptions o;
  o.name = kSamplers[sampler_index(name)].sched;
  o.steps = steps;
  o.shift = shift;
  return sched::make_scheduler(o);
}

}  // namespace vidax::pipeline
