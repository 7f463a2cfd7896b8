// Where the translator reads named tensors from. The translator only needs the
// names, each tensor's dtype and shape, and (when materializing) the tensor
// itself, so it works on this small interface: an io::Checkpoint (files), an
// in-memory list (tests: names and shapes only), or a subset of either.
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/tensor.h"
#include "io/checkpoint.h"

namespace vidax::translate {

using io::TensorInfo;

class TensorSource {
 public:
  virtual ~TensorSource() = default;
  virtual std::vector<std::string> names() const = 0;  // sorted
  virtual const TensorInfo* find(const std::string& name) const = 0;  // nullptr when absent
  virtual Tensor get(const std::string& name) const = 0;  // throws naming the key
  // safetensors __metadata__ (empty when the format has none).
  virtual const std::map<std::string, std::string>& metadata() const;
  // What the user named (a path), for messages.
  virtual std::string label() const = 0;

  bool contains(const std::string& name) const { return find(name) != nullptr; }
};

// Tensors held in memory: shape-only entries (get() throws) or real tensors.
class MemorySource : public TensorSource {
 public:
  explicit MemorySource(std::string label = "<memory>") : label_(std::move(label)) {}
  void add(const std::string& name, DType dtype, const Shape& shape);  // shape only
  void add(const std::string& name, const Tensor& t);
  void remove(const std::string& name);
  void set_metadata(std::map<std::string, std::string> m) { metadata_ = std::move(m); }

  std::vector<std::string> names() const override;
  const TensorInfo* find(const std::string& name) const override;
  Tensor get(const std::string& name) const override;
  const std::map<std::string, std::string>& metadata() const override { return metadata_; }
  std::string label() const override { return label_; }

 private:
  std::string label_;
  std::map<std::string, TensorInfo> infos_;
  std::map<std::string, Tensor> data_;
  std::map<std::string, std::string> metadata_;
};

// An io::Checkpoint (file, index or directory) seen as a source.
class CheckpointSource : public TensorSource {
 public:
  CheckpointSource(io::Checkpoint ckpt, std::string label);
  static std::shared_ptr<CheckpointSource> open(const std::string& path);

  std::vector<std::string> names() const override { return names_; }
  const TensorInfo* find(const std::string& name) const override;
  Tensor get(const std::string& name) const override;
  const std::map<std::string, std::string>& metadata() const override;
  std::string label() const override { return label_; }
  const io::Checkpoint& checkpoint() const { return ckpt_; }

 private:
  io::Checkpoint ckpt_;
  std::string label_;
  std::vector<std::string> names_;
};

// The names of another source that satisfy a predicate (e.g. one file's keys,
// or a golden file without its input./output/inter. tensors).
class SubsetSource : public TensorSource {
 public:
  SubsetSource(std::shared_ptr<const TensorSource> base, std::function<bool(const std::string&)> keep,
               std::string label = "");
  std::vector<std::string> names() const override { return names_; }
  const TensorInfo* find(const std::string& name) const override;
  Tensor get(const std::string& name) const override;
  const std::map<std::string, std::string>& metadata() const override { return base_->metadata(); }
  std::string label() const override { return label_; }

 private:
  std::shared_ptr<const TensorSource> base_;
  std::vector<std::string> names_;
  std::string label_;
};

// Reads a key list as written by tools/golden/wan_keylists.py: '#' comment
// lines, then "name<TAB>DTYPE<TAB>[d0,d1,...]" per tensor. Shape-only source.
std::shared_ptr<MemorySource> read_key_list(const std::string& path);

}  // namespace vidax::translate
