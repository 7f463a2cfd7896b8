// Fuzzes the safetensors header parser with whole files held in memory. Any
// input must either be rejected with vidax::Error or yield a header whose
// every promise holds (the trap below turns a broken promise into a crash).
#include <cstddef>
#include <cstdint>

#include "core/error.h"
#include "io/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  vidax::io::SafetensorsHeader h;
  try {
    h = vidax::io::parse_safetensors_header(data, size, "fuzz.safetensors");
  } catch (const vidax::Error&) {
    return 0;
  }
  if (h.data_start > size) __builtin_trap();
  const uint64_t data_size = size - h.data_start;
  for (const auto& e : h.entries) {
    if (e.begin > e.end || e.end > data_size) __builtin_trap();
    uint64_t numel = 1;
    for (int64_t d : e.shape) {
      if (d < 0) __builtin_trap();
      numel *= static_cast<uint64_t>(d);
    }
    if (numel * vidax::dtype_size(e.dtype) != e.end - e.begin) __builtin_trap();
    // Touch the first and last byte the entry claims: ASan flags any lie.
    if (e.end > e.begin) {
      volatile uint8_t first = data[h.data_start + e.begin];
      volatile uint8_t last = data[h.data_start + e.end - 1];
      (void)first;
      (void)last;
    }
  }
  return 0;
}
