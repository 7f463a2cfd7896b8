// Data movement: concat, pad, embedding, nearest upsampling, 3-D pixel
// (un)shuffle. Pad and upsample are one "gather by per-dim index maps" kernel;
// the shuffles are a permuted view copied into place.
#include <algorithm>
#include <cstring>

#include "backend/cpu/common.h"
#include "backend/cpu/kernels.h"

namespace vidax::cpu {

namespace {

// out[o_0, ..., o_n] = x[map_0[o_0], ..., map_n[o_n]], or 0 where any map is -1.
// x and out have the same dtype and rank.
void gather_maps(const Tensor& x, const std::vector<std::vector<int64_t>>& maps, Tensor& out) {
  if (out.numel() == 0) return;
  const int64_t nd = out.dim();
  const size_t es = dtype_size(x.dtype());
  const Shape& os = out.shape();
  const int64_t len = os.back(), rows = out.numel() / len;
  const std::vector<int64_t>& last = maps.back();
  const int64_t xs_last = x.strides().back();
  const char* xb = byte_ptr(x);
  char* ob = byte_ptr_mut(out);
#pragma omp parallel for schedule(static) if (out.numel() > 32768)
  for (int64_t r = 0; r < rows; ++r) {
    int64_t rem = r, off = 0;
    bool zero = false;
    for (int64_t d = nd - 2; d >= 0; --d) {
      const int64_t i = rem % os[static_cast<size_t>(d)];
      rem /= os[static_cast<size_t>(d)];
      const int64_t m = maps[static_cast<size_t>(d)][static_cast<size_t>(i)];
      if (m < 0) zero = true;
      else off += m * x.strides()[static_cast<size_t>(d)];
    }
    char* dst = ob + r * len * static_cast<int64_t>(es);
    if (zero) { std::memset(dst, 0, static_cast<size_t>(len) * es); continue; }
    const char* src = xb + off * static_cast<int64_t>(es);
    for (int64_t j = 0; j < len; ++j) {
      const int64_t m = last[static_cast<size_t>(j)];
      if (m < 0) std::memset(dst + j * static_cast<int64_t>(es), 0, es);
      else std::memcpy(dst + j * static_cast<int64_t>(es), src + m * xs_last * static_cast<int64_t>(es), es);
    }
  }
}

std::vector<int64_t> identity_map(int64_t n) {
  std::vector<int64_t> m(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) m[static_cast<size_t>(i)] = i;
  return m;
}

}  // namespace

void concat(const std::vector<Tensor>& xs, int64_t dim, Tensor& out) {
  int64_t off = 0;
  for (const Tensor& x : xs) {
    const int64_t n = x.size(dim);
    if (n > 0) copy_strided(x, out.slice(dim, off, off + n));
    off += n;
  }
}

void pad(const Tensor& x, const std::vector<int64_t>& pads, ops::PadMode mode, Tensor& out) {
  std::vector<std::vector<int64_t>> maps;
  for (int64_t d = 0; d < x.dim(); ++d) {
    const size_t from_end = static_cast<size_t>(x.dim() - 1 - d);
    const int64_t lo = 2 * from_end < pads.size() ? pads[2 * from_end] : 0;
    const int64_t n_in = x.size(d), n_out = out.size(d);
    std::vector<int64_t> m(static_cast<size_t>(n_out));
    for (int64_t o = 0; o < n_out; ++o) {
      int64_t i = o - lo;
      if (mode == ops::PadMode::Replicate) i = std::clamp<int64_t>(i, 0, n_in - 1);
      else if (i < 0 || i >= n_in) i = -1;
      m[static_cast<size_t>(o)] = i;
    }
    maps.push_back(std::move(m));
  }
  gather_maps(x, maps, out);
}

void upsample_nearest(const Tensor& x, const std::vector<int64_t>& factors, Tensor& out) {
  std::vector<std::vector<int64_t>> maps;
  const int64_t first_scaled = x.dim() - static_cast<int64_t>(factors.size());
  for (int64_t d = 0; d < x.dim(); ++d) {
    if (d < first_scaled) { maps.push_back(identity_map(x.size(d))); continue; }
    const int64_t f = factors[static_cast<size_t>(d - first_scaled)];
    std::vector<int64_t> m(static_cast<size_t>(out.size(d)));
    for (int64_t o = 0; o < out.size(d); ++o) m[static_cast<size_t>(o)] = o / f;
    maps.push_back(std::move(m));
  }
  gather_maps(x, maps, out);
}

void embedding(const Tensor& ids, const Tensor& table, Tensor& out) {
  const std::vector<double> idv = ids.to_f64_vector();
  const int64_t V = table.size(0), D = table.size(1);
  for (size_t i = 0; i < idv.size(); ++i)
    VIDAX_CHECK(idv[i] >= 0 && idv[i] < static_cast<double>(V),
                "embedding: id " << static_cast<int64_t>(idv[i]) << " at position " << i << " outside [0, " << V
                                 << ") of table " << table.str());
  const Tensor out2 = out.view({static_cast<int64_t>(idv.size()), D});
  if (table.is_contiguous() && table.dtype() == out.dtype()) {
    // Rows are contiguous: one memcpy per id (T5's position bias gathers L*L rows per layer).
    const size_t row = static_cast<size_t>(D) * dtype_size(table.dtype());
    const char* tb = byte_ptr(table);
    char* ob = byte_ptr_mut(out2);
#pragma omp parallel for schedule(static) if (out.numel() > 32768)
    for (int64_t i = 0; i < static_cast<int64_t>(idv.size()); ++i)
      std::memcpy(ob + static_cast<size_t>(i) * row, tb + static_cast<size_t>(idv[static_cast<size_t>(i)]) * row, row);
    return;
  }
#pragma omp parallel for schedule(static) if (out.numel() > 32768)
  for (int64_t i = 0; i < static_cast<int64_t>(idv.size()); ++i)
    copy_strided(table.select(0, static_cast<int64_t>(idv[static_cast<size_t>(i)])), out2.select(0, i));
}

void pixel_shuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& out) {
  // [N, C*rt*rh*rw, T, H, W] -> view [N, C, rt, rh, rw, T, H, W]
  //   -> permute [N, C, T, rt, H, rh, W, rw] = out viewed at 8 dims.
  const int64_t N = x.size(0), C = out.size(1), T = x.size(2), H = x.size(3), W = x.size(4);
  Tensor xv = x.contiguous().view({N, C, r[0], r[1], r[2], T, H, W}).permute({0, 1, 5, 2, 6, 3, 7, 4});
  copy_strided(xv, out.view({N, C, T, r[0], H, r[1], W, r[2]}));
}

void pixel_unshuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& out) {
  // [N, C, T*rt, H*rh, W*rw] -> view [N, C, T, rt, H, rh, W, rw] -> permute [N, C, rt, rh, rw, T, H, W].
  const int64_t N = x.size(0), C = x.size(1), T = out.size(2), H = out.size(3), W = out.size(4);
  Tensor xv = x.contiguous().view({N, C, T, r[0], H, r[1], W, r[2]}).permute({0, 1, 3, 5, 7, 2, 4, 6});
  copy_strided(xv, out.view({N, C * r[0] * r[1] * r[2], T, H, W}).view({N, C, r[0], r[1], r[2], T, H, W}));
}

}  // namespace vidax::cpu
