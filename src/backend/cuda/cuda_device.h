// CUDA device memory for Tensors, and host <-> device copies. The CUDA op set
// (cuBLASLt GEMM, flash attention) builds on this.
#pragma once
#include "core/tensor.h"

namespace vidax::cuda {

int device_count();                    // 0 when there is no usable GPU (no throw)
std::shared_ptr<Buffer> allocate(size_t bytes, int device = 0);
Tensor to_device(const Tensor& host, int device = 0);  // contiguous copy on the GPU
Tensor to_host(const Tensor& dev);                     // contiguous copy in host memory
// out = convert(in) on the GPU for F32 <-> BF16 / F16 (device tensors, contiguous).
Tensor cast(const Tensor& dev, DType dtype);

}  // namespace vidax::cuda
