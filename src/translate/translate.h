// Strict translation: checkpoint keys (any layout) -> the engine's parameters.
//
// plan() matches without touching tensor data: every engine parameter must be
// filled (with the expected shape) and every checkpoint key consumed, else the
// plan lists the unused keys, the missing parameters (with shapes and the keys
// looked for) and the shape mismatches, in full. materialize() then builds the
// name -> Tensor map: zero-copy views where no transform is needed, new
// buffers for transposes, fusions and casts.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "translate/keymap.h"
#include "translate/source.h"

namespace vidax::translate {

// One engine parameter: its name (= the official checkpoint name) and shape.
struct ParamInfo {
  std::string name;
  Shape shape;
};

// Every parameter an engine model expects, in a stable order.
struct ParamSpec {
  std::vector<ParamInfo> params;
  void add(std::string name, Shape shape) { params.push_back({std::move(name), std::move(shape)}); }
  int64_t parameter_count() const;
  const ParamInfo* find(const std::string& name) const;
};

struct Binding {
  ParamInfo param;
  Transform transform = Transform::Identity;
  std::vector<std::string> keys;  // used keys (Concat: the parts in order)
  Rule rule;  // a copy: the plan outlives the key map it was made from
};

struct Missing {
  ParamInfo param;
  std::vector<std::string> looked_for;  // the keys tried (empty: no rule matches the name)
};

struct Mismatch {
  ParamInfo param;
  std::string key;
  Shape found;
  std::string why;  // e.g. "shape", "concat parts"
};

struct Plan {
  std::string layout;
  std::vector<Binding> bound;
  std::vector<std::string> unused_keys;  // sorted
  std::vector<std::string> ignored_keys;  // matched by the key map's `ignored` patterns (sorted)
  std::vector<Missing> missing;
  std::vector<Mismatch> mismatches;
  size_t consumed_keys = 0;

  bool complete() const { return unused_keys.empty() && missing.empty() && mismatches.empty(); }
  // The full, human-readable list of problems (empty when complete).
  std::string problems() const;
};

struct TranslateOptions {
  bool allow_unused = false;   // ignore checkpoint keys no parameter uses
  bool allow_missing = false;  // leave unfilled parameters out of the result
  std::optional<DType> cast;   // convert every floating-point parameter to this dtype
};

Plan plan(const TensorSource& src, const ParamSpec& spec, const KeyMap& map);

// Throws vidax::Error with plan.problems() unless the plan is complete (or the
// options allow what is wrong). Shape mismatches are never allowed.
void check(const Plan& p, const TranslateOptions& opts, const std::string& what);

std::map<std::string, Tensor> materialize(const TensorSource& src, const Plan& p, const TranslateOptions& opts);

}  // namespace vidax::translate
