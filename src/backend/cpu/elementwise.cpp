// Elementwise ops over broadcast, strided operands. Values are widened to f32
// (f64 when any operand is F64), computed, and rounded once into the output
// dtype, as PyTorch's CPU kernels do for bf16/f16.
#include <algorithm>
#include <cmath>

#include "backend/cpu/common.h"
#include "backend/cpu/kernels.h"
#include "backend/cpu/vmath.h"

namespace vidax::cpu::VIDAX_KERNEL_NS {  // one copy per tier: isa.h, kernel_tiers.h

namespace {

constexpr int64_t kChunk = 4096;  // elements per work item (keeps row buffers in L1/L2)

bool any_f64(const std::vector<const Tensor*>& ins, const Tensor& out) {
  if (out.dtype() == DType::F64) return true;
  for (const Tensor* t : ins)
    if (t->dtype() == DType::F64) return true;
  return false;
}

// Calls f(in_rows, out_row, n) over chunks of out, with every input broadcast to
// out's shape and converted to T. Inputs already in T with unit stride are
// passed in place; others go through per-thread buffers.
template <class T, class F>
void map_rows(const std::vector<const Tensor*>& ins, const Tensor& out, F&& f) {
  const size_t nin = ins.size();
  if (out.numel() == 0) return;
  std::vector<Strides> strides;
  for (const Tensor* t : ins) strides.push_back(broadcast_strides(*t, out.shape()));
  strides.push_back(out.strides());
  RowIter it(out.shape(), strides);
  const int64_t len = it.row_len();
  const int64_t chunks = (len + kChunk - 1) / kChunk;
  const int64_t items = it.rows() * chunks;
  const DType self = std::is_same_v<T, float> ? DType::F32 : DType::F64;
  const DType odt = out.dtype();
  const int64_t oes = static_cast<int64_t>(dtype_size(odt));
#pragma omp parallel if (out.numel() > 16384)
  {
    std::vector<std::vector<T>> bufs(nin, std::vector<T>(static_cast<size_t>(std::min(len, kChunk))));
    std::vector<T> obuf(static_cast<size_t>(std::min(len, kChunk)));
    std::vector<const T*> rows(nin);
    std::vector<int64_t> off(nin + 1);
#pragma omp for schedule(static)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t r = item / chunks, c0 = (item % chunks) * kChunk, n = std::min(kChunk, len - c0);
      it.offsets(r, off.data());
      for (size_t i = 0; i < nin; ++i) {
        const Tensor& t = *ins[i];
        const int64_t is = it.inner_stride(i);
        const char* p = byte_ptr(t) + (off[i] + c0 * is) * static_cast<int64_t>(dtype_size(t.dtype()));
        if (t.dtype() == self && is == 1) {
          rows[i] = reinterpret_cast<const T*>(p);
        } else {
          load_row(p, t.dtype(), is, n, bufs[i].data());
          rows[i] = bufs[i].data();
        }
      }
      char* op = byte_ptr_mut(out) + (off[nin] + c0) * oes;  // out is contiguous: inner stride 1
      if (odt == self) {
        f(rows.data(), reinterpret_cast<T*>(op), n);
      } else {
        f(rows.data(), obuf.data(), n);
        store_row(obuf.data(), n, op, odt);
      }
    }
  }
}

template <class F32Fn, class F64Fn>
void dispatch(const std::vector<const Tensor*>& ins, const Tensor& out, F32Fn&& f32, F64Fn&& f64) {
  if (any_f64(ins, out)) map_rows<double>(ins, out, f64);
  else map_rows<float>(ins, out, f32);
}

template <class T>
void binary_rows(Binary op, const T* const* in, T* o, int64_t n) {
  const T* a = in[0];
  const T* b = in[1];
  switch (op) {
    case Binary::Add: for (int64_t i = 0; i < n; ++i) o[i] = a[i] + b[i]; break;
    case Binary::Sub: for (int64_t i = 0; i < n; ++i) o[i] = a[i] - b[i]; break;
    case Binary::Mul: for (int64_t i = 0; i < n; ++i) o[i] = a[i] * b[i]; break;
    case Binary::Div: for (int64_t i = 0; i < n; ++i) o[i] = a[i] / b[i]; break;
  }
}

template <class T>
void unary_rows(Unary op, T p0, T p1, const T* x, T* o, int64_t n) {
  switch (op) {
    case Unary::Scale: for (int64_t i = 0; i < n; ++i) o[i] = p0 * x[i]; break;
    case Unary::AddScalar: for (int64_t i = 0; i < n; ++i) o[i] = x[i] + p0; break;
    case Unary::Clamp:
      // NaN stays NaN (torch.clamp propagates it).
      for (int64_t i = 0; i < n; ++i) o[i] = std::isnan(x[i]) ? x[i] : std::min(std::max(x[i], p0), p1);
      break;
    case Unary::GeluErf: {
      const T r2 = static_cast<T>(M_SQRT1_2);
      for (int64_t i = 0; i < n; ++i) o[i] = T(0.5) * x[i] * (T(1) + std::erf(x[i] * r2));
      break;
    }
    case Unary::GeluTanh: {
      // torch: 0.5 * x * (1 + tanh(sqrt(2/pi) * (x + 0.044715 x^3)))
      const T beta = static_cast<T>(M_SQRT2 * M_2_SQRTPI * 0.5), kappa = T(0.044715);
      for (int64_t i = 0; i < n; ++i) {
        const T v = x[i], cube = v * v * v;
        o[i] = v / (T(1) + std::exp(T(-2) * (beta * (v + kappa * cube))));  // = 0.5 v (1 + tanh(...))
      }
      break;
    }
    case Unary::Silu: for (int64_t i = 0; i < n; ++i) o[i] = x[i] / (T(1) + std::exp(-x[i])); break;
    case Unary::Sigmoid: for (int64_t i = 0; i < n; ++i) o[i] = T(1) / (T(1) + std::exp(-x[i])); break;
    case Unary::Tanh: for (int64_t i = 0; i < n; ++i) o[i] = std::tanh(x[i]); break;
    case Unary::Sin: for (int64_t i = 0; i < n; ++i) o[i] = std::sin(x[i]); break;
    case Unary::Exp: for (int64_t i = 0; i < n; ++i) o[i] = std::exp(x[i]); break;
    case Unary::Sqrt: for (int64_t i = 0; i < n; ++i) o[i] = std::sqrt(x[i]); break;
    case Unary::Log: for (int64_t i = 0; i < n; ++i) o[i] = std::log(x[i]); break;
    case Unary::Relu:
      for (int64_t i = 0; i < n; ++i) o[i] = std::isnan(x[i]) ? x[i] : (x[i] > T(0) ? x[i] : T(0));
      break;
  }
}

#if defined(VIDAX_CPU_AVX512)
// f32 mul/add rounded once each: the explicit rounding form keeps the compiler from
// contracting a*b + c into an FMA (the reference rounds the product).
constexpr int kRn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
inline __m512 mul_rn(__m512 a, __m512 b) { return _mm512_mul_round_ps(a, b, kRn); }
inline __m512 add_rn(__m512 a, __m512 b) { return _mm512_add_round_ps(a, b, kRn); }

// o[i..i+16) = f(i, mask) over n elements, the tail under a mask.
template <class F>
void map16(int64_t n, float* o, F&& f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) _mm512_storeu_ps(o + i, f(i, static_cast<__mmask16>(0xffff)));
  if (i < n) _mm512_mask_storeu_ps(o + i, lanes16(n - i), f(i, lanes16(n - i)));
}
#endif

#if defined(VIDAX_CPU_AVX512)
// Vector paths of the transcendental float ops (torch's CPU kernels are vectorized
// too; these follow the same formulas and operation order).
// Calls run(f) with the op's 16-lane function f(__m512) -> __m512; false when the op has none.
template <class Run>
bool with_vector_op(Unary op, Run&& run) {
  using namespace vmath;
  const __m512 one = _mm512_set1_ps(1.0f);
  switch (op) {
    case Unary::GeluTanh:
      run([](__m512 v) { return gelu_tanh_ps(v); });
      return true;
    case Unary::GeluErf:
      run([](__m512 v) { return gelu_erf_ps(v); });
      return true;
    case Unary::Silu:
      run([&](__m512 v) { return _mm512_div_ps(v, _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), v)))); });
      return true;
    case Unary::Sigmoid:
      run([&](__m512 v) { return _mm512_div_ps(one, _mm512_add_ps(one, exp512(_mm512_sub_ps(_mm512_setzero_ps(), v)))); });
      return true;
    case Unary::Tanh:
      run([&](__m512 v) { return tanh512(v); });
      return true;
    default:
      return false;
  }
}

bool unary_rows_avx512(Unary op, const float* x, float* o, int64_t n) {
  return with_vector_op(op, [&](auto f) {
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) _mm512_storeu_ps(o + i, f(_mm512_loadu_ps(x + i)));
    if (i < n) _mm512_mask_storeu_ps(o + i, lanes16(n - i), f(_mm512_maskz_loadu_ps(lanes16(n - i), x + i)));
  });
}

// Contiguous F32/BF16 x into F32/BF16 out: the vector op loads and stores the tensors' own
// dtypes directly (no staging buffers). Elements are independent: any thread count, same bits.
bool unary_contiguous_avx512(Unary op, const Tensor& x, Tensor& out) {
  const auto fast = [](DType t) { return t == DType::F32 || t == DType::BF16; };
  if (!x.is_contiguous() || !fast(x.dtype()) || !fast(out.dtype())) return false;
  const int64_t n = x.numel();
  const DType xd = x.dtype(), od = out.dtype();
  const int64_t xes = static_cast<int64_t>(dtype_size(xd)), oes = static_cast<int64_t>(dtype_size(od));
  const char* xb = byte_ptr(x);
  char* ob = byte_ptr_mut(out);
  const int64_t items = (n + kChunk - 1) / kChunk;
  return with_vector_op(op, [&](auto f) {
#pragma omp parallel for schedule(static) if (n > 16384)
    for (int64_t item = 0; item < items; ++item) {
      const int64_t end = std::min(n, (item + 1) * kChunk);
      int64_t i = item * kChunk;
      for (; i + 16 <= end; i += 16) store16_f32(ob + i * oes, od, f(load16_f32(xb + i * xes, xd)));
      if (i < end) store16_f32(ob + i * oes, od, f(load16_f32(xb + i * xes, xd, end - i)), end - i);
    }
  });
}
#endif

}  // namespace

void binary(Binary op, const Tensor& a, const Tensor& b, Tensor& out) {
  dispatch({&a, &b}, out, [op](const float* const* in, float* o, int64_t n) { binary_rows(op, in, o, n); },
           [op](const double* const* in, double* o, int64_t n) { binary_rows(op, in, o, n); });
}

void unary(Unary op, const Tensor& x, double p0, double p1, Tensor& out) {
  if (out.numel() == 0) return;
#if defined(VIDAX_CPU_AVX512)
  if (unary_contiguous_avx512(op, x, out)) return;
#endif
  // Scalars enter the f32 path as f32, as torch wraps a Python scalar for a float tensor.
  dispatch({&x}, out,
           [=](const float* const* in, float* o, int64_t n) {
#if defined(VIDAX_CPU_AVX512)
             if (unary_rows_avx512(op, in[0], o, n)) return;
#endif
             unary_rows<float>(op, static_cast<float>(p0), static_cast<float>(p1), in[0], o, n);
           },
           [=](const double* const* in, double* o, int64_t n) { unary_rows<double>(op, p0, p1, in[0], o, n); });
}

void axpby(double a, const Tensor& x, double b, const Tensor& y, Tensor& out) {
  dispatch({&x, &y}, out,
           [=](const float* const* in, float* o, int64_t n) {
             const float fa = static_cast<float>(a), fb = static_cast<float>(b);
             for (int64_t i = 0; i < n; ++i) o[i] = fa * in[0][i] + fb * in[1][i];
           },
           [=](const double* const* in, double* o, int64_t n) {
             for (int64_t i = 0; i < n; ++i) o[i] = a * in[0][i] + b * in[1][i];
           });
}

void modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, Tensor& out) {
  auto f = [](const auto* const* in, auto* o, int64_t n) {
    using T = std::remove_pointer_t<decltype(o)>;
    for (int64_t i = 0; i < n; ++i) o[i] = in[0][i] * (T(1) + in[2][i]) + in[1][i];
  };
  dispatch({&x, &shift, &scale}, out,
           [&](const float* const* in, float* o, int64_t n) {
#if defined(VIDAX_CPU_AVX512)
             // x * (1 + scale) + shift with three f32 roundings, as the reference's separate ops.
             map16(n, o, [&](int64_t i, __mmask16 k) {
               const __m512 onep = add_rn(_mm512_set1_ps(1.0f), _mm512_maskz_loadu_ps(k, in[2] + i));
               return add_rn(mul_rn(_mm512_maskz_loadu_ps(k, in[0] + i), onep), _mm512_maskz_loadu_ps(k, in[1] + i));
             });
#else
             for (int64_t i = 0; i < n; ++i) {
               volatile float p = in[0][i] * (1.0f + in[2][i]);  // volatile: no FMA contraction
               o[i] = p + in[1][i];
             }
#endif
           },
           [&](const double* const* in, double* o, int64_t n) { f(in, o, n); });
}

void gated_residual(const Tensor& x, const Tensor& gate, const Tensor& y, Tensor& out) {
  auto f = [](const auto* const* in, auto* o, int64_t n) {
    for (int64_t i = 0; i < n; ++i) o[i] = in[0][i] + in[1][i] * in[2][i];
  };
  dispatch({&x, &gate, &y}, out,
           [&](const float* const* in, float* o, int64_t n) {
#if defined(VIDAX_CPU_AVX512)
             // x + gate * y with two f32 roundings (the reference's mul, then add; no FMA).
             map16(n, o, [&](int64_t i, __mmask16 k) {
               return add_rn(_mm512_maskz_loadu_ps(k, in[0] + i),
                             mul_rn(_mm512_maskz_loadu_ps(k, in[1] + i), _mm512_maskz_loadu_ps(k, in[2] + i)));
             });
#else
             for (int64_t i = 0; i < n; ++i) {
               volatile float p = in[1][i] * in[2][i];  // volatile: no FMA contraction
               o[i] = in[0][i] + p;
             }
#endif
           },
           [&](const double* const* in, double* o, int64_t n) { f(in, o, n); });
}

bool all_finite(const Tensor& x) {
  if (x.numel() == 0) return true;
  RowIter it(x.shape(), {x.strides()});
  const int64_t len = it.row_len(), is = it.inner_stride(0);
  const int64_t es = static_cast<int64_t>(dtype_size(x.dtype()));
  bool ok = true;
#pragma omp parallel reduction(&& : ok) if (x.numel() > 65536)
  {
    std::vector<double> buf(static_cast<size_t>(std::min(len, kChunk)));
    const int64_t chunks = (len + kChunk - 1) / kChunk;
#pragma omp for schedule(static)
    for (int64_t item = 0; item < it.rows() * chunks; ++item) {
      const int64_t r = item / chunks, c0 = (item % chunks) * kChunk, n = std::min(kChunk, len - c0);
      int64_t off;
      it.offsets(r, &off);
      load_row(byte_ptr(x) + (off + c0 * is) * es, x.dtype(), is, n, buf.data());
      for (int64_t i = 0; i < n; ++i) ok = ok && std::isfinite(buf[static_cast<size_t>(i)]);
    }
  }
  return ok;
}

}  // namespace vidax::cpu::VIDAX_KERNEL_NS
