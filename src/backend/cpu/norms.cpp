// Norms and reductions. Statistics accumulate in f64 (at least as accurate as
// the fp32 statistics the reference computes), each row by one thread in a
// fixed order, so results do not depend on the thread count.
//
// Two paths for the row norms (layer_norm, rms_norm, layer_norm_modulate,
// rms_norm_with_sum_sq):
// - fast: x's rows have unit stride, x and out are F32/BF16. A row is widened
//   to f32 once (exact for bf16), summed in 16 f64 lanes (AVX-512, or the same
//   lanes in scalar code), normalised in f64 and rounded once; the broadcast
//   operands (weight, bias, shift, 1 + scale) are converted once per call.
// - generic: any strides and dtypes, every operand staged per row in f64.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/common.h"
#include "backend/cpu/small_ops.h"
#include "backend/cpu/kernels.h"

namespace vidax::cpu::VIDAX_KERNEL_NS {  // one copy per tier: isa.h, kernel_tiers.h

namespace {

// Loads an optional [D] vector as double (empty = absent).
std::vector<double> load_vec(const std::optional<Tensor>& t) {
  if (!t) return {};
  return t->to_f64_vector();
}

// Runs f(x_row (double), extra rows..., out_row (double), D) for every row of
// x's last dim; extra operands broadcast to x's shape. Rows are parallel.
template <class F>
void for_each_row(const Tensor& x, const std::vector<const Tensor*>& extra, Tensor& out, F&& f) {
  if (x.numel() == 0) return;
  std::vector<Strides> strides{x.strides()};
  for (const Tensor* t : extra) strides.push_back(broadcast_strides(*t, x.shape()));
  RowIter it(x.shape(), strides, /*keep_last=*/true);
  const int64_t D = it.row_len();
  const size_t nops = strides.size();
  char* ob = byte_ptr_mut(out);
  const int64_t oes = static_cast<int64_t>(dtype_size(out.dtype()));
#pragma omp parallel if (x.numel() > 16384)
  {
    std::vector<std::vector<double>> rows(nops, std::vector<double>(static_cast<size_t>(D)));
    std::vector<double> orow(static_cast<size_t>(D));
    std::vector<int64_t> off(nops);
#pragma omp for schedule(static)
    for (int64_t r = 0; r < it.rows(); ++r) {
      it.offsets(r, off.data());
      load_row(byte_ptr(x) + off[0] * static_cast<int64_t>(dtype_size(x.dtype())), x.dtype(), it.inner_stride(0), D,
               rows[0].data());
      for (size_t i = 0; i < extra.size(); ++i)
        load_row(byte_ptr(*extra[i]) + off[i + 1] * static_cast<int64_t>(dtype_size(extra[i]->dtype())),
                 extra[i]->dtype(), it.inner_stride(i + 1), D, rows[i + 1].data());
      f(rows, orow.data(), D);
      store_row(orow.data(), D, ob + r * D * oes, out.dtype());  // out contiguous, rows in order
    }
  }
}

struct Moments { double mean, rstd; };
Moments moments(const double* x, int64_t n, double eps) {
  double s = 0;
  for (int64_t i = 0; i < n; ++i) s += x[i];
  const double mean = s / static_cast<double>(n);
  double v = 0;
  for (int64_t i = 0; i < n; ++i) v += (x[i] - mean) * (x[i] - mean);
  return {mean, 1.0 / std::sqrt(v / static_cast<double>(n) + eps)};
}

// ---- fast path ------------------------------------------------------------------

constexpr int kLanes = 16;  // f64 partial sums per row: lane j takes elements i with i % 16 == j

bool fast_dtype(DType t) { return t == DType::F32 || t == DType::BF16; }

// Combines the 16 lane sums in a fixed order: lane j + lane j+8, then those 8 in index order.
double combine_lanes(const double* acc) {
  double s = 0;
  for (int j = 0; j < kLanes / 2; ++j) s += acc[j] + acc[j + kLanes / 2];
  return s;
}

// sum_i (x[i] - c)^(p) in f64 lanes, p = 1 or 2 (c = 0, p = 2: the sum of squares).
template <int P>
double lane_sum(const float* x, int64_t n, double c) {
  alignas(64) double acc[kLanes] = {};
#if defined(VIDAX_CPU_AVX512)
  __m512d a0 = _mm512_setzero_pd(), a1 = _mm512_setzero_pd();
  const __m512d cv = _mm512_set1_pd(c);
  // Lanes outside the mask k (the row's tail) keep their sums unchanged.
  auto add = [&](__m512 v, __mmask16 k) {
    const __mmask8 klo = static_cast<__mmask8>(k), khi = static_cast<__mmask8>(k >> 8);
    const __m512d lo = _mm512_sub_pd(_mm512_cvtps_pd(_mm512_castps512_ps256(v)), cv);
    const __m512d hi = _mm512_sub_pd(_mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(v), 1))), cv);
    if constexpr (P == 1) {
      a0 = _mm512_mask_add_pd(a0, klo, a0, lo);
      a1 = _mm512_mask_add_pd(a1, khi, a1, hi);
    } else {
      a0 = _mm512_mask3_fmadd_pd(lo, lo, a0, klo);
      a1 = _mm512_mask3_fmadd_pd(hi, hi, a1, khi);
    }
  };
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) add(_mm512_loadu_ps(x + i), 0xffff);
  if (i < n) add(_mm512_maskz_loadu_ps(lanes16(n - i), x + i), lanes16(n - i));
  _mm512_store_pd(acc, a0);
  _mm512_store_pd(acc + 8, a1);
#else
  for (int64_t i = 0; i < n; ++i) {
    const double d = static_cast<double>(x[i]) - c;
    double& a = acc[i % kLanes];
    a = P == 1 ? a + d : std::fma(d, d, a);
  }
#endif
  return combine_lanes(acc);
}

// Rows of x in parallel: f(off, x row as f32, out row as f32, D); the out row is then rounded
// into out (contiguous). off[0] is the row's element offset in x, off[1...] those of the extra
// operands (`extra`: their strides over x's shape).
template <class F>
void for_each_fast_row(const Tensor& x, const std::vector<Strides>& extra, Tensor& out, F&& f) {
  RowIter it(x.shape(), with_strides_of(x, extra), /*keep_last=*/true);
  const int64_t D = it.row_len();
  const DType xdt = x.dtype(), odt = out.dtype();
  const int64_t xes = static_cast<int64_t>(dtype_size(xdt)), oes = static_cast<int64_t>(dtype_size(odt));
  const char* xb = byte_ptr(x);
  char* ob = byte_ptr_mut(out);
#pragma omp parallel if (x.numel() > 16384)
  {
    std::vector<float> xbuf(xdt == DType::F32 ? 0 : static_cast<size_t>(D));
    std::vector<float> obuf(odt == DType::F32 ? 0 : static_cast<size_t>(D));
    std::vector<int64_t> off(1 + extra.size());
#pragma omp for schedule(static)
    for (int64_t r = 0; r < it.rows(); ++r) {
      it.offsets(r, off.data());
      const char* xp = xb + off[0] * xes;
      const float* xr = reinterpret_cast<const float*>(xp);
      if (xdt != DType::F32) {
        widen_row_f32(xp, xdt, D, xbuf.data());
        xr = xbuf.data();
      }
      char* op = ob + r * D * oes;  // out contiguous, rows in order
      float* o = odt == DType::F32 ? reinterpret_cast<float*>(op) : obuf.data();
      f(off.data(), xr, o, D);
      if (odt != DType::F32) narrow_row_f32(o, D, op, odt);
    }
  }
}

// The fast path applies: unit-stride rows, F32/BF16 in and out.
bool fast_rows(const Tensor& x, const Tensor& out) {
  if (x.numel() == 0 || !fast_dtype(x.dtype()) || !fast_dtype(out.dtype())) return false;
  return x.size(-1) == 1 || x.strides().back() == 1;
}

// A broadcast operand converted once per call: contiguous f32 values and their strides over x's shape.
struct BroadcastRows {
  Tensor values;  // contiguous F32 (t itself when it already is)
  Strides strides;
};
BroadcastRows broadcast_rows_f32(const Tensor& t, const Shape& shape) {
  BroadcastRows b;
  if (t.dtype() == DType::F32 && t.is_contiguous()) {
    b.values = t;
  } else {
    b.values = Tensor::empty(t.shape(), DType::F32);
    copy_strided(t, b.values);
  }
  b.strides = broadcast_strides(b.values, shape);
  return b;
}

// o[i] = round_f32((x[i] - mean) * rstd [* w[i]] [+ b[i]]) in f64 (w, b null = absent).
void normalize_row(const float* x, int64_t D, double mean, double rstd, const double* w, const double* b, float* o) {
  if (!w && !b) {
    for (int64_t i = 0; i < D; ++i) o[i] = static_cast<float>((static_cast<double>(x[i]) - mean) * rstd);
  } else if (w && b) {
    for (int64_t i = 0; i < D; ++i) o[i] = static_cast<float>((static_cast<double>(x[i]) - mean) * rstd * w[i] + b[i]);
  } else if (w) {
    for (int64_t i = 0; i < D; ++i) o[i] = static_cast<float>((static_cast<double>(x[i]) - mean) * rstd * w[i]);
  } else {
    for (int64_t i = 0; i < D; ++i) o[i] = static_cast<float>((static_cast<double>(x[i]) - mean) * rstd + b[i]);
  }
}

// o = n * onep + shift in f32 with two roundings, as the reference's separate mul and add
// (no FMA contraction: the AVX-512 path uses explicitly rounded intrinsics).
void modulate_row(float* n, const float* onep, const float* shift, int64_t D) {
#if defined(VIDAX_CPU_AVX512)
  constexpr int rn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  int64_t i = 0;
  for (; i + 16 <= D; i += 16) {
    const __m512 p = _mm512_mul_round_ps(_mm512_loadu_ps(n + i), _mm512_loadu_ps(onep + i), rn);
    _mm512_storeu_ps(n + i, _mm512_add_round_ps(p, _mm512_loadu_ps(shift + i), rn));
  }
  if (i < D) {
    const __mmask16 k = lanes16(D - i);
    const __m512 p = _mm512_mul_round_ps(_mm512_maskz_loadu_ps(k, n + i), _mm512_maskz_loadu_ps(k, onep + i), rn);
    _mm512_mask_storeu_ps(n + i, k, _mm512_add_round_ps(p, _mm512_maskz_loadu_ps(k, shift + i), rn));
  }
#else
  for (int64_t i = 0; i < D; ++i) {
    volatile float p = n[i] * onep[i];
    n[i] = p + shift[i];
  }
#endif
}

const double* opt_data(const std::vector<double>& v) { return v.empty() ? nullptr : v.data(); }

}  // namespace

void layer_norm(const Tensor& x, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, double eps,
                Tensor& out) {
  const std::vector<double> w = load_vec(weight), b = load_vec(bias);
  if (fast_rows(x, out)) {
    for_each_fast_row(x, {}, out, [&](const int64_t*, const float* xr, float* o, int64_t D) {
      const double mean = lane_sum<1>(xr, D, 0.0) / static_cast<double>(D);
      const double rstd = 1.0 / std::sqrt(lane_sum<2>(xr, D, mean) / static_cast<double>(D) + eps);
      normalize_row(xr, D, mean, rstd, opt_data(w), opt_data(b), o);
    });
    return;
  }
  for_each_row(x, {}, out, [&](const auto& rows, double* o, int64_t D) {
    const double* xr = rows[0].data();
    const Moments m = moments(xr, D, eps);
    for (int64_t i = 0; i < D; ++i) {
      double y = (xr[i] - m.mean) * m.rstd;
      if (!w.empty()) y *= w[static_cast<size_t>(i)];
      if (!b.empty()) y += b[static_cast<size_t>(i)];
      o[i] = y;
    }
  });
}

void rms_norm(const Tensor& x, const std::optional<Tensor>& weight, double eps, Tensor& out) {
  const std::vector<double> w = load_vec(weight);
  if (fast_rows(x, out)) {
    for_each_fast_row(x, {}, out, [&](const int64_t*, const float* xr, float* o, int64_t D) {
      const double r = 1.0 / std::sqrt(lane_sum<2>(xr, D, 0.0) / static_cast<double>(D) + eps);
      normalize_row(xr, D, 0.0, r, opt_data(w), nullptr, o);
    });
    return;
  }
  for_each_row(x, {}, out, [&](const auto& rows, double* o, int64_t D) {
    const double* xr = rows[0].data();
    double ss = 0;
    for (int64_t i = 0; i < D; ++i) ss += xr[i] * xr[i];
    const double r = 1.0 / std::sqrt(ss / static_cast<double>(D) + eps);
    for (int64_t i = 0; i < D; ++i) o[i] = xr[i] * r * (w.empty() ? 1.0 : w[static_cast<size_t>(i)]);
  });
}

// The same arithmetic as rms_norm, with the row's sum of squares from outside (broadcast over the row).
void rms_norm_with_sum_sq(const Tensor& x, const Tensor& sum_sq, int64_t count, const std::optional<Tensor>& weight,
                          double eps, Tensor& out) {
  const std::vector<double> w = load_vec(weight);
  if (fast_rows(x, out)) {
    Tensor ss = Tensor::empty(sum_sq.shape(), DType::F64);  // one f64 per row, converted once
    copy_strided(sum_sq, ss);
    const double* ssp = ss.data<double>();
    for_each_fast_row(x, {broadcast_strides(ss, x.shape())}, out,
                      [&](const int64_t* off, const float* xr, float* o, int64_t D) {
                        const double r = 1.0 / std::sqrt(ssp[off[1]] / static_cast<double>(count) + eps);
                        normalize_row(xr, D, 0.0, r, opt_data(w), nullptr, o);
                      });
    return;
  }
  for_each_row(x, {&sum_sq}, out, [&](const auto& rows, double* o, int64_t D) {
    const double* xr = rows[0].data();
    const double r = 1.0 / std::sqrt(rows[1][0] / static_cast<double>(count) + eps);
    for (int64_t i = 0; i < D; ++i) o[i] = xr[i] * r * (w.empty() ? 1.0 : w[static_cast<size_t>(i)]);
  });
}

void layer_norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps, Tensor& out) {
  if (fast_rows(x, out)) {
    const BroadcastRows sh = broadcast_rows_f32(shift, x.shape()), sc = broadcast_rows_f32(scale, x.shape());
    // 1 + scale once per call (the reference's (1 + e[1]) in f32), same layout as sc.
    Tensor onep = Tensor::empty(sc.values.shape(), DType::F32);
    const float* scp = sc.values.data<float>();
    float* opp = onep.data<float>();
    for (int64_t i = 0; i < onep.numel(); ++i) opp[i] = 1.0f + scp[i];
    const float* shp = sh.values.data<float>();
    for_each_fast_row(x, {sh.strides, sc.strides}, out, [&](const int64_t* off, const float* xr, float* o, int64_t D) {
      const double mean = lane_sum<1>(xr, D, 0.0) / static_cast<double>(D);
      const double rstd = 1.0 / std::sqrt(lane_sum<2>(xr, D, mean) / static_cast<double>(D) + eps);
      // The reference rounds LN(x) to f32 before modulating in f32.
      normalize_row(xr, D, mean, rstd, nullptr, nullptr, o);
      modulate_row(o, opp + off[2], shp + off[1], D);
    });
    return;
  }
  for_each_row(x, {&shift, &scale}, out, [&](const auto& rows, double* o, int64_t D) {
    const double* xr = rows[0].data();
    const double* sh = rows[1].data();
    const double* sc = rows[2].data();
    const Moments m = moments(xr, D, eps);
    // The reference rounds LN(x) to f32 before modulating in f32.
    for (int64_t i = 0; i < D; ++i) {
      const float n = static_cast<float>((xr[i] - m.mean) * m.rstd);
      o[i] = n * (1.0f + static_cast<float>(sc[i])) + static_cast<float>(sh[i]);
    }
  });
}

void group_norm(const Tensor& x, int64_t groups, const std::optional<Tensor>& weight,
                const std::optional<Tensor>& bias, double eps, Tensor& out) {
  const int64_t N = x.size(0), C = x.size(1), S = x.numel() / std::max<int64_t>(N * C, 1);
  const int64_t Cg = C / groups, G = groups;
  if (x.numel() == 0) return;
  Staged<double> xs = stage_f64(x);
  const std::vector<double> w = load_vec(weight), b = load_vec(bias);
  std::vector<Moments> stats(static_cast<size_t>(N * G));
#pragma omp parallel for schedule(static) if (x.numel() > kMinParallelElements)
  for (int64_t ng = 0; ng < N * G; ++ng) stats[static_cast<size_t>(ng)] = moments(xs.ptr + ng * Cg * S, Cg * S, eps);
  char* ob = byte_ptr_mut(out);
  const int64_t oes = static_cast<int64_t>(dtype_size(out.dtype()));
#pragma omp parallel if (x.numel() > kMinParallelElements)
  {
    std::vector<double> row(static_cast<size_t>(S));
#pragma omp for schedule(static)
    for (int64_t nc = 0; nc < N * C; ++nc) {
      const int64_t n = nc / C, c = nc % C;
      const Moments m = stats[static_cast<size_t>(n * G + c / Cg)];
      const double wc = w.empty() ? 1.0 : w[static_cast<size_t>(c)], bc = b.empty() ? 0.0 : b[static_cast<size_t>(c)];
      const double* xr = xs.ptr + nc * S;
      for (int64_t i = 0; i < S; ++i) row[static_cast<size_t>(i)] = (xr[i] - m.mean) * m.rstd * wc + bc;
      store_row(row.data(), S, ob + nc * S * oes, out.dtype());
    }
  }
}

void reduce_dim(DimReduce op, const Tensor& x, int64_t dim, double eps, Tensor& out) {
  if (x.numel() == 0 && op != DimReduce::Sum && op != DimReduce::Mean) return;
  const Shape& sh = x.shape();
  int64_t outer = 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= sh[static_cast<size_t>(d)];
  for (int64_t d = dim + 1; d < x.dim(); ++d) inner *= sh[static_cast<size_t>(d)];
  const int64_t D = sh[static_cast<size_t>(dim)];
  if (outer * inner == 0) return;
  // A contiguous x is widened block by block into a per-thread buffer; only a strided x is
  // staged whole (as f64: twice an f32 input's size).
  const bool direct = x.is_contiguous();
  Staged<double> xs;
  if (!direct) xs = stage_f64(x);
  const char* xb = byte_ptr(x);
  const int64_t xes = static_cast<int64_t>(dtype_size(x.dtype()));
  const bool keeps_shape = op == DimReduce::Softmax || op == DimReduce::L2Normalize;
  char* ob = byte_ptr_mut(out);
  const int64_t oes = static_cast<int64_t>(dtype_size(out.dtype()));
  constexpr int64_t kBlock = 256;  // inner positions handled together (vector-friendly, dim order fixed)
  const int64_t iblocks = (inner + kBlock - 1) / kBlock;
#pragma omp parallel if (x.numel() > 16384)
  {
    std::vector<double> acc(kBlock), mx(kBlock), col(static_cast<size_t>(D) * kBlock);
    std::vector<double> in(direct ? static_cast<size_t>(D) * kBlock : 0);
#pragma omp for schedule(static)
    for (int64_t item = 0; item < outer * iblocks; ++item) {
      const int64_t o = item / iblocks, i0 = (item % iblocks) * kBlock, ni = std::min(kBlock, inner - i0);
      // base[d * ld + i]: element (o, d, i0 + i) as f64.
      const double* base = xs.ptr + o * D * inner + i0;
      int64_t ld = inner;
      if (direct) {
        for (int64_t d = 0; d < D; ++d)
          load_row(xb + ((o * D + d) * inner + i0) * xes, x.dtype(), 1, ni, in.data() + d * kBlock);
        base = in.data();
        ld = kBlock;
      }
      std::fill(acc.begin(), acc.end(), 0.0);
      if (op == DimReduce::Softmax) {
        std::fill(mx.begin(), mx.end(), -std::numeric_limits<double>::infinity());
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < ni; ++i) mx[i] = std::max(mx[i], base[d * ld + i]);
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < ni; ++i) {
            // A row of -inf gives NaN, as torch.softmax does.
            const double e = std::exp(base[d * ld + i] - mx[i]);
            col[d * kBlock + i] = e;
            acc[i] += e;
          }
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < ni; ++i) col[d * kBlock + i] /= acc[i];
      } else if (op == DimReduce::L2Normalize) {
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < ni; ++i) acc[i] += base[d * ld + i] * base[d * ld + i];
        for (int64_t i = 0; i < ni; ++i) acc[i] = std::max(std::sqrt(acc[i]), eps);
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < ni; ++i) col[d * kBlock + i] = base[d * ld + i] / acc[i];
      } else {
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < ni; ++i) acc[i] += base[d * ld + i];
        if (op == DimReduce::Mean)
          for (int64_t i = 0; i < ni; ++i) acc[i] /= static_cast<double>(D);
      }
      if (keeps_shape) {
        for (int64_t d = 0; d < D; ++d)
          store_row(col.data() + d * kBlock, ni, ob + (o * D * inner + d * inner + i0) * oes, out.dtype());
      } else {
        store_row(acc.data(), ni, ob + (o * inner + i0) * oes, out.dtype());
      }
    }
  }
}

}  // namespace vidax::cpu::VIDAX_KERNEL_NS
