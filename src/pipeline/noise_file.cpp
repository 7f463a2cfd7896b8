// --noise FILE: the initial latent noise from a safetensors file.
#include "backend/ops.h"
#include "core/error.h"
#include "io/checkpoint.h"
#include "pipeline/generate.h"

namespace vidax::pipeline {

Tensor read_noise_file(const std::string& path, const Shape& expected) {
  io::Checkpoint ck = io::Checkpoint::open(path);
  std::string name;
  for (const char* n : {"noise", "latents"})
    if (ck.contains(n)) {
      name = n;
      break;
    }
  if (name.empty()) {
    VIDAX_CHECK(ck.size() == 1, "noise file " << path << " holds " << ck.size()
                                              << " tensors and none is named 'noise' or 'latents'");
    name = ck.names().front();
  }
  Tensor t = ck.get(name);
  VIDAX_CHECK(dtype_is_float(t.dtype()), "noise file " << path << ": tensor '" << name << "' is " << t.str()
                                                       << ", expected a float tensor");
  const Shape stored = t.shape();
  if (!expected.empty() && t.dim() == static_cast<int64_t>(expected.size()) + 1 && t.size(0) == 1) t = t.squeeze(0);
  if (expected.empty()) {  // the shape is checked later (image-to-video: the images give the size)
    if (t.dim() == 5 && t.size(0) == 1) t = t.squeeze(0);
    VIDAX_CHECK(t.dim() == 4, "noise file " << path << ": tensor '" << name << "' has shape " << shape_str(stored)
                                            << ", expected [z, F', h, w] (or [1, ...])");
  }
  VIDAX_CHECK(expected.empty() || t.shape() == expected, "noise file " << path << ": tensor '" << name << "' has shape "
                                                   << shape_str(stored) << ", the request needs "
                                                   << shape_str(expected) << " (or [1, ...])");
  Tensor noise = t.contiguous().to(DType::F32).clone();
  // Blamed here, before any step: the per-step check would name the DiT.
  VIDAX_CHECK(ops::all_finite(noise), "noise file " << path << ": tensor '" << name
                                                    << "' holds NaN or Inf; the initial noise must be finite");
  return noise;
}

}  // namespace vidax::pipeline
