// Rotary position embedding from cos/sin tables. F64 tables rotate in f64 (x is
// widened exactly), matching Wan's complex128 rope_apply; F32 tables in f32.
#include "backend/cpu/common.h"
#include "backend/cpu/kernels.h"

namespace vidax::cpu {

namespace {

// One row's rotation in T (the tables' precision); x and o hold D = 2 * half values of type V.
template <class T, class V>
void rotate(const V* x, const T* c, const T* s, int64_t half, ops::RopeMode mode, V* o) {
  if (mode == ops::RopeMode::InterleavedPairs) {
    for (int64_t i = 0; i < half; ++i) {
      const T a = static_cast<T>(x[2 * i]), b = static_cast<T>(x[2 * i + 1]);
      o[2 * i] = static_cast<V>(a * c[i] - b * s[i]);
      o[2 * i + 1] = static_cast<V>(a * s[i] + b * c[i]);
    }
  } else {
    for (int64_t i = 0; i < half; ++i) {
      const T a = static_cast<T>(x[i]), b = static_cast<T>(x[i + half]);
      o[i] = static_cast<V>(a * c[i] - b * s[i]);
      o[i + half] = static_cast<V>(b * c[i] + a * s[i]);
    }
  }
}

template <class T>
void rope_impl(const Tensor& x, const T* cos, const T* sin, ops::RopeMode mode, Tensor& out) {
  const int64_t B = x.size(0), L = x.size(1), H = x.size(2), D = x.size(3), half = D / 2;
  const int64_t xes = static_cast<int64_t>(dtype_size(x.dtype())), oes = static_cast<int64_t>(dtype_size(out.dtype()));
  const Strides& st = x.strides();
  // Fast path: unit-stride F32/BF16 rows are widened with the vector loads (exact) and the
  // result is rounded once to f32 and then to out's dtype, as store_row does.
  const bool fast = (x.dtype() == DType::F32 || x.dtype() == DType::BF16) &&
                    (out.dtype() == DType::F32 || out.dtype() == DType::BF16) && (st[3] == 1 || D == 1);
#pragma omp parallel if (x.numel() > 16384)
  {
    std::vector<T> row(static_cast<size_t>(D)), o(static_cast<size_t>(D));
    std::vector<float> xf(static_cast<size_t>(D)), of(static_cast<size_t>(D));
#pragma omp for schedule(static) collapse(3)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t l = 0; l < L; ++l)
        for (int64_t h = 0; h < H; ++h) {
          const char* xp = byte_ptr(x) + (b * st[0] + l * st[1] + h * st[2]) * xes;
          char* op = byte_ptr_mut(out) + (((b * L + l) * H + h) * D) * oes;
          if (fast) {
            widen_row_f32(xp, x.dtype(), D, xf.data());
            rotate(xf.data(), cos + l * half, sin + l * half, half, mode, of.data());
            narrow_row_f32(of.data(), D, op, out.dtype());
            continue;
          }
          load_row(xp, x.dtype(), st[3], D, row.data());
          rotate(row.data(), cos + l * half, sin + l * half, half, mode, o.data());
          store_row(o.data(), D, op, out.dtype());
        }
  }
}

}  // namespace

void rope(const Tensor& x, const Tensor& cos, const Tensor& sin, ops::RopeMode mode, Tensor& out) {
  if (out.numel() == 0) return;
  if (cos.dtype() == DType::F64) {
    Staged<double> c = stage_f64(cos), s = stage_f64(sin);
    rope_impl<double>(x, c.ptr, s.ptr, mode, out);
  } else {
    Staged<float> c = stage_f32(cos), s = stage_f32(sin);
    rope_impl<float>(x, c.ptr, s.ptr, mode, out);
  }
}

}  // namespace vidax::cpu
