// Fuzzes the restricted unpickler and the state-dict flattener. Accepted
// pickles must describe tensors that fit their storages.
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "io/pickle.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace vidax::io::pickle;
  Unpickled u;
  try {
    u = unpickle(data, size, "fuzz.pkl");
  } catch (const vidax::Error&) {
    return 0;
  }
  if (u.end > size || u.root >= u.objects.size()) __builtin_trap();
  for (const TensorRef& t : u.tensors) {
    if (t.storage >= u.storages.size() || t.shape.size() != t.strides.size() || t.offset < 0) __builtin_trap();
    uint64_t numel = 1, reach = static_cast<uint64_t>(t.offset);
    for (size_t i = 0; i < t.shape.size(); ++i) {
      numel *= static_cast<uint64_t>(t.shape[i]);
      if (t.shape[i] > 0) reach += static_cast<uint64_t>(t.shape[i] - 1) * static_cast<uint64_t>(t.strides[i]);
    }
    if (numel > 0 && (reach + 1) * vidax::dtype_size(t.dtype) > u.storages[t.storage].nbytes) __builtin_trap();
  }
  try {
    for (const auto& [name, index] : flatten_tensors(u, "fuzz.pkl"))
      if (index >= u.tensors.size()) __builtin_trap();
  } catch (const vidax::Error&) {
  }
  return 0;
}
