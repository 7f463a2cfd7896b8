// Strict parameter loading (DESIGN.md principle 2): a model takes each of its
// parameters by name with the shape it expects; a missing name or a wrong
// shape is an error naming the tensor, and after loading every available
// name must have been taken (unused keys are listed, never dropped).
#pragma once
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace vidax::nn {

class ParamSource {
 public:
  // Returns the tensor stored under `name`, or nullopt when there is none.
  // `expected` is the shape the model asks for (generated sources use it).
  using Lookup = std::function<std::optional<Tensor>(const std::string& name, const Shape& expected)>;

  // `available`: every name the source holds (for the unused-key check);
  // `origin`: where the tensors come from (a file path), for messages.
  ParamSource(std::vector<std::string> available, Lookup lookup, std::string origin);
  static ParamSource from_map(std::map<std::string, Tensor> tensors, std::string origin);
  // Every name exists: make(name, shape) builds it (random/synthetic weights,
  // Meta tensors for recording a step). Nothing is left untaken.
  static ParamSource generated(std::function<Tensor(const std::string&, const Shape&)> make, std::string origin);

  // The tensor `name` with exactly `expected` shape (throws otherwise). A block-quantized
  // tensor (GGUF) comes dequantized to F32: only a Linear's weight computes on the blocks.
  Tensor take(const std::string& name, const Shape& expected);
  // As take(), but nullopt when the source has no such name.
  std::optional<Tensor> take_optional(const std::string& name, const Shape& expected);
  // As take(), but a block-quantized tensor comes as it is stored (nn::Linear's weight).
  Tensor take_weight(const std::string& name, const Shape& expected);
  // As take_optional(), keeping a block-quantized tensor (a source that wraps another: the
  // wrapper's take / take_weight decides).
  std::optional<Tensor> take_optional_stored(const std::string& name, const Shape& expected);

  // Throws listing every available name that no take() consumed.
  void expect_all_taken() const;
  std::vector<std::string> untaken() const;
  const std::string& origin() const { return origin_; }
  // Names taken so far, in the order they were taken.
  const std::vector<std::string>& taken_in_order() const { return order_; }

 private:
  std::optional<Tensor> take_impl(const std::string& name, const Shape& expected, bool keep_quantized);
  std::vector<std::string> available_;
  Lookup lookup_;
  std::string origin_;
  std::set<std::string> taken_;
  std::vector<std::string> order_;
};

}  // namespace vidax::nn
