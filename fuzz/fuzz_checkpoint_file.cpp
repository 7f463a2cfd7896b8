// Fuzzes the whole io::Checkpoint path on one file of any format (sniffed):
// torch.save zips (central directory and local headers, libzip, data.pkl,
// storage lookup, views), legacy torch streams, GGUF, safetensors. The input
// becomes an in-memory file, and every tensor it yields is read in full.
#include <sys/mman.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.h"
#include "io/checkpoint.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  int fd = memfd_create("fuzz.ckpt", 0);
  if (fd < 0) __builtin_trap();
  for (size_t done = 0; done < size;) {
    ssize_t w = write(fd, data + done, size - done);
    if (w <= 0) __builtin_trap();
    done += static_cast<size_t>(w);
  }
  const std::string path = "/proc/self/fd/" + std::to_string(fd);
  try {
    vidax::io::Checkpoint ck = vidax::io::Checkpoint::open(path);
    for (const auto& name : ck.names()) {
      vidax::Tensor t = ck.get(name);
      if (t.shape() != ck.info(name).shape || t.dtype() != ck.info(name).dtype) __builtin_trap();
      vidax::Tensor c = t.contiguous();  // reads every element the view claims
      volatile uint8_t sink = 0;
      const auto* p = static_cast<const uint8_t*>(c.numel() ? c.data_ptr() : nullptr);
      for (size_t i = 0; i < c.nbytes(); ++i) sink = sink ^ p[i];
    }
  } catch (const vidax::Error&) {
  }
  close(fd);
  return 0;
}
