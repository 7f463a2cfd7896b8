#include "core/tensor.h"

#include <cmath>

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <numeric>
#include <sstream>

#include "core/device_memory.h"
#include "core/host_memory.h"

namespace vidax {

namespace {

constexpr size_t kDevices = 3;  // Device::CPU, CUDA, Meta
std::array<DeviceMemory*, kDevices> g_device_memory{};
std::atomic<MetaTensorObserver> g_meta_observer{nullptr};
std::atomic<uint64_t> g_next_meta_value{1};

uint64_t next_meta_value() { return g_next_meta_value.fetch_add(1, std::memory_order_relaxed); }

bool on_host(Device d) { return d == Device::CPU; }

// Bytes from a tensor's first element to one past its last (0 when empty).
size_t span_bytes(const Tensor& t) {
  if (t.numel() == 0) return 0;
  int64_t hi = 0;
  for (int64_t i = 0; i < t.dim(); ++i) hi += (t.shape()[static_cast<size_t>(i)] - 1) * t.strides()[static_cast<size_t>(i)];
  return static_cast<size_t>(hi + 1) * dtype_size(t.dtype());
}

void check_has_values(const Tensor& t, const char* what) {
  VIDAX_CHECK(t.device() != Device::Meta, what << ": " << t.str() << " is a Meta tensor (shapes only, no values)");
}

void copy_into_host(const Tensor& src, Tensor& dst);

void refuse_quantized(const Tensor& t, const char* what) {
  VIDAX_CHECK(!t.is_quantized(), what << " of the quantized tensor " << t.str()
                                      << ": a block-quantized tensor has no element views (dequantize it with to())");
  VIDAX_CHECK(!t.is_scaled(), what << " of the scaled tensor " << t.str()
                                   << ": a scaled fp8/int8 tensor has no element views (widen it with to())");
}

// The rounding of dtype d applied to an f32 value (identity for F32).
float round_to(float v, DType d) {
  switch (d) {
    case DType::BF16: return bf16_to_f32(f32_to_bf16(v));
    case DType::F16: return f16_to_f32(f32_to_f16(v));
    default: return v;
  }
}

// A quantized tensor's values as a new contiguous F32 (or BF16: rounded in the same pass) tensor.
Tensor dequantize_host(const Tensor& q, DType dtype = DType::F32) {
  check_has_values(q, "dequantize");
  VIDAX_CHECK(q.device() == Device::CPU, "dequantize: " << q.str() << " is not in host memory");
  Tensor out = Tensor::empty(q.shape(), dtype);
  if (q.numel() == 0) return out;
  const int64_t n = q.size(-1), rows = q.numel() / n;
  const size_t rb = quant_row_bytes(q.quant(), n);
  const auto* src = static_cast<const uint8_t*>(q.data_ptr());
  if (dtype == DType::BF16) {
    uint16_t* dst = out.data<uint16_t>();
#pragma omp parallel for schedule(static) if (rows * n >= (1 << 16))
    for (int64_t r = 0; r < rows; ++r) dequantize_row_bf16(q.quant(), src + r * rb, dst + r * n, n);
    return out;
  }
  float* dst = out.data<float>();
#pragma omp parallel for schedule(static) if (rows * n >= (1 << 16))
  for (int64_t r = 0; r < rows; ++r) dequantize_row(q.quant(), src + r * rb, dst + r * n, n);
  return out;
}

}  // namespace

size_t Tensor::nbytes() const {
  if (quant_ == QuantType::None) return static_cast<size_t>(numel()) * dtype_size(dtype_);
  if (shape_.empty() || numel() == 0) return 0;
  return static_cast<size_t>(numel() / shape_.back()) * quant_row_bytes(quant_, shape_.back());
}

Tensor Tensor::empty_quantized(const Shape& shape, QuantType type, Device device) {
  VIDAX_CHECK(type != QuantType::None, "empty_quantized: no quantized type");
  VIDAX_CHECK(!shape.empty() && shape.back() % quant_traits(type).block == 0,
              quant_name(type) << shape_str(shape) << ": the last dimension is not a multiple of the "
                               << quant_traits(type).block << "-value block");
  for (int64_t d : shape) VIDAX_CHECK(d >= 0, "negative dimension in shape " << shape_str(shape));
  VIDAX_CHECK(device == Device::CPU || device == Device::Meta,
              "quantized tensors live in host memory (or Meta), not on " << device_name(device));
  Tensor t;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = DType::U8;
  t.quant_ = type;
  t.dtype_set_ = true;
  t.device_ = device;
  if (device == Device::CPU) t.buf_ = Buffer::allocate_host(t.nbytes());
  else t.meta_value_ = next_meta_value();
  return t;
}

Tensor Tensor::quantized(std::shared_ptr<Buffer> buf, size_t byte_offset, const Shape& shape, QuantType type) {
  VIDAX_CHECK(buf != nullptr, "Tensor::quantized: null buffer");
  VIDAX_CHECK(type != QuantType::None, "Tensor::quantized: no quantized type");
  VIDAX_CHECK(!shape.empty() && shape.back() % quant_traits(type).block == 0,
              quant_name(type) << shape_str(shape) << ": the last dimension is not a multiple of the "
                               << quant_traits(type).block << "-value block");
  for (int64_t d : shape) VIDAX_CHECK(d >= 0, "negative dimension in shape " << shape_str(shape));
  Tensor t;
  t.buf_ = std::move(buf);
  t.offset_ = byte_offset;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = DType::U8;
  t.quant_ = type;
  t.dtype_set_ = true;
  VIDAX_CHECK(byte_offset <= t.buf_->bytes() && t.nbytes() <= t.buf_->bytes() - byte_offset,
              "quantized view " << t.str() << " at byte offset " << byte_offset << " (" << t.nbytes()
                                << " bytes) runs past the buffer's " << t.buf_->bytes() << " bytes");
  return t;
}

Tensor Tensor::quantize(const Tensor& src, QuantType type) {
  VIDAX_CHECK(src.dim() >= 1, "quantize: " << src.str() << " is a scalar");
  if (src.is_quantized() && src.quant() == type) return src;
  Tensor out = empty_quantized(src.shape(), type, src.device() == Device::Meta ? Device::Meta : Device::CPU);
  if (src.device() == Device::Meta || out.numel() == 0) return out;
  const Tensor x = src.to(DType::F32).to_host();
  const int64_t n = src.size(-1), rows = src.numel() / n;
  const size_t rb = quant_row_bytes(type, n);
  auto* dst = static_cast<uint8_t*>(out.data_ptr());
  const float* xs = x.data<float>();
#pragma omp parallel for schedule(dynamic, 16) if (rows * n >= (1 << 16))
  for (int64_t r = 0; r < rows; ++r) quantize_row(type, xs + r * n, dst + r * rb, n);
  return out;
}

void register_device_memory(Device device, DeviceMemory* memory) {
  VIDAX_CHECK(device != Device::CPU && device != Device::Meta,
              "register_device_memory: " << device_name(device) << " memory is built in and cannot be replaced");
  g_device_memory[static_cast<size_t>(device)] = memory;
}

std::string registered_device_memories() {
  std::string s = "cpu (built in)";
  for (size_t i = 0; i < kDevices; ++i)
    if (g_device_memory[i]) s += std::string(", ") + device_name(static_cast<Device>(i));
  return s;
}

DeviceMemory& device_memory(Device device) {
  DeviceMemory* m = g_device_memory[static_cast<size_t>(device)];
  VIDAX_CHECK(m != nullptr, "no device memory registered for " << device_name(device) << " (registered: "
                                                               << registered_device_memories() << ")");
  return *m;
}

const char* meta_tensor_op_name(MetaTensorOp op) {
  switch (op) {
    case MetaTensorOp::View: return "view";
    case MetaTensorOp::Permute: return "permute";
    case MetaTensorOp::Slice: return "slice";
    case MetaTensorOp::Select: return "select";
    case MetaTensorOp::Unsqueeze: return "unsqueeze";
    case MetaTensorOp::Squeeze: return "squeeze";
    case MetaTensorOp::Reshape: return "reshape";
    case MetaTensorOp::Contiguous: return "contiguous";
    case MetaTensorOp::Clone: return "copy";
    case MetaTensorOp::Cast: return "cast";
  }
  return "?";
}

void set_meta_tensor_observer(MetaTensorObserver observer) { g_meta_observer.store(observer, std::memory_order_relaxed); }

Tensor Tensor::observed(MetaTensorOp op, Tensor out, const std::vector<int64_t>& args) const {
  if (device() != Device::Meta) return out;
  out.meta_value_ = next_meta_value();
  if (MetaTensorObserver f = g_meta_observer.load(std::memory_order_relaxed)) f(op, *this, out, args);
  return out;
}

const char* device_name(Device d) {
  switch (d) {
    case Device::CPU: return "cpu";
    case Device::CUDA: return "cuda";
    case Device::Meta: return "meta";
  }
  return "?";
}

std::string shape_str(const Shape& s) {
  std::ostringstream o;
  o << '[';
  for (size_t i = 0; i < s.size(); ++i) o << (i ? ", " : "") << s[i];
  o << ']';
  return o.str();
}

int64_t shape_numel(const Shape& s) {
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  return n;
}

Strides contiguous_strides(const Shape& s) {
  Strides st(s.size());
  int64_t acc = 1;
  for (size_t i = s.size(); i-- > 0;) {
    st[i] = acc;
    acc *= std::max<int64_t>(s[i], 1);
  }
  return st;
}

Buffer::~Buffer() {
  if (owned_) host_memory::release(data_, block_bytes_);
}

std::shared_ptr<Buffer> Buffer::allocate_host(size_t bytes) {
  size_t block_bytes = 0;
  void* p = host_memory::allocate(bytes, &block_bytes);  // 64-byte aligned; large blocks come from its cache
  auto b = std::shared_ptr<Buffer>(new Buffer(p, bytes, Device::CPU));
  b->owned_ = true;
  b->block_bytes_ = block_bytes;
  return b;
}

std::shared_ptr<Buffer> Buffer::view(void* data, size_t bytes, std::shared_ptr<void> keepalive, Device dev) {
  return std::make_shared<Buffer>(data, bytes, dev, std::move(keepalive));
}

Tensor Tensor::empty(const Shape& shape, DType dtype, Device device) {
  for (int64_t d : shape) VIDAX_CHECK(d >= 0, "negative dimension in shape " << shape_str(shape));
  Tensor t;
  t.shape_ = shape;
  t.strides_ = contiguous_strides(shape);
  t.dtype_ = dtype;
  t.dtype_set_ = true;
  t.device_ = device;
  if (device == Device::CPU) {
    t.buf_ = Buffer::allocate_host(t.nbytes());
  } else if (device == Device::Meta) {
    t.meta_value_ = next_meta_value();
  } else {
    t.buf_ = device_memory(device).allocate(t.nbytes());
    VIDAX_CHECK(t.buf_ && t.buf_->device() == device && t.buf_->bytes() >= t.nbytes(),
                "the " << device_name(device) << " device memory returned a wrong buffer for " << t.str());
  }
  return t;
}

Tensor Tensor::zeros(const Shape& shape, DType dtype, Device device) {
  VIDAX_CHECK(device != Device::Meta, "Tensor::zeros on meta: a Meta tensor has no values (use empty)");
  Tensor t = empty(shape, dtype, device);
  if (on_host(device)) std::memset(t.data_ptr(), 0, t.nbytes());
  else device_memory(device).fill_zero(*t.buf_, 0, t.nbytes());
  return t;
}

Tensor Tensor::full(const Shape& shape, double value, DType dtype) {
  Tensor t = empty(shape, dtype);
  std::vector<double> v(static_cast<size_t>(t.numel()), value);
  convert(v.data(), DType::F64, t.data_ptr(), dtype, v.size());
  return t;
}

Tensor Tensor::from_buffer(std::shared_ptr<Buffer> buf, size_t byte_offset, const Shape& shape,
                           DType dtype, const Strides& strides) {
  VIDAX_CHECK(buf != nullptr, "Tensor::from_buffer: null buffer");
  Tensor t;
  t.buf_ = std::move(buf);
  t.offset_ = byte_offset;
  t.shape_ = shape;
  t.strides_ = strides.empty() ? contiguous_strides(shape) : strides;
  VIDAX_CHECK(t.strides_.size() == shape.size(), "strides rank " << t.strides_.size()
                                                 << " != shape rank " << shape.size());
  t.dtype_ = dtype;
  t.dtype_set_ = true;
  // The highest element reached must lie inside the buffer.
  if (t.numel() > 0) {
    int64_t hi = 0;
    for (size_t i = 0; i < shape.size(); ++i) {
      VIDAX_CHECK(t.strides_[i] >= 0, "negative stride in view " << shape_str(shape));
      hi += (shape[i] - 1) * t.strides_[i];
    }
    size_t end = byte_offset + static_cast<size_t>(hi + 1) * dtype_size(dtype);
    VIDAX_CHECK(end <= t.buf_->bytes(), "tensor view " << dtype_name(dtype) << shape_str(shape)
                                        << " at byte offset " << byte_offset << " ends at byte " << end
                                        << ", past the buffer's " << t.buf_->bytes() << " bytes");
  }
  return t;
}

Tensor Tensor::from_f32(const std::vector<float>& v, const Shape& shape, DType dtype) {
  VIDAX_CHECK(static_cast<int64_t>(v.size()) == shape_numel(shape),
              "from_f32: " << v.size() << " values for shape " << shape_str(shape));
  Tensor t = empty(shape, dtype);
  convert(v.data(), DType::F32, t.data_ptr(), dtype, v.size());
  return t;
}

Tensor Tensor::from_f64(const std::vector<double>& v, const Shape& shape, DType dtype) {
  VIDAX_CHECK(static_cast<int64_t>(v.size()) == shape_numel(shape),
              "from_f64: " << v.size() << " values for shape " << shape_str(shape));
  Tensor t = empty(shape, dtype);
  convert(v.data(), DType::F64, t.data_ptr(), dtype, v.size());
  return t;
}

Tensor Tensor::from_i64(const std::vector<int64_t>& v, const Shape& shape) {
  VIDAX_CHECK(static_cast<int64_t>(v.size()) == shape_numel(shape),
              "from_i64: " << v.size() << " values for shape " << shape_str(shape));
  Tensor t = empty(shape, DType::I64);
  std::memcpy(t.data_ptr(), v.data(), v.size() * 8);
  return t;
}

int64_t Tensor::size(int64_t d) const {
  int64_t n = dim();
  if (d < 0) d += n;
  VIDAX_CHECK(d >= 0 && d < n, "dimension " << d << " out of range for " << str());
  return shape_[static_cast<size_t>(d)];
}

bool Tensor::is_contiguous() const {
  int64_t acc = 1;
  for (size_t i = shape_.size(); i-- > 0;) {
    if (shape_[i] == 1) continue;
    if (strides_[i] != acc) return false;
    acc *= shape_[i];
  }
  return true;
}

void* Tensor::data_ptr() const {
  VIDAX_CHECK(buf_ != nullptr, "tensor " << str() << " on " << device_name(device()) << " has no data");
  return static_cast<char*>(buf_->data()) + offset_;
}

static int64_t norm_dim(int64_t d, int64_t n, const Tensor& t) {
  if (d < 0) d += n;
  VIDAX_CHECK(d >= 0 && d < n, "dimension out of range for " << t.str());
  return d;
}

Tensor Tensor::view(const Shape& shape) const {
  Tensor t = view_unobserved(shape);
  return observed(MetaTensorOp::View, t, t.shape_);
}

Tensor Tensor::view_unobserved(const Shape& shape) const {
  refuse_quantized(*this, "view");
  VIDAX_CHECK(is_contiguous(), "view of non-contiguous tensor " << str() << " (use reshape)");
  Shape s = shape;
  int64_t known = 1, infer = -1;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == -1) {
      VIDAX_CHECK(infer < 0, "view: more than one -1 in " << shape_str(shape));
      infer = static_cast<int64_t>(i);
    } else {
      known *= s[i];
    }
  }
  if (infer >= 0) {
    VIDAX_CHECK(known > 0 && numel() % known == 0, "view: cannot infer -1 in " << shape_str(shape) << " for " << str());
    s[static_cast<size_t>(infer)] = numel() / known;
  }
  VIDAX_CHECK(shape_numel(s) == numel(), "view: shape " << shape_str(s) << " does not match " << str());
  Tensor t = *this;
  t.shape_ = s;
  t.strides_ = contiguous_strides(s);
  return t;
}

Tensor Tensor::permute(const std::vector<int64_t>& dims) const {
  if (device() != Device::Meta) return permute_unobserved(dims);
  std::vector<int64_t> p(dims.size());
  for (size_t i = 0; i < dims.size(); ++i) p[i] = dims[i] < 0 ? dims[i] + dim() : dims[i];
  return observed(MetaTensorOp::Permute, permute_unobserved(dims), p);
}

Tensor Tensor::permute_unobserved(const std::vector<int64_t>& dims) const {
  refuse_quantized(*this, "permute");
  VIDAX_CHECK(static_cast<int64_t>(dims.size()) == dim(), "permute: " << dims.size() << " dims for " << str());
  Tensor t = *this;
  std::vector<bool> seen(dims.size(), false);
  for (size_t i = 0; i < dims.size(); ++i) {
    int64_t d = norm_dim(dims[i], dim(), *this);
    VIDAX_CHECK(!seen[static_cast<size_t>(d)], "permute: repeated dim " << d);
    seen[static_cast<size_t>(d)] = true;
    t.shape_[i] = shape_[static_cast<size_t>(d)];
    t.strides_[i] = strides_[static_cast<size_t>(d)];
  }
  return t;
}

Tensor Tensor::transpose(int64_t a, int64_t b) const {
  std::vector<int64_t> p(static_cast<size_t>(dim()));
  std::iota(p.begin(), p.end(), 0);
  std::swap(p[static_cast<size_t>(norm_dim(a, dim(), *this))], p[static_cast<size_t>(norm_dim(b, dim(), *this))]);
  return observed(MetaTensorOp::Permute, permute_unobserved(p), p);
}

Tensor Tensor::slice(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = norm_dim(d, dim(), *this);
  const int64_t n = shape_[static_cast<size_t>(d)];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  return observed(MetaTensorOp::Slice, slice_unobserved(d, start, end, step), {d, start, end, step});
}

Tensor Tensor::slice_unobserved(int64_t d, int64_t start, int64_t end, int64_t step) const {
  d = norm_dim(d, dim(), *this);
  int64_t n = shape_[static_cast<size_t>(d)];
  if (start < 0) start += n;
  if (end < 0) end += n;
  start = std::clamp<int64_t>(start, 0, n);
  end = std::clamp<int64_t>(end, start, n);
  VIDAX_CHECK(step >= 1, "slice: step must be >= 1");
  if (is_scaled()) {  // whole rows; a per-row scale comes with them
    VIDAX_CHECK(d == 0 && step == 1, "slice of the scaled tensor " << str() << ": only whole rows (dim 0, step 1)");
    Tensor t = unscaled().slice_unobserved(d, start, end, step);
    t.scale_ = scale_->numel() == 1 ? scale_ : std::make_shared<const Tensor>(scale_->slice(0, start, end));
    return t;
  }
  Tensor t = *this;
  if (is_quantized()) {  // whole rows of a 2-D quantized tensor
    VIDAX_CHECK(dim() == 2 && d == 0 && step == 1,
                "slice of the quantized tensor " << str() << ": only whole rows (dim 0, step 1)");
    t.offset_ += static_cast<size_t>(start) * quant_row_bytes(quant_, shape_[1]);
    t.shape_[0] = end - start;
    t.strides_ = contiguous_strides(t.shape_);
    return t;
  }
  t.offset_ += static_cast<size_t>(start * strides_[static_cast<size_t>(d)]) * dtype_size(dtype_);
  t.shape_[static_cast<size_t>(d)] = (end - start + step - 1) / step;
  t.strides_[static_cast<size_t>(d)] *= step;
  return t;
}

Tensor Tensor::select(int64_t d, int64_t index) const {
  d = norm_dim(d, dim(), *this);
  int64_t n = shape_[static_cast<size_t>(d)];
  if (index < 0) index += n;
  VIDAX_CHECK(index >= 0 && index < n, "select: index " << index << " out of range for " << str());
  refuse_quantized(*this, "select");
  Tensor t = slice_unobserved(d, index, index + 1, 1);
  t.shape_.erase(t.shape_.begin() + d);
  t.strides_.erase(t.strides_.begin() + d);
  return observed(MetaTensorOp::Select, t, {d, index});
}

Tensor Tensor::unsqueeze(int64_t d) const {
  if (d < 0) d += dim() + 1;
  VIDAX_CHECK(d >= 0 && d <= dim(), "unsqueeze: dim out of range for " << str());
  refuse_quantized(*this, "unsqueeze");
  Tensor t = *this;
  int64_t st = d < dim() ? strides_[static_cast<size_t>(d)] * shape_[static_cast<size_t>(d)] : 1;
  t.shape_.insert(t.shape_.begin() + d, 1);
  t.strides_.insert(t.strides_.begin() + d, st);
  return observed(MetaTensorOp::Unsqueeze, t, {d});
}

Tensor Tensor::squeeze(int64_t d) const {
  d = norm_dim(d, dim(), *this);
  VIDAX_CHECK(shape_[static_cast<size_t>(d)] == 1, "squeeze: dim " << d << " of " << str() << " is not 1");
  refuse_quantized(*this, "squeeze");
  Tensor t = *this;
  t.shape_.erase(t.shape_.begin() + d);
  t.strides_.erase(t.strides_.begin() + d);
  return observed(MetaTensorOp::Squeeze, t, {d});
}

Tensor Tensor::reshape(const Shape& shape) const {
  if (device() != Device::Meta) return is_contiguous() ? view(shape) : contiguous().view(shape);
  Tensor t = is_contiguous() ? view_unobserved(shape) : clone_unobserved().view_unobserved(shape);
  return observed(MetaTensorOp::Reshape, t, t.shape_);
}

Tensor Tensor::contiguous() const {
  if (is_contiguous()) return *this;
  return observed(MetaTensorOp::Contiguous, clone_unobserved(), {});
}

Tensor Tensor::clone() const { return observed(MetaTensorOp::Clone, clone_unobserved(), {}); }

Tensor Tensor::clone_unobserved() const {
  if (is_scaled()) {
    Tensor t = unscaled().clone_unobserved();
    t.scale_ = scale_;
    return t;
  }
  if (is_quantized()) {
    Tensor out = Tensor::empty_quantized(shape_, quant_, device());
    if (device() != Device::Meta && nbytes() > 0) std::memcpy(out.data_ptr(), data_ptr(), nbytes());
    return out;
  }
  Tensor out = Tensor::empty(shape_, dtype_, device());
  if (device() == Device::Meta) return out;
  copy_into(*this, out);
  return out;
}

Tensor Tensor::to(DType dtype) const {
  if (is_scaled()) {
    if (device() == Device::Meta) return observed(MetaTensorOp::Cast, Tensor::empty(shape_, dtype, Device::Meta), {});
    // ComfyUI: weight.to(D) * scale_weight.to(D). The stored values are exact in f32, bf16 and
    // f16, and their product with a D-rounded scale is exact in f32, so rounding the f32
    // product to D once is torch's D multiply.
    VIDAX_CHECK(dtype_is_float(dtype), "to: a scaled tensor widens to a float dtype, not " << dtype_name(dtype));
    VIDAX_CHECK(device() == Device::CPU, "to: scaled tensors live in host memory, not " << device_name(device()));
    // Every stored type is one byte: a 256-entry table of its values, then one pass per row.
    float lut[256];
    for (int b = 0; b < 256; ++b) {
      const auto v = static_cast<uint8_t>(b);
      lut[b] = dtype_ == DType::F8_E4M3 ? f8e4m3fn_to_f32(v)
             : dtype_ == DType::F8_E5M2 ? f8e5m2_to_f32(v)
                                        : static_cast<float>(static_cast<int8_t>(v));
    }
    const Tensor src = unscaled().contiguous();
    const auto* in = static_cast<const uint8_t*>(src.data_ptr());
    const std::vector<float> s = scale_->to_f32_vector();
    const bool per_row = s.size() > 1;
    const int64_t n = numel();
    const int64_t per = per_row ? n / shape_[0] : n;
    const DType out_dt = dtype == DType::BF16 ? DType::BF16 : DType::F32;
    Tensor out = Tensor::empty(shape_, out_dt);
    std::vector<float> rs(s.size());
    for (size_t k = 0; k < s.size(); ++k) rs[k] = round_to(s[k], dtype);
    // Segments of `seg` values that share one scale: rows (per-row scales) or 4096-value chunks.
    const int64_t seg = per_row ? per : 4096, segs = seg == 0 ? 0 : (n + seg - 1) / seg;
    uint16_t* ob = out_dt == DType::BF16 ? out.data<uint16_t>() : nullptr;
    float* of = out_dt == DType::F32 ? out.data<float>() : nullptr;
#pragma omp parallel for schedule(static) if (n >= (1 << 16))
    for (int64_t g = 0; g < segs; ++g) {
      const int64_t i0 = g * seg, i1 = std::min(n, i0 + seg);
      const float sr = rs[per_row ? static_cast<size_t>(g) : 0];
      if (ob)
        for (int64_t i = i0; i < i1; ++i) ob[i] = f32_to_bf16(lut[in[i]] * sr);
      else
        for (int64_t i = i0; i < i1; ++i) of[i] = lut[in[i]] * sr;
    }
    return out_dt == dtype ? out : out.to(dtype);
  }
  if (is_quantized()) {
    if (device() == Device::Meta) return observed(MetaTensorOp::Cast, Tensor::empty(shape_, dtype, Device::Meta), {});
    if (dtype == DType::F32 || dtype == DType::BF16) return dequantize_host(*this, dtype);
    return dequantize_host(*this).to(dtype);
  }
  if (dtype == dtype_) return *this;
  Tensor out = Tensor::empty(shape_, dtype, device());
  if (device() == Device::Meta) return observed(MetaTensorOp::Cast, out, {});
  copy_into(*this, out);
  return out;
}

Tensor Tensor::to_host() const {
  check_has_values(*this, "to_host");
  if (is_quantized()) {
    VIDAX_CHECK(on_host(device()), "to_host: quantized tensors live in host memory");
    return *this;
  }
  if (on_host(device())) return contiguous();
  // Stage the bytes the view spans, then walk the strides in host memory.
  const size_t span = span_bytes(*this);
  if (span == 0) return Tensor::empty(shape_, dtype_);
  std::shared_ptr<Buffer> staged = Buffer::allocate_host(span);
  device_memory(device()).copy_to_host(*buf_, offset_, staged->data(), span);
  return Tensor::from_buffer(staged, 0, shape_, dtype_, strides_).contiguous();
}

std::vector<float> Tensor::to_f32_vector() const {
  check_has_values(*this, "to_f32_vector");
  if (is_quantized() || is_scaled()) return to(DType::F32).to_f32_vector();
  Tensor c = to_host();
  std::vector<float> v(static_cast<size_t>(numel()));
  convert(c.data_ptr(), dtype_, v.data(), DType::F32, v.size());
  return v;
}

std::vector<double> Tensor::to_f64_vector() const {
  check_has_values(*this, "to_f64_vector");
  if (is_quantized() || is_scaled()) return to(DType::F32).to_f64_vector();
  Tensor c = to_host();
  std::vector<double> v(static_cast<size_t>(numel()));
  convert(c.data_ptr(), dtype_, v.data(), DType::F64, v.size());
  return v;
}

std::string Tensor::str() const {
  if (!defined()) return "<undefined tensor>";
  if (is_scaled()) return std::string(dtype_name(dtype_)) + (scale_->numel() == 1 ? "*scale" : "*row_scale") + shape_str(shape_);
  return std::string(is_quantized() ? quant_name(quant_) : dtype_name(dtype_)) + shape_str(shape_);
}

Tensor Tensor::scaled(const Tensor& values, const Tensor& scale) {
  VIDAX_CHECK(values.defined() && scale.defined(), "Tensor::scaled: undefined values or scale");
  VIDAX_CHECK(values.dtype() == DType::F8_E4M3 || values.dtype() == DType::F8_E5M2 || values.dtype() == DType::I8,
              "Tensor::scaled: values are " << values.str() << ", expected F8_E4M3, F8_E5M2 or I8");
  VIDAX_CHECK(!values.is_quantized() && !values.is_scaled(), "Tensor::scaled: values " << values.str() << " are already scaled");
  VIDAX_CHECK(dtype_is_float(scale.dtype()), "scale is " << scale.str() << ", expected a float tensor");
  const bool per_tensor = scale.numel() == 1 && scale.dim() <= 1;
  const bool per_row = values.dim() == 2 && scale.dim() == 1 && scale.size(0) == values.size(0);
  VIDAX_CHECK(per_tensor || per_row, "scale " << scale.str() << " does not fit the weight " << values.str()
                                              << " (expected one value, shape [] or [1], or one per row, ["
                                              << (values.dim() >= 1 ? values.size(0) : 1) << "])");
  Tensor t = values;
  t.scale_ = std::make_shared<const Tensor>(scale.device() == Device::Meta ? scale : scale.to(DType::F32).to_host());
  return t;
}

Tensor Tensor::quantize_scaled(const Tensor& src, DType type) {
  VIDAX_CHECK(type == DType::F8_E4M3 || type == DType::F8_E5M2 || type == DType::I8,
              "quantize_scaled: " << dtype_name(type) << " is not a scaled weight type (F8_E4M3, F8_E5M2, I8)");
  VIDAX_CHECK(type != DType::I8 || src.dim() == 2, "quantize_scaled: int8 takes a 2-D weight, not " << src.str());
  const Tensor x = src.to(DType::F32).to_host();
  const int64_t rows = type == DType::I8 ? x.size(0) : 1;
  const int64_t per = rows == 0 ? 0 : x.numel() / rows;
  const float* xs = x.data<float>();
  Tensor values = Tensor::empty(src.shape(), type);
  Tensor scale = Tensor::empty(type == DType::I8 ? Shape{rows} : Shape{}, DType::F32);
  auto* out = values.data<uint8_t>();
  float* sc = scale.data<float>();
  const float top = type == DType::I8 ? 127.0f : type == DType::F8_E4M3 ? 448.0f : 57344.0f;
#pragma omp parallel for schedule(static) if (x.numel() >= (1 << 16) && rows > 1)
  for (int64_t r = 0; r < rows; ++r) {
    float amax = 0.0f;
    for (int64_t i = 0; i < per; ++i) amax = std::max(amax, std::fabs(xs[r * per + i]));
    const float s = amax > 0.0f ? amax / top : 1.0f;
    sc[r] = s;
    for (int64_t i = 0; i < per; ++i) {
      const float v = xs[r * per + i] / s;
      if (type == DType::I8)
        out[r * per + i] = static_cast<uint8_t>(static_cast<int8_t>(std::clamp(std::nearbyint(v), -127.0f, 127.0f)));
      else
        out[r * per + i] = type == DType::F8_E4M3 ? f32_to_f8e4m3fn(v) : f32_to_f8e5m2(v);
    }
  }
  return Tensor::scaled(values, scale);
}

const Tensor& Tensor::weight_scale() const {
  VIDAX_CHECK(is_scaled(), "weight_scale: " << str() << " is not a scaled tensor");
  return *scale_;
}

Tensor Tensor::unscaled() const {
  Tensor t = *this;
  t.scale_.reset();
  return t;
}

void copy_into(const Tensor& src, Tensor& dst) {
  VIDAX_CHECK(src.shape() == dst.shape(), "copy: shape " << src.str() << " into " << dst.str());
  check_has_values(src, "copy_into (source)");
  check_has_values(dst, "copy_into (destination)");
  VIDAX_CHECK(!dst.is_scaled(), "copy: into the scaled tensor " << dst.str() << " (its stored values are read-only)");
  if (dst.is_quantized()) {
    VIDAX_CHECK(src.quant() == dst.quant() && on_host(src.device()) && on_host(dst.device()),
                "copy: " << src.str() << " into the quantized " << dst.str()
                         << " (quantize with Tensor::quantize, which rounds as ggml does)");
    if (dst.nbytes() > 0) std::memmove(dst.data_ptr(), src.data_ptr(), dst.nbytes());
    return;
  }
  if (src.is_quantized()) return copy_into(dequantize_host(src), dst);
  if (src.is_scaled()) return copy_into(src.to(DType::F32), dst);
  if (on_host(src.device()) && on_host(dst.device())) return copy_into_host(src, dst);
  if (src.numel() == 0) return;
  if (on_host(dst.device())) return copy_into_host(src.to_host(), dst);
  DeviceMemory& mem = device_memory(dst.device());
  if (src.device() == dst.device() && src.dtype() == dst.dtype() && src.is_contiguous() && dst.is_contiguous())
    return mem.copy_on_device(*src.buffer(), src.byte_offset(), *dst.buffer(), dst.byte_offset(), dst.nbytes());
  // Convert on the host, then upload: straight into a contiguous destination, else
  // read-modify-write of the bytes the destination view spans.
  Tensor h = src.to_host();
  if (h.dtype() != dst.dtype()) {
    Tensor c = Tensor::empty(h.shape(), dst.dtype());
    copy_into_host(h, c);
    h = c;
  }
  if (dst.is_contiguous())
    return mem.copy_from_host(h.data_ptr(), *dst.buffer(), dst.byte_offset(), dst.nbytes());
  const size_t span = span_bytes(dst);
  std::shared_ptr<Buffer> staged = Buffer::allocate_host(span);
  mem.copy_to_host(*dst.buffer(), dst.byte_offset(), staged->data(), span);
  Tensor view = Tensor::from_buffer(staged, 0, dst.shape(), dst.dtype(), dst.strides());
  copy_into_host(h, view);
  mem.copy_from_host(staged->data(), *dst.buffer(), dst.byte_offset(), span);
}

namespace {

void copy_into_host(const Tensor& src, Tensor& dst) {
  const int64_t n = src.numel();
  if (n == 0) return;
  const size_t es = dtype_size(src.dtype()), ed = dtype_size(dst.dtype());
  const char* s = static_cast<const char*>(src.data_ptr());
  char* d = static_cast<char*>(dst.data_ptr());
  if (src.is_contiguous() && dst.is_contiguous()) {
    convert(s, src.dtype(), d, dst.dtype(), static_cast<size_t>(n));
    return;
  }
  // Walk the innermost dimension as a run; odometer over the rest.
  const int64_t nd = src.dim();
  if (nd == 0) { convert(s, src.dtype(), d, dst.dtype(), 1); return; }
  const Shape& sh = src.shape();
  const int64_t inner = sh[static_cast<size_t>(nd - 1)];
  const int64_t sis = src.strides()[static_cast<size_t>(nd - 1)], dis = dst.strides()[static_cast<size_t>(nd - 1)];
  std::vector<int64_t> idx(static_cast<size_t>(nd), 0);
  std::vector<char> tmp(static_cast<size_t>(inner) * 8);
  for (int64_t outer = 0; outer < n / inner; ++outer) {
    int64_t so = 0, doff = 0;
    for (int64_t k = 0; k < nd - 1; ++k) {
      so += idx[static_cast<size_t>(k)] * src.strides()[static_cast<size_t>(k)];
      doff += idx[static_cast<size_t>(k)] * dst.strides()[static_cast<size_t>(k)];
    }
    if (sis == 1 && dis == 1) {
      convert(s + so * static_cast<int64_t>(es), src.dtype(), d + doff * static_cast<int64_t>(ed), dst.dtype(),
              static_cast<size_t>(inner));
    } else {
      for (int64_t i = 0; i < inner; ++i)
        convert(s + (so + i * sis) * static_cast<int64_t>(es), src.dtype(),
                d + (doff + i * dis) * static_cast<int64_t>(ed), dst.dtype(), 1);
    }
    for (int64_t k = nd - 2; k >= 0; --k) {
      if (++idx[static_cast<size_t>(k)] < sh[static_cast<size_t>(k)]) break;
      idx[static_cast<size_t>(k)] = 0;
    }
  }
}

}  // namespace

}  // namespace vidax
