// The Meta (recording) backend: ops on Device::Meta tensors infer shapes and
// dtypes (in ops.cpp) and append one OpRecord to the active Trace; nothing is
// computed and no data is read (inputs on other devices, e.g. CPU weights, are
// only described). This is how a step is captured for replay by a compiled
// backend (DESIGN.md §2) and how shapes are planned before a run.
//
//   Trace trace;
//   { RecordingScope rec(trace);  auto y = model.forward(meta_x); }
//   for (const OpRecord& r : trace.ops) ...
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace vidax {

class Backend;

struct TensorDesc {
  Shape shape;
  DType dtype = DType::F32;
  Device device = Device::Meta;
  std::string str() const;  // "F32[2, 3]" (+ "@cpu" when not Meta)
};

struct OpRecord {
  std::string name;                                        // the ops:: function name, e.g. "linear"
  std::vector<TensorDesc> inputs;                          // in argument order; absent optionals are left out
  std::vector<std::string> input_names;                    // parallel to inputs: "x", "w", "bias", ...
  TensorDesc output;
  std::vector<std::pair<std::string, std::string>> attrs;  // scalar attributes, e.g. {"eps", "1e-06"}
  std::string attr(const std::string& key) const;          // "" when absent
  std::string str() const;  // "linear(x=F32[2, 8], w=F32[4, 8]) -> F32[2, 4]"
};

struct Trace {
  std::vector<OpRecord> ops;
  std::string str() const;  // one op per line
};

// Makes `trace` the active trace of this thread until destruction (scopes nest;
// the previous trace is restored). Without an active scope Meta ops still
// infer shapes but record nothing.
class RecordingScope {
 public:
  explicit RecordingScope(Trace& trace);
  ~RecordingScope();
  RecordingScope(const RecordingScope&) = delete;
  RecordingScope& operator=(const RecordingScope&) = delete;

 private:
  Trace* previous_;
};

Trace* active_trace();      // nullptr when none
Backend& recording_backend();

}  // namespace vidax
