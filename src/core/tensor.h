// Tensor: a typed, strided view of a shared buffer. Buffers are owned aligned
// host memory, non-owning views into an mmap'd file (kept alive by a shared
// handle), device memory, or nothing at all (Device::Meta: shapes only, used by
// the recording backend). Copies of a Tensor share the buffer; ops are
// out-of-place unless named *_inplace (DESIGN.md principle 5).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"

namespace vidax {

enum class Device : uint8_t { CPU, CUDA, Meta };
const char* device_name(Device d);

using Shape = std::vector<int64_t>;
using Strides = std::vector<int64_t>;  // in elements
std::string shape_str(const Shape& s);  // "[2, 3, 4]"
int64_t shape_numel(const Shape& s);
Strides contiguous_strides(const Shape& s);

// A span of bytes and whatever keeps it alive.
class Buffer {
 public:
  Buffer(void* data, size_t bytes, Device dev, std::shared_ptr<void> keepalive = nullptr)
      : data_(data), bytes_(bytes), device_(dev), keepalive_(std::move(keepalive)) {}
  virtual ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }
  bool owned() const { return owned_; }

  static std::shared_ptr<Buffer> allocate_host(size_t bytes);  // 64-byte aligned, uninitialised
  // A view of memory owned by someone else (e.g. an mmap); keepalive holds it.
  static std::shared_ptr<Buffer> view(void* data, size_t bytes, std::shared_ptr<void> keepalive,
                                      Device dev = Device::CPU);

 private:
  void* data_;
  size_t bytes_;
  Device device_;
  std::shared_ptr<void> keepalive_;
  bool owned_ = false;
  size_t block_bytes_ = 0;  // owned: the host_memory block's size
};

class Tensor {
 public:
  Tensor() = default;

  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::CPU);
  static Tensor zeros(const Shape& shape, DType dtype);
  static Tensor full(const Shape& shape, double value, DType dtype);
  // Wraps existing bytes. strides empty = contiguous. Checks the view fits the buffer.
  static Tensor from_buffer(std::shared_ptr<Buffer> buf, size_t byte_offset, const Shape& shape,
                            DType dtype, const Strides& strides = {});
  // Copies host values into a new contiguous tensor of the given dtype.
  static Tensor from_f32(const std::vector<float>& v, const Shape& shape, DType dtype = DType::F32);
  static Tensor from_f64(const std::vector<double>& v, const Shape& shape, DType dtype = DType::F64);
  static Tensor from_i64(const std::vector<int64_t>& v, const Shape& shape);

  bool defined() const { return dtype_set_; }
  DType dtype() const { return dtype_; }
  Device device() const { return buf_ ? buf_->device() : device_; }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }
  size_t byte_offset() const { return offset_; }
  const std::shared_ptr<Buffer>& buffer() const { return buf_; }
  bool is_contiguous() const;

  // Raw access, for kernels and I/O only (model code never calls these).
  void* data_ptr() const;
  template <class T> T* data() const { return static_cast<T*>(data_ptr()); }

  // Views (share the buffer).
  Tensor view(const Shape& shape) const;  // needs contiguity; one -1 is inferred
  Tensor permute(const std::vector<int64_t>& dims) const;
  Tensor transpose(int64_t a, int64_t b) const;
  Tensor slice(int64_t dim, int64_t start, int64_t end, int64_t step = 1) const;
  Tensor select(int64_t dim, int64_t index) const;  // drops dim
  Tensor unsqueeze(int64_t dim) const;
  Tensor squeeze(int64_t dim) const;

  // Copies (new buffer).
  Tensor reshape(const Shape& shape) const;  // a view when contiguous, else a copy
  Tensor contiguous() const;                 // self when already contiguous
  Tensor clone() const;                      // always a new contiguous buffer
  Tensor to(DType dtype) const;              // converts (RNE like torch); self when same dtype

  // Host conveniences for tests and small host-side math (any dtype, any strides).
  std::vector<float> to_f32_vector() const;
  std::vector<double> to_f64_vector() const;
  std::string str() const;  // "F32[2, 3]"

 private:
  std::shared_ptr<Buffer> buf_;
  size_t offset_ = 0;  // bytes
  Shape shape_;
  Strides strides_;
  DType dtype_ = DType::F32;
  Device device_ = Device::CPU;  // used when there is no buffer (Meta)
  bool dtype_set_ = false;
};

// Copies src (any strides) into dst (any strides, same shape), converting dtype.
void copy_into(const Tensor& src, Tensor& dst);

}  // namespace vidax
