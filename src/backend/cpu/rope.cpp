// Rotary position embedding from cos/sin tables. F64 tables rotate in f64 (x is
// widened exactly), matching Wan's complex128 rope_apply; F32 tables in f32.
#include "backend/cpu/common.h"
#include "backend/cpu/kernels.h"

namespace vidax::cpu {

namespace {

template <class T>
void rope_impl(const Tensor& x, const T* cos, const T* sin, ops::RopeMode mode, Tensor& out) {
  const int64_t B = x.size(0), L = x.size(1), H = x.size(2), D = x.size(3), half = D / 2;
  const int64_t xes = static_cast<int64_t>(dtype_size(x.dtype())), oes = static_cast<int64_t>(dtype_size(out.dtype()));
  const Strides& st = x.strides();
#pragma omp parallel if (x.numel() > 16384)
  {
    std::vector<T> row(static_cast<size_t>(D)), o(static_cast<size_t>(D));
#pragma omp for schedule(static) collapse(3)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t l = 0; l < L; ++l)
        for (int64_t h = 0; h < H; ++h) {
          load_row(byte_ptr(x) + (b * st[0] + l * st[1] + h * st[2]) * xes, x.dtype(), st[3], D, row.data());
          const T* c = cos + l * half;
          const T* s = sin + l * half;
          if (mode == ops::RopeMode::InterleavedPairs) {
            for (int64_t i = 0; i < half; ++i) {
              const T a = row[2 * i], bb = row[2 * i + 1];
              o[2 * i] = a * c[i] - bb * s[i];
              o[2 * i + 1] = a * s[i] + bb * c[i];
            }
          } else {
            for (int64_t i = 0; i < half; ++i) {
              const T a = row[i], bb = row[i + half];
              o[i] = a * c[i] - bb * s[i];
              o[i + half] = bb * c[i] + a * s[i];
            }
          }
          store_row(o.data(), D, byte_ptr_mut(out) + (((b * L + l) * H + h) * D) * oes, out.dtype());
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
