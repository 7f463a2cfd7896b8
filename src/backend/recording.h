// The Meta (recording) backend: ops on Device::Meta tensors infer shapes and
// dtypes (in ops.cpp) and append to the active Trace; nothing is computed and
// no data is read. A Trace is an SSA program a compiled backend can replay
// (the [pjrt] lowering, DESIGN.md §2) and that shape planning reads:
//
//   Trace trace;
//   { RecordingScope rec(trace);  auto y = model.forward(meta_x); }
//   for (const OpRecord& r : trace.ops) ...   // r.id == its index; r.input_ids refer to earlier ops
//
// Every record defines exactly one value, whose id is the record's index in
// Trace::ops. Records come in six kinds (OpKind):
// - Input: a Meta tensor made outside the trace (e.g. the step's latent), at its first use.
// - Param: a tensor with values (e.g. a CPU weight) read by a Meta op, at its first use, by the
//   name the caller gave it (set_param_name; nn::ParamSource names every weight it hands out),
//   else unnamed; a Meta tensor with a name (shape-only weights) is a Param too. The same
//   tensor (buffer, offset, shape, strides, dtype) is one value however often it is read.
// - Constant: an unnamed host tensor of at most kConstantMaxElements elements, by value.
// - View: a core Tensor method on a Meta tensor (view, permute / transpose, slice, select,
//   unsqueeze, squeeze, reshape, contiguous, clone as "copy", to as "cast"; core reports them
//   through set_meta_tensor_observer, see core/tensor.h).
// - Op: one ops:: call, named as the function, inputs in argument order.
// - Collective: a dist::Communicator collective on a Meta tensor (record_collective).
// Attributes are typed (AttrValue). Trace::str() prints one record per line:
//   %3 = linear(x=%0, w=%1, bias=%2) : BF16[2, 16, 96]
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <unordered_map>
#include <utility>
#include <variant>
#include <vector>

#include "core/tensor.h"

namespace vidax {

class Backend;

struct TensorDesc {
  Shape shape;
  DType dtype = DType::F32;
  Device device = Device::Meta;
  QuantType quant = QuantType::None;  // a block-quantized weight (dtype U8): its ggml type
  std::string str() const;  // "F32[2, 3]", "Q8_0[64, 128]" (+ "@cpu" when not Meta)
};

enum class OpKind { Input, Param, Constant, View, Op, Collective };
const char* op_kind_name(OpKind k);  // "input", "param", ...

// A typed attribute: integers, floats, flags, enumerations (as their names: "erf", "zero"),
// integer lists (shapes, strides, pads) and dtypes.
using AttrValue = std::variant<int64_t, double, bool, std::string, std::vector<int64_t>, DType>;
std::string attr_str(const AttrValue& v);  // 1e-06 prints as 9.9999999999999995e-07 (round trip)

struct OpRecord {
  OpKind kind = OpKind::Op;
  std::string name;                      // the ops:: / Tensor method / collective name; kind's name otherwise
  int64_t id = -1;                       // the value it defines (== its index in Trace::ops)
  std::vector<int64_t> input_ids;        // in argument order; absent optionals are left out
  std::vector<std::string> input_names;  // parallel to input_ids: "x", "w", "bias", ...
  std::vector<TensorDesc> inputs;        // parallel to input_ids: the inputs' descriptions
  TensorDesc output;
  std::vector<std::pair<std::string, AttrValue>> attrs;
  std::string param_name;                // Param: the caller's name ("" when unnamed)
  std::vector<double> values;            // Constant: the elements, row-major, as doubles

  bool has_attr(const std::string& key) const;
  const AttrValue& attr(const std::string& key) const;  // throws when absent
  template <class T>
  const T& attr_as(const std::string& key) const { return std::get<T>(attr(key)); }
  std::string attr_text(const std::string& key) const;  // attr_str of it; "" when absent
  std::string str() const;  // "%3 = linear(x=%0, w=%1) : F32[2, 4]"
};

struct Trace {
  std::vector<OpRecord> ops;
  std::string str() const;  // one record per line
  // The records of one kind, in order (e.g. OpKind::Op: the ops:: calls).
  std::vector<const OpRecord*> of_kind(OpKind k) const;

  // Bookkeeping of the recording backend (value ids of the tensors seen so far).
  std::unordered_map<uint64_t, int64_t> meta_ids;  // Tensor::meta_value() -> id
  using HostKey = std::tuple<const void*, size_t, Shape, Strides, DType>;
  std::map<HostKey, int64_t> host_ids;             // a non-Meta tensor's identity -> id
  std::vector<std::shared_ptr<Buffer>> held;       // keeps keyed buffers alive (no address reuse)
};

// Host tensors up to this many elements that carry no name are recorded by value.
constexpr int64_t kConstantMaxElements = 64;

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

// Parameter names: a name for the tensor `t` (keyed by its buffer, offset, shape and dtype;
// a Meta tensor by its value), which a trace then records its Param by. Views of a named
// tensor are not named unless named themselves. Thread-safe; a name lives as long as the
// tensor's buffer (Meta: for the process).
void set_param_name(const Tensor& t, const std::string& name);
std::string param_name(const Tensor& t);  // "" when unnamed

// A collective on a Meta tensor (dist::Communicator's helpers call this): returns a fresh
// Meta tensor of `out_shape` (x's dtype) and records a Collective named `name` with input x
// and `attrs` in the active trace, if any.
Tensor record_collective(const char* name, const Tensor& x, const Shape& out_shape,
                         std::vector<std::pair<std::string, AttrValue>> attrs);

}  // namespace vidax
