// Fuzzes the whole io::Checkpoint path on one file of any format (sniffed):
// torch.save zips (central directory and local headers, libzip, data.pkl,
// storage lookup, views), legacy torch streams, GGUF (block-quantized tensors
// too: each is dequantized whole, f32 and bf16), safetensors. The input becomes
// an in-memory file, and every tensor it yields is read in full.
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
      if (t.quant() != ck.info(name).quant || t.nbytes() != ck.info(name).nbytes()) __builtin_trap();
      if (t.is_quantized()) {  // every block decodes, whatever its bytes (NaN/Inf scales included)
        volatile float fsink = 0;
        for (float v : t.to(vidax::DType::F32).to_f32_vector()) fsink = fsink + v;
        (void)t.to(vidax::DType::BF16);
        if (t.size(0) > 1) (void)t.slice(0, 1, t.size(0)).to(vidax::DType::F32);
      }
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
