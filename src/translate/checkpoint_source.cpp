// The io::Checkpoint adapter lives in its own file: only code that opens files
// links io's implementation.
#include "translate/source.h"

namespace vidax::translate {

CheckpointSource::CheckpointSource(io::Checkpoint ckpt, std::string label)
    : ckpt_(std::move(ckpt)), label_(std::move(label)), names_(ckpt_.names()) {}

std::shared_ptr<CheckpointSource> CheckpointSource::open(const std::string& path) {
  return std::make_shared<CheckpointSource>(io::Checkpoint::open(path), path);
}

const TensorInfo* CheckpointSource::find(const std::string& name) const {
  return ckpt_.contains(name) ? &ckpt_.info(name) : nullptr;
}

Tensor CheckpointSource::get(const std::string& name) const { return ckpt_.get(name); }

const std::map<std::string, std::string>& CheckpointSource::metadata() const { return ckpt_.metadata(); }

}  // namespace vidax::translate
