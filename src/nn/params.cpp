#include "nn/params.h"

#include "backend/recording.h"

#include <algorithm>

namespace vidax::nn {

ParamSource::ParamSource(std::vector<std::string> available, Lookup lookup, std::string origin)
    : available_(std::move(available)), lookup_(std::move(lookup)), origin_(std::move(origin)) {
  std::sort(available_.begin(), available_.end());
}

ParamSource ParamSource::from_map(std::map<std::string, Tensor> tensors, std::string origin) {
  std::vector<std::string> names;
  names.reserve(tensors.size());
  for (const auto& [k, v] : tensors) names.push_back(k);
  auto shared = std::make_shared<std::map<std::string, Tensor>>(std::move(tensors));
  return ParamSource(std::move(names),
                     [shared](const std::string& n, const Shape&) -> std::optional<Tensor> {
                       auto it = shared->find(n);
                       if (it == shared->end()) return std::nullopt;
                       return it->second;
                     },
                     std::move(origin));
}

ParamSource ParamSource::generated(std::function<Tensor(const std::string&, const Shape&)> make,
                                   std::string origin) {
  return ParamSource({}, [make](const std::string& n, const Shape& s) -> std::optional<Tensor> { return make(n, s); },
                     std::move(origin));
}

std::optional<Tensor> ParamSource::take_optional(const std::string& name, const Shape& expected) {
  return take_impl(name, expected, false);
}

std::optional<Tensor> ParamSource::take_optional_stored(const std::string& name, const Shape& expected) {
  return take_impl(name, expected, true);
}

Tensor ParamSource::take_weight(const std::string& name, const Shape& expected) {
  std::optional<Tensor> t = take_impl(name, expected, true);
  VIDAX_CHECK(t.has_value(), origin_ << ": missing parameter '" << name << "' (expected shape "
                                     << shape_str(expected) << ")");
  return *t;
}

std::optional<Tensor> ParamSource::take_impl(const std::string& name, const Shape& expected, bool keep_quantized) {
  std::optional<Tensor> t = lookup_(name, expected);
  if (!t) return std::nullopt;
  VIDAX_CHECK(t->shape() == expected, origin_ << ": parameter '" << name << "' has shape " << shape_str(t->shape())
                                              << ", expected " << shape_str(expected));
  if (t->is_weight_only_quantized() && !keep_quantized) t = t->to(DType::F32);
  VIDAX_CHECK(t->is_weight_only_quantized() || dtype_is_float(t->dtype()), origin_ << ": parameter '" << name << "' has dtype "
                                                  << dtype_name(t->dtype()) << ", expected a float type");
  if (taken_.insert(name).second) order_.push_back(name);
  set_param_name(*t, name);  // a recorded step reads it as param "name"
  return t;
}

Tensor ParamSource::take(const std::string& name, const Shape& expected) {
  std::optional<Tensor> t = take_optional(name, expected);
  VIDAX_CHECK(t.has_value(), origin_ << ": missing parameter '" << name << "' (expected shape "
                                     << shape_str(expected) << ")");
  return *t;
}

std::vector<std::string> ParamSource::untaken() const {
  std::vector<std::string> out;
  for (const auto& n : available_)
    if (!taken_.count(n)) out.push_back(n);
  return out;
}

void ParamSource::attach_adapters(Adapters adapters) {
  adapters_ = std::make_shared<AdapterStore>();
  adapters_->by_weight = std::move(adapters);
}

std::vector<LowRankAdapter> ParamSource::take_adapters(const std::string& weight_name, int64_t out_features,
                                                       int64_t in_features) {
  if (!adapters_) return {};
  auto it = adapters_->by_weight.find(weight_name);
  if (it == adapters_->by_weight.end()) return {};
  std::vector<LowRankAdapter> out;
  for (const LowRankAdapter& a : it->second) {
    LowRankAdapter r = a;
    VIDAX_CHECK(a.up.dim() == 2 && a.up.size(0) == out_features && a.up.dtype() == DType::F32,
                a.label << ": runtime LoRA on '" << weight_name << "': up " << a.up.str() << " does not fit the weight ["
                        << out_features << ", " << in_features << "]");
    if (a.down.defined()) {
      VIDAX_CHECK(a.down.dim() >= 2 && a.down.numel() == a.down.size(0) * in_features && a.down.size(0) == a.up.size(1) &&
                      a.down.dtype() == DType::F32,
                  a.label << ": runtime LoRA on '" << weight_name << "': down " << a.down.str() << " and up "
                          << a.up.str() << " do not fit the weight [" << out_features << ", " << in_features << "]");
      r.down = a.down.contiguous().view({a.down.size(0), in_features});
    } else {
      VIDAX_CHECK(a.up.size(1) == in_features, a.label << ": runtime full difference on '" << weight_name << "' "
                                                       << a.up.str() << " does not fit the weight [" << out_features
                                                       << ", " << in_features << "]");
    }
    out.push_back(std::move(r));
  }
  adapters_->taken.insert(weight_name);
  return out;
}

void ParamSource::expect_all_taken() const {
  if (adapters_) {
    std::vector<std::string> left;
    for (const auto& [name, a] : adapters_->by_weight)
      if (!adapters_->taken.count(name)) left.push_back(name);
    if (!left.empty()) {
      msg m;
      m << origin_ << ": " << left.size() << " runtime LoRA target(s) are not a Linear's weight here "
        << "(--lora-mode merge applies them):";
      for (const auto& n : left) m << " " << n;
      throw Error(m.str());
    }
  }
  std::vector<std::string> left = untaken();
  if (left.empty()) return;
  msg m;
  m << origin_ << ": " << left.size() << " tensor(s) not used by the model:";
  for (size_t i = 0; i < left.size() && i < 20; ++i) m << " " << left[i];
  if (left.size() > 20) m << " ...";
  throw Error(m.str());
}

}  // namespace vidax::nn
