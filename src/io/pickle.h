// A restricted unpickler for what torch.save writes. It never imports or calls
// anything: it builds a tree of plain values and accepts exactly the globals
// torch.load(weights_only=True) needs to rebuild a state dict (tensor
// rebuilders, typed storages, dtypes, OrderedDict, torch.Size,
// _codecs.encode). Any other global is refused with its name.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/tensor.h"

namespace vidax::io::pickle {

using ObjId = uint32_t;

enum class Kind : uint8_t { None, Bool, Int, Float, Str, Bytes, Tuple, List, Dict, Set, Global, Storage, Tensor };
const char* kind_name(Kind k);

struct Object {
  Kind kind = Kind::None;
  int64_t i = 0;       // Bool/Int value; Storage/Tensor: index into Unpickled::storages/tensors
  double f = 0;        // Float
  std::string s;       // Str/Bytes; Global: "module.name"
  std::vector<ObjId> items;  // Tuple/List/Set elements; Dict: key0, value0, key1, value1, ...
};

// One persistent storage record: ('storage', type, key, location, numel).
struct StorageRef {
  std::string key;
  std::string type;  // e.g. "torch.FloatStorage", "torch.storage.UntypedStorage"
  DType dtype = DType::U8;  // element type (U8 for untyped storages)
  uint64_t nbytes = 0;
};

// A tensor as _rebuild_tensor* describes it: a strided view of a storage.
struct TensorRef {
  size_t storage = 0;
  DType dtype = DType::F32;
  int64_t offset = 0;  // in elements
  Shape shape;
  Strides strides;
};

struct Unpickled {
  std::vector<Object> objects;
  std::vector<StorageRef> storages;
  std::vector<TensorRef> tensors;
  ObjId root = 0;
  size_t end = 0;  // offset just past the STOP opcode
};

// Runs the restricted unpickler over data[0, size). `where` names the source
// (file and entry) in errors. Throws vidax::Error, never crashes.
Unpickled unpickle(const uint8_t* data, size_t size, const std::string& where);

// Flattens nested dicts/lists/tuples of tensors to dotted names
// ({"model": {"a.w": T}} -> "model.a.w"). Non-tensor leaves (ints, strings,
// None) are skipped: they are not weights.
std::vector<std::pair<std::string, size_t>> flatten_tensors(const Unpickled& u, const std::string& where);

}  // namespace vidax::io::pickle
