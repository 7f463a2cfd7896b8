#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include "backend/cuda/cuda_device.h"

#include "core/device_memory.h"

namespace vidax::cuda {

namespace {
void check(cudaError_t r, const char* what) {
  VIDAX_CHECK(r == cudaSuccess, "CUDA " << what << " failed: " << cudaGetErrorString(r));
}

template <class In, class Out>
__global__ void convert_kernel(const In* in, Out* out, size_t n) {
  size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x;
  if (i < n) out[i] = static_cast<Out>(static_cast<float>(in[i]));
}
}  // namespace

int device_count() {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the sticky "no device" error
    return 0;
  }
  return n;
}

std::shared_ptr<Buffer> allocate(size_t bytes, int device) {
  check(cudaSetDevice(device), "cudaSetDevice");
  void* p = nullptr;
  check(cudaMalloc(&p, bytes ? bytes : 1), "cudaMalloc");
  std::shared_ptr<void> owner(p, [](void* q) { cudaFree(q); });
  return Buffer::view(p, bytes, owner, Device::CUDA);
}

Tensor to_device(const Tensor& host, int device) {
  VIDAX_CHECK(host.device() == Device::CPU, "to_device: " << host.str() << " is not in host memory");
  Tensor c = host.contiguous();
  Tensor d = Tensor::from_buffer(allocate(c.nbytes(), device), 0, c.shape(), c.dtype());
  check(cudaMemcpy(d.data_ptr(), c.data_ptr(), c.nbytes(), cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  return d;
}

Tensor to_host(const Tensor& dev) {
  VIDAX_CHECK(dev.device() == Device::CUDA, "to_host: " << dev.str() << " is not on a GPU");
  VIDAX_CHECK(dev.is_contiguous(), "to_host: " << dev.str() << " must be contiguous");
  Tensor h = Tensor::empty(dev.shape(), dev.dtype());
  check(cudaMemcpy(h.data_ptr(), dev.data_ptr(), dev.nbytes(), cudaMemcpyDeviceToHost), "cudaMemcpy D2H");
  return h;
}

Tensor cast(const Tensor& dev, DType dtype) {
  VIDAX_CHECK(dev.device() == Device::CUDA && dev.is_contiguous(), "cuda::cast: needs a contiguous GPU tensor");
  Tensor out = Tensor::from_buffer(allocate(static_cast<size_t>(dev.numel()) * dtype_size(dtype)), 0,
                                   dev.shape(), dtype);
  const size_t n = static_cast<size_t>(dev.numel());
  const unsigned threads = 256, blocks = static_cast<unsigned>((n + threads - 1) / threads);
  if (n == 0) return out;
  auto launch = [&](auto* in, auto* o) { convert_kernel<<<blocks, threads>>>(in, o, n); };
  const DType s = dev.dtype();
  if (s == DType::F32 && dtype == DType::BF16) launch(dev.data<float>(), out.data<__nv_bfloat16>());
  else if (s == DType::BF16 && dtype == DType::F32) launch(dev.data<__nv_bfloat16>(), out.data<float>());
  else if (s == DType::F32 && dtype == DType::F16) launch(dev.data<float>(), out.data<__half>());
  else if (s == DType::F16 && dtype == DType::F32) launch(dev.data<__half>(), out.data<float>());
  else throw Error(msg() << "cuda::cast: " << dtype_name(s) << " -> " << dtype_name(dtype) << " not supported yet");
  check(cudaGetLastError(), "convert kernel launch");
  check(cudaDeviceSynchronize(), "convert kernel");
  return out;
}

namespace {

// Device memory of GPU 0 for core (Tensor::empty / clone / to / copy_into on Device::CUDA),
// registered when this library is linked in.
class CudaMemory final : public DeviceMemory {
 public:
  std::shared_ptr<Buffer> allocate(size_t bytes) override { return cuda::allocate(bytes, 0); }
  void copy_from_host(const void* src, const Buffer& dst, size_t dst_offset, size_t bytes) override {
    check(cudaMemcpy(static_cast<char*>(dst.data()) + dst_offset, src, bytes, cudaMemcpyHostToDevice), "cudaMemcpy H2D");
  }
  void copy_to_host(const Buffer& src, size_t src_offset, void* dst, size_t bytes) override {
    check(cudaMemcpy(dst, static_cast<const char*>(src.data()) + src_offset, bytes, cudaMemcpyDeviceToHost),
          "cudaMemcpy D2H");
  }
  void copy_on_device(const Buffer& src, size_t src_offset, const Buffer& dst, size_t dst_offset,
                      size_t bytes) override {
    check(cudaMemcpy(static_cast<char*>(dst.data()) + dst_offset, static_cast<const char*>(src.data()) + src_offset,
                     bytes, cudaMemcpyDeviceToDevice),
          "cudaMemcpy D2D");
  }
  void fill_zero(const Buffer& dst, size_t dst_offset, size_t bytes) override {
    check(cudaMemset(static_cast<char*>(dst.data()) + dst_offset, 0, bytes), "cudaMemset");
  }
};

[[maybe_unused]] const bool kRegistered = [] {
  static CudaMemory memory;
  register_device_memory(Device::CUDA, &memory);
  return true;
}();

}  // namespace

}  // namespace vidax::cuda
