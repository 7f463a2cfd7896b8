// Norms and reductions. Statistics accumulate in f64 (at least as accurate as
// the fp32 statistics the reference computes), each row by one thread in index
// order, so results do not depend on the thread count.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/common.h"
#include "backend/cpu/kernels.h"

namespace vidax::cpu {

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

}  // namespace

void layer_norm(const Tensor& x, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, double eps,
                Tensor& out) {
  const std::vector<double> w = load_vec(weight), b = load_vec(bias);
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
  for_each_row(x, {&sum_sq}, out, [&](const auto& rows, double* o, int64_t D) {
    const double* xr = rows[0].data();
    const double r = 1.0 / std::sqrt(rows[1][0] / static_cast<double>(count) + eps);
    for (int64_t i = 0; i < D; ++i) o[i] = xr[i] * r * (w.empty() ? 1.0 : w[static_cast<size_t>(i)]);
  });
}

void layer_norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps, Tensor& out) {
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
#pragma omp parallel for schedule(static)
  for (int64_t ng = 0; ng < N * G; ++ng) stats[static_cast<size_t>(ng)] = moments(xs.ptr + ng * Cg * S, Cg * S, eps);
  char* ob = byte_ptr_mut(out);
  const int64_t oes = static_cast<int64_t>(dtype_size(out.dtype()));
#pragma omp parallel
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
  Staged<double> xs = stage_f64(x);
  const bool keeps_shape = op == DimReduce::Softmax || op == DimReduce::L2Normalize;
  char* ob = byte_ptr_mut(out);
  const int64_t oes = static_cast<int64_t>(dtype_size(out.dtype()));
  constexpr int64_t kBlock = 256;  // inner positions handled together (vector-friendly, dim order fixed)
  const int64_t iblocks = (inner + kBlock - 1) / kBlock;
#pragma omp parallel if (x.numel() > 16384)
  {
    std::vector<double> acc(kBlock), mx(kBlock), col(static_cast<size_t>(D) * kBlock);
#pragma omp for schedule(static)
    for (int64_t item = 0; item < outer * iblocks; ++item) {
      const int64_t o = item / iblocks, i0 = (item % iblocks) * kBlock, ni = std::min(kBlock, inner - i0);
      const double* base = xs.ptr + o * D * inner + i0;
      std::fill(acc.begin(), acc.end(), 0.0);
      if (op == DimReduce::Softmax) {
        std::fill(mx.begin(), mx.end(), -std::numeric_limits<double>::infinity());
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < ni; ++i) mx[i] = std::max(mx[i], base[d * inner + i]);
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < ni; ++i) {
            // A row of -inf gives NaN, as torch.softmax does.
            const double e = std::exp(base[d * inner + i] - mx[i]);
            col[d * kBlock + i] = e;
            acc[i] += e;
          }
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < ni; ++i) col[d * kBlock + i] /= acc[i];
      } else if (op == DimReduce::L2Normalize) {
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < ni; ++i) acc[i] += base[d * inner + i] * base[d * inner + i];
        for (int64_t i = 0; i < ni; ++i) acc[i] = std::max(std::sqrt(acc[i]), eps);
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < ni; ++i) col[d * kBlock + i] = base[d * inner + i] / acc[i];
      } else {
        for (int64_t d = 0; d < D; ++d)
          for (int64_t i = 0; i < ni; ++i) acc[i] += base[d * inner + i];
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

}  // namespace vidax::cpu
