// Shared helpers of the CPU kernels: dtype-converting row loads/stores, the
// row iterator behind every strided/broadcast kernel, and contiguous f32/f64
// staging copies.
#pragma once
#include <omp.h>

#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "backend/cpu/isa.h"
#include "core/tensor.h"

#if defined(__AVX512F__) && defined(__AVX512BW__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 false positive in its AVX-512 headers
#include <immintrin.h>
#define VIDAX_CPU_AVX512 1
#endif

namespace vidax::cpu {

// The inline helpers below differ by the translation unit's instruction set (isa.h).
inline namespace VIDAX_ISA_NS {

// ---- element loads / stores ----------------------------------------------------

#if defined(VIDAX_CPU_AVX512)
// Mask of the first n (< 16) lanes.
inline __mmask16 lanes16(int64_t n) { return static_cast<__mmask16>((1u << n) - 1u); }
// 16 bf16 -> 16 f32 (exact: the bf16 bits are the f32's high half).
inline __m512 bf16x16_to_f32(__m256i h) { return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(h), 16)); }
// 16 f32 -> 16 bf16, RNE with every NaN -> 0xffff: the same bits as f32_to_bf16 (core/dtype.h).
// (VCVTNEPS2BF16 is not used: it flushes denormals, torch does not.)
inline __m256i f32x16_to_bf16(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_set1_epi32(0xffff));
  return _mm512_cvtepi32_epi16(r);
}
// Loads 16 (or the first n < 16, rest 0) contiguous F32/BF16 values as f32.
inline __m512 load16_f32(const void* p, DType dt) {
  if (dt == DType::F32) return _mm512_loadu_ps(p);
  return bf16x16_to_f32(_mm256_loadu_si256(static_cast<const __m256i*>(p)));
}
inline __m512 load16_f32(const void* p, DType dt, int64_t n) {
  const __mmask16 k = lanes16(n);
  if (dt == DType::F32) return _mm512_maskz_loadu_ps(k, p);
  return bf16x16_to_f32(_mm256_maskz_loadu_epi16(k, p));
}
// Stores 16 (or the first n < 16) f32 values into contiguous F32/BF16 memory.
inline void store16_f32(void* p, DType dt, __m512 v) {
  if (dt == DType::F32) _mm512_storeu_ps(p, v);
  else _mm256_storeu_si256(static_cast<__m256i*>(p), f32x16_to_bf16(v));
}
inline void store16_f32(void* p, DType dt, __m512 v, int64_t n) {
  const __mmask16 k = lanes16(n);
  if (dt == DType::F32) _mm512_mask_storeu_ps(p, k, v);
  else _mm256_mask_storeu_epi16(p, k, f32x16_to_bf16(v));
}
#endif

// dst[i] = (float) src[i], src contiguous F32 or BF16 (vector path).
inline void widen_row_f32(const void* src, DType dt, int64_t n, float* dst) {
#if defined(VIDAX_CPU_AVX512)
  const char* s = static_cast<const char*>(src);
  const int64_t es = dt == DType::F32 ? 4 : 2;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(dst + i, load16_f32(s + i * es, dt));
  if (i < n) _mm512_mask_storeu_ps(dst + i, lanes16(n - i), load16_f32(s + i * es, dt, n - i));
#else
  if (dt == DType::F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
  } else {
    const uint16_t* s = static_cast<const uint16_t*>(src);
    for (int64_t i = 0; i < n; ++i) dst[i] = bf16_to_f32(s[i]);
  }
#endif
}

// dst[i] = src[i] rounded to dt (F32 or BF16), dst contiguous (vector path).
inline void narrow_row_f32(const float* src, int64_t n, void* dst, DType dt) {
#if defined(VIDAX_CPU_AVX512)
  char* d = static_cast<char*>(dst);
  const int64_t es = dt == DType::F32 ? 4 : 2;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) store16_f32(d + i * es, dt, _mm512_loadu_ps(src + i));
  if (i < n) store16_f32(d + i * es, dt, _mm512_maskz_loadu_ps(lanes16(n - i), src + i), n - i);
#else
  if (dt == DType::F32) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 4);
  } else {
    uint16_t* d = static_cast<uint16_t*>(dst);
    for (int64_t i = 0; i < n; ++i) d[i] = f32_to_bf16(src[i]);
  }
#endif
}

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
      if constexpr (std::is_same_v<T, float>) {
        if (stride == 1) { widen_row_f32(src, dt, n, dst); return; }
      }
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
      if constexpr (std::is_same_v<T, float>) { narrow_row_f32(src, n, dst, dt); return; }
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

}  // inline namespace VIDAX_ISA_NS

// ---- row iteration over (broadcast) strided operands --------------------------------

// {x's strides, extra...}. Out of line (common.cpp, baseline flags): built inline in a kernel
// compiled per tier, the vector's insert was an AVX-512 template instance the linker could
// hand to baseline code (scripts/check_isa.sh).
std::vector<Strides> with_strides_of(const Tensor& x, const std::vector<Strides>& extra);

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
