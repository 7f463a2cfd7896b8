// Strict parameter loading (DESIGN.md principle 2): a model takes each of its
// parameters by name with the shape it expects; a missing name or a wrong
// shape is an error naming the tensor, and after loading every available
// name must have been taken (unused keys are listed, never dropped).
#pragma once
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "core/tensor.h"

namespace vidax::nn {

// A LoRA kept out of the weight it changes (`--lora-mode runtime`, docs/lora.md): the Linear
// reading that weight adds x @ down^T @ up^T to its output, in fp32. `up` carries the LoRA's
// scale * alpha / rank; a full difference has no `down` and `up` is scale * diff, [out, in].
struct LowRankAdapter {
  Tensor down;  // [rank, in] fp32 (a Conv3d's kernel flattened as the Linear's input), or undefined
  Tensor up;    // [out, rank] fp32, or [out, in] for a full difference
  std::string label;  // where it comes from (the LoRA file), for messages
};
using Adapters = std::map<std::string, std::vector<LowRankAdapter>>;  // by weight name

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

  // Runtime LoRAs by the weight they apply to (nn::Linear::load takes them with its weight).
  // expect_all_taken() also throws naming an adapter no Linear took.
  void attach_adapters(Adapters adapters);
  bool has_adapters() const { return adapters_ && !adapters_->by_weight.empty(); }
  // The adapters of `weight_name`, checked against the Linear's [out, in] (a down's trailing
  // dims are flattened to `in`); none when there are none.
  std::vector<LowRankAdapter> take_adapters(const std::string& weight_name, int64_t out_features, int64_t in_features);
  // `wrapper` (e.g. shard_params's view of this source) hands out this source's adapters.
  void share_adapters_with(ParamSource& wrapper) const { wrapper.adapters_ = adapters_; }

 private:
  std::optional<Tensor> take_impl(const std::string& name, const Shape& expected, bool keep_quantized);
  std::vector<std::string> available_;
  Lookup lookup_;
  std::string origin_;
  std::set<std::string> taken_;
  std::vector<std::string> order_;
  struct AdapterStore {
    Adapters by_weight;
    std::set<std::string> taken;
  };
  std::shared_ptr<AdapterStore> adapters_;
};

}  // namespace vidax::nn
