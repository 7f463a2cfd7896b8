// GEMM: linear (y = x W^T + b) and batched matmul, fp32 accumulation.
#include <cblas.h>

#include <algorithm>

#include "backend/cpu/common.h"
#include "backend/cpu/kernels.h"

namespace vidax::cpu {

namespace {

// A row-major f32 matrix view: either the tensor's own memory or a staged copy.
struct F32Matrix {
  std::vector<float> owned;
  const float* ptr = nullptr;
  int64_t ld = 0;
};

// Views a 2-D tensor as f32 with unit column stride, copying only when needed.
F32Matrix as_f32_matrix(const Tensor& t) {
  F32Matrix m;
  const bool one_row = t.size(0) == 1;
  if (t.dtype() == DType::F32 && (t.strides()[1] == 1 || t.size(1) == 1) &&
      (one_row || t.strides()[0] >= t.size(1))) {
    m.ptr = t.data<float>();
    m.ld = one_row ? std::max<int64_t>(t.size(1), 1) : std::max<int64_t>(t.strides()[0], 1);
    return m;
  }
  Staged<float> s = stage_f32(t);
  m.owned = std::move(s.owned);
  m.ptr = m.owned.empty() ? s.ptr : m.owned.data();
  m.ld = std::max<int64_t>(t.size(1), 1);
  return m;
}

// Strides of t's batch dims (all but the last two) broadcast to `batch` (0 = repeated).
Strides batch_strides(const Tensor& t, const Shape& batch) {
  const size_t nb = static_cast<size_t>(t.dim() - 2), off = batch.size() - nb;
  Strides s(batch.size(), 0);
  for (size_t i = 0; i < nb; ++i) s[off + i] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  return s;
}

}  // namespace

void linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, Tensor& out) {
  const int64_t K = w.size(1), N = w.size(0), M = K == 0 && N == 0 ? 0 : x.numel() / std::max<int64_t>(K, 1);
  if (out.numel() == 0) return;
  Staged<float> xs = stage_f32(x);
  F32Matrix wm = as_f32_matrix(w);
  const bool direct = out.dtype() == DType::F32;
  std::vector<float> ybuf;
  float* y = direct ? out.data<float>() : (ybuf.resize(static_cast<size_t>(M * N)), ybuf.data());
  if (K == 0) {
    std::fill(y, y + M * N, 0.0f);
  } else {
    cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasTrans, static_cast<blasint>(M), static_cast<blasint>(N),
                static_cast<blasint>(K), 1.0f, xs.ptr, static_cast<blasint>(K), wm.ptr, static_cast<blasint>(wm.ld),
                0.0f, y, static_cast<blasint>(N));
  }
  if (bias) {
    const std::vector<float> b = bias->to_f32_vector();
#pragma omp parallel for schedule(static) if (M * N > 16384)
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) y[m * N + n] += b[static_cast<size_t>(n)];
  }
  if (!direct) {
#pragma omp parallel for schedule(static) if (M * N > 16384)
    for (int64_t m = 0; m < M; ++m)
      store_row(y + m * N, N, byte_ptr_mut(out) + m * N * static_cast<int64_t>(dtype_size(out.dtype())), out.dtype());
  }
}

void matmul(const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t M = out.size(-2), N = out.size(-1), K = a.size(-1);
  if (out.numel() == 0) return;
  const Shape& os = out.shape();
  const Shape batch(os.begin(), os.end() - 2);
  const int64_t nb = shape_numel(batch);
  const Strides sa = batch_strides(a, batch), sb = batch_strides(b, batch);
  std::vector<float> ybuf(static_cast<size_t>(M * N));
  const int64_t oes = static_cast<int64_t>(dtype_size(out.dtype()));
  for (int64_t i = 0; i < nb; ++i) {
    int64_t oa = 0, ob = 0, rem = i;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      oa += idx * sa[d];
      ob += idx * sb[d];
    }
    // 2-D views of this batch entry.
    Tensor a2 = Tensor::from_buffer(a.buffer(), a.byte_offset() + static_cast<size_t>(oa) * dtype_size(a.dtype()),
                                    {M, K}, a.dtype(), {a.strides()[a.dim() - 2], a.strides()[a.dim() - 1]});
    Tensor b2 = Tensor::from_buffer(b.buffer(), b.byte_offset() + static_cast<size_t>(ob) * dtype_size(b.dtype()),
                                    {K, N}, b.dtype(), {b.strides()[b.dim() - 2], b.strides()[b.dim() - 1]});
    F32Matrix am = as_f32_matrix(a2), bm = as_f32_matrix(b2);
    if (K == 0) std::fill(ybuf.begin(), ybuf.end(), 0.0f);
    else
      cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, static_cast<blasint>(M), static_cast<blasint>(N),
                  static_cast<blasint>(K), 1.0f, am.ptr, static_cast<blasint>(am.ld), bm.ptr,
                  static_cast<blasint>(bm.ld), 0.0f, ybuf.data(), static_cast<blasint>(N));
    store_row(ybuf.data(), M * N, byte_ptr_mut(out) + i * M * N * oes, out.dtype());
  }
}

}  // namespace vidax::cpu
