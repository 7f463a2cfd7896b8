// Where a loaded part's weights live between uses (DESIGN.md principle 7): one
// owner per part decides. Resident parts stay loaded across requests (a
// server); FreeAfterUse parts are dropped once used and loaded again on the
// next use (the text encoder of a one-shot `vidax generate`: its memory is
// free for the denoiser and the VAE). Weight streaming (the [memory] issue)
// joins here as a third policy.
#pragma once
#include <functional>
#include <memory>
#include <mutex>
#include <string>

#include "core/error.h"

namespace vidax::pipeline {

enum class Residency { Resident, FreeAfterUse };
const char* residency_name(Residency r);  // "resident" | "free-after-use"

// One part under a residency policy. acquire() loads it when absent; release()
// marks one use done and, under FreeAfterUse, drops the owner's reference (the
// memory returns once the last caller's reference goes). Thread-safe.
template <class T>
class ResidentPart {
 public:
  ResidentPart(std::string name, Residency policy, std::function<std::shared_ptr<T>()> load)
      : name_(std::move(name)), policy_(policy), load_(std::move(load)) {}

  std::shared_ptr<T> acquire() {
    std::lock_guard<std::mutex> lock(mu_);
    if (!part_) {
      part_ = load_();
      VIDAX_CHECK(part_, "loading " << name_ << " gave nothing");
      ++loads_;
    }
    return part_;
  }
  void release() {
    std::lock_guard<std::mutex> lock(mu_);
    if (policy_ == Residency::FreeAfterUse) part_.reset();
  }
  // Drops the part whatever the policy (its inputs changed: a LoRA switch); the next acquire loads it.
  void unload() {
    std::lock_guard<std::mutex> lock(mu_);
    part_.reset();
  }
  bool loaded() const {
    std::lock_guard<std::mutex> lock(mu_);
    return part_ != nullptr;
  }
  int loads() const {
    std::lock_guard<std::mutex> lock(mu_);
    return loads_;
  }
  Residency policy() const { return policy_; }
  const std::string& name() const { return name_; }

 private:
  std::string name_;
  Residency policy_;
  std::function<std::shared_ptr<T>()> load_;
  mutable std::mutex mu_;
  std::shared_ptr<T> part_;
  int loads_ = 0;
};

}  // namespace vidax::pipeline
