// Shared helpers of the CPU kernels: dtype-converting row loads/stores, the
// row iterator behind every strided/broadcast kernel, and contiguous f32/f64
// staging copies.
#pragma once
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "core/tensor.h"

namespace vidax::cpu {

// ---- element loads / stores ----------------------------------------------------

// dst[i] = (T) src[i * stride] for i < n; src in dtype dt (any float dtype; ints via convert()).
template <class T>
void load_row(const void* src, DType dt, int64_t stride, int64_t n, T* dst) {
  switch (dt) {
    case DType::F32: {
      const float* s = static_cast<const float*>(src);
      if (stride == 1) {
        if constexpr (std::is_same_v<T, float>) std::memcpy(dst, s, static_cast<size_t>(n) * 4);
        else for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(s[i]);
      } else if (stride == 0) {
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(s[0]);
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(s[i * stride]);
      }
      return;
    }
    case DType::BF16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(bf16_to_f32(s[i * stride]));
      return;
    }
    case DType::F16: {
      const uint16_t* s = static_cast<const uint16_t*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(f16_to_f32(s[i * stride]));
      return;
    }
    case DType::F64: {
      const double* s = static_cast<const double*>(src);
      for (int64_t i = 0; i < n; ++i) dst[i] = static_cast<T>(s[i * stride]);
      return;
    }
    default: {
      const size_t es = dtype_size(dt);
      const char* s = static_cast<const char*>(src);
      for (int64_t i = 0; i < n; ++i) {
        double v;
        convert(s + i * stride * static_cast<int64_t>(es), dt, &v, DType::F64, 1);
        dst[i] = static_cast<T>(v);
      }
    }
  }
}

// dst[i] = src[i] rounded to dt (RNE, as torch), dst contiguous.
template <class T>
void store_row(const T* src, int64_t n, void* dst, DType dt) {
  switch (dt) {
    case DType::F32: {
      float* d = static_cast<float*>(dst);
      if constexpr (std::is_same_v<T, float>) std::memcpy(d, src, static_cast<size_t>(n) * 4);
      else for (int64_t i = 0; i < n; ++i) d[i] = static_cast<float>(src[i]);
      return;
    }
    case DType::BF16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(static_cast<float>(src[i]));
      return;
    }
    case DType::F16: {
      uint16_t* d = static_cast<uint16_t*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = f32_to_f16(static_cast<float>(src[i]));
      return;
    }
    case DType::F64: {
      double* d = static_cast<double*>(dst);
      for (int64_t i = 0; i < n; ++i) d[i] = static_cast<double>(src[i]);
      return;
    }
    default: {
      const size_t es = dtype_size(dt);
      char* d = static_cast<char*>(dst);
      for (int64_t i = 0; i < n; ++i) {
        double v = static_cast<double>(src[i]);
        convert(&v, DType::F64, d + i * static_cast<int64_t>(es), dt, 1);
      }
    }
  }
}

// ---- row iteration over (broadcast) strided operands --------------------------------

// Strides of `t` viewed at `shape` (trailing-aligned; broadcast dims get stride 0).
Strides broadcast_strides(const Tensor& t, const Shape& shape);

// Walks `shape` row by row (a row = the last dim) for several operands with their
// own element strides. Adjacent dims that are contiguous for every operand are
// merged first (unless keep_last: the last dim is then never merged), so
// elementwise kernels get long rows.
class RowIter {
 public:
  RowIter(const Shape& shape, std::vector<Strides> strides, bool keep_last = false);
  int64_t rows() const { return rows_; }
  int64_t row_len() const { return len_; }
  int64_t inner_stride(size_t op) const { return inner_[op]; }
  // Element offset of row r for every operand.
  void offsets(int64_t r, int64_t* off) const;

 private:
  Shape shape_;                  // merged dims except the last
  std::vector<Strides> strides_;  // per operand, over shape_
  std::vector<int64_t> inner_;
  int64_t rows_ = 1, len_ = 1;
};

inline const char* byte_ptr(const Tensor& t) { return static_cast<const char*>(t.data_ptr()); }
inline char* byte_ptr_mut(const Tensor& t) { return static_cast<char*>(t.data_ptr()); }

// A contiguous copy of x in dtype T's float type (F32 or F64). Returns x's own
// memory (no copy) when it already is contiguous T.
template <class T>
struct Staged {
  std::vector<T> owned;
  const T* ptr = nullptr;
};
Staged<float> stage_f32(const Tensor& x);
Staged<double> stage_f64(const Tensor& x);

// Copies src (any strides, any dtype) into dst (any strides, same shape), rounding RNE.
void copy_strided(const Tensor& src, const Tensor& dst);

// Grain for OpenMP loops: at least one chunk per thread, rows coarse enough.
inline int num_threads() { return omp_get_max_threads(); }

}  // namespace vidax::cpu
