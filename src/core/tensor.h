// Tensor: a typed, strided view of a shared buffer. Buffers are owned aligned
// host memory, non-owning views into an mmap'd file (kept alive by a shared
// handle), device memory (allocated and copied through core/device_memory.h,
// never read here as host memory), or nothing at all (Device::Meta: shapes
// only, used by the recording backend). Copies of a Tensor share the buffer;
// ops are out-of-place unless named *_inplace (DESIGN.md principle 5).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <memory>
#include <string>
#include <vector>

#include "core/dtype.h"
#include "core/error.h"
#include "core/quant.h"

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

// The Tensor methods that make a new Meta value from another (see set_meta_tensor_observer).
enum class MetaTensorOp { View, Permute, Slice, Select, Unsqueeze, Squeeze, Reshape, Contiguous, Clone, Cast };

class Tensor {
 public:
  Tensor() = default;

  // Host memory for CPU, the registered DeviceMemory for other devices, none for Meta.
  static Tensor empty(const Shape& shape, DType dtype, Device device = Device::CPU);
  static Tensor zeros(const Shape& shape, DType dtype, Device device = Device::CPU);  // not Meta
  static Tensor full(const Shape& shape, double value, DType dtype);
  // Wraps existing bytes. strides empty = contiguous. Checks the view fits the buffer.
  static Tensor from_buffer(std::shared_ptr<Buffer> buf, size_t byte_offset, const Shape& shape,
                            DType dtype, const Strides& strides = {});
  // Copies host values into a new contiguous tensor of the given dtype.
  static Tensor from_f32(const std::vector<float>& v, const Shape& shape, DType dtype = DType::F32);
  static Tensor from_f64(const std::vector<double>& v, const Shape& shape, DType dtype = DType::F64);
  static Tensor from_i64(const std::vector<int64_t>& v, const Shape& shape);

  // Block-quantized tensors (core/quant.h: GGUF's Q8_0, Q4_K, ...): `shape` is the logical
  // shape (outermost first), the bytes are rows of the last dimension (a multiple of the
  // type's block) stored back to back. dtype() is U8 (no elementwise op takes them); what
  // reads values dequantizes: to(), to_f32_vector(), copy_into() and clone() of another
  // dtype. Views are refused but for slices of whole rows of a 2-D tensor (dim 0, step 1).
  static Tensor quantized(std::shared_ptr<Buffer> buf, size_t byte_offset, const Shape& shape, QuantType type);
  static Tensor empty_quantized(const Shape& shape, QuantType type, Device device = Device::CPU);
  // Quantizes any float tensor with ggml's reference quantizer (rows of its last dimension).
  static Tensor quantize(const Tensor& src, QuantType type);
  QuantType quant() const { return quant_; }
  bool is_quantized() const { return quant_ != QuantType::None; }

  // Scaled weight-only tensors (docs/quantization.md, "fp8 and int8"): `values` in F8_E4M3,
  // F8_E5M2 or I8 stored as they are (a zero-copy view of the file), with an F32 `scale` of one
  // value (shape [] or [1]: per tensor, ComfyUI's scaled fp8 `scale_weight`) or, for a 2-D
  // tensor, one per row ([rows]: per output channel, int8). The value of element (r, c) is
  // values[r, c] * scale[r] as ComfyUI computes it in a dtype D: D(values) * D(scale) rounded
  // to D (to(D)). Like a block-quantized tensor it has no element views but slices of whole
  // rows (dim 0, step 1; a per-row scale is sliced with them); what reads values applies the
  // scale: to(), to_f32_vector(), copy_into(). Throws on a scale of another shape.
  static Tensor scaled(const Tensor& values, const Tensor& scale);
  bool is_scaled() const { return scale_ != nullptr; }
  const Tensor& weight_scale() const;  // throws unless is_scaled()
  Tensor unscaled() const;             // the stored values without the scale (for writers)
  // Quantizes a float tensor to a scaled weight (docs/quantization.md): F8_E4M3 or F8_E5M2 with
  // one scale, amax / the type's largest finite value (448, 57344); I8 (a 2-D tensor) with one
  // scale per row, amax_row / 127, values rounded half to even and clamped to [-127, 127]. An
  // all-zero tensor (row) takes the scale 1.
  static Tensor quantize_scaled(const Tensor& src, DType type);
  // What nn::Linear keeps in storage form and widens a panel of rows at a time in the GEMM.
  bool is_weight_only_quantized() const { return is_quantized() || is_scaled(); }

  bool defined() const { return dtype_set_; }
  DType dtype() const { return dtype_; }
  Device device() const { return buf_ ? buf_->device() : device_; }
  const Shape& shape() const { return shape_; }
  const Strides& strides() const { return strides_; }
  int64_t dim() const { return static_cast<int64_t>(shape_.size()); }
  int64_t size(int64_t d) const;  // negative d counts from the end
  int64_t numel() const { return shape_numel(shape_); }
  size_t nbytes() const;  // a quantized tensor's: its blocks' bytes
  size_t byte_offset() const { return offset_; }
  const std::shared_ptr<Buffer>& buffer() const { return buf_; }
  bool is_contiguous() const;
  // Meta tensors: the identity of the value this handle shows (every Meta tensor made by
  // empty() or a view gets a fresh one; copies of the handle share it), which the
  // recording backend maps to its SSA value ids. 0 for other devices.
  uint64_t meta_value() const { return meta_value_; }

  // Raw access, for kernels and I/O only (model code never calls these). On a device
  // other than the host this is a device pointer.
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

  // Copies (new buffer, on the same device).
  Tensor reshape(const Shape& shape) const;  // a view when contiguous, else a copy
  Tensor contiguous() const;                 // self when already contiguous
  Tensor clone() const;                      // always a new contiguous buffer
  Tensor to(DType dtype) const;              // converts (RNE like torch); self when same dtype
  // A contiguous host copy of any tensor but Meta's (self when already host and contiguous).
  Tensor to_host() const;

  // Host conveniences for tests and small host-side math (any dtype, any strides, any
  // device but Meta: device tensors are copied to the host first).
  std::vector<float> to_f32_vector() const;
  std::vector<double> to_f64_vector() const;
  std::string str() const;  // "F32[2, 3]", "Q8_0[64, 128]"

 private:
  // The view methods without the Meta observer (each public one notifies once).
  Tensor view_unobserved(const Shape& shape) const;
  Tensor permute_unobserved(const std::vector<int64_t>& dims) const;
  Tensor slice_unobserved(int64_t dim, int64_t start, int64_t end, int64_t step) const;
  Tensor clone_unobserved() const;
  // For a Meta tensor: gives `out` a fresh value identity and tells the observer; else `out`.
  Tensor observed(MetaTensorOp op, Tensor out, const std::vector<int64_t>& args) const;

  std::shared_ptr<Buffer> buf_;
  size_t offset_ = 0;  // bytes
  Shape shape_;
  Strides strides_;
  DType dtype_ = DType::F32;
  QuantType quant_ = QuantType::None;
  std::shared_ptr<const Tensor> scale_;  // scaled(): F32 [] / [1] / [rows]
  Device device_ = Device::CPU;  // used when there is no buffer (Meta)
  bool dtype_set_ = false;
  uint64_t meta_value_ = 0;
};

// Copies src (any strides) into dst (any strides, same shape), converting dtype. Either may
// live on any device but Meta (device bytes move through its DeviceMemory).
void copy_into(const Tensor& src, Tensor& dst);

// What core does to Meta tensors, for the recording backend (which cannot be included
// here: core < backend). The Tensor methods that make a new Meta value from another
// call the installed observer once with the input, the result and the method's integer
// arguments: View / Reshape: the result's shape; Permute: the permutation (transpose is
// recorded as its permutation); Slice: {dim, start, end, step} normalised (0 <= start <=
// end <= size); Select: {dim, index} normalised; Unsqueeze / Squeeze: {dim} normalised;
// Contiguous / Clone / Cast: none (Cast's dtype is the result's). A method that returns
// its input (contiguous() of a contiguous tensor, to() of the same dtype) calls nothing.
const char* meta_tensor_op_name(MetaTensorOp op);  // "view", "permute", ..., "copy" (Clone), "cast"
using MetaTensorObserver = void (*)(MetaTensorOp op, const Tensor& in, const Tensor& out,
                                    const std::vector<int64_t>& args);
void set_meta_tensor_observer(MetaTensorObserver observer);  // nullptr: none

}  // namespace vidax
