#include "backend/cpu/common.h"

namespace vidax::cpu {

std::vector<Strides> with_strides_of(const Tensor& x, const std::vector<Strides>& extra) {
  std::vector<Strides> strides{x.strides()};
  strides.insert(strides.end(), extra.begin(), extra.end());
  return strides;
}

Strides broadcast_strides(const Tensor& t, const Shape& shape) {
  const size_t n = shape.size(), m = t.shape().size();
  VIDAX_CHECK(m <= n, "broadcast: " << t.str() << " has more dims than " << shape_str(shape));
  Strides s(n, 0);
  for (size_t i = 0; i < m; ++i) {
    size_t j = n - m + i;
    int64_t d = t.shape()[i];
    VIDAX_CHECK(d == shape[j] || d == 1, "broadcast: " << t.str() << " does not broadcast to " << shape_str(shape));
    s[j] = d == 1 ? 0 : t.strides()[i];
  }
  return s;
}

RowIter::RowIter(const Shape& shape, std::vector<Strides> strides, bool keep_last) {
  const size_t nops = strides.size();
  // Drop size-1 dims (their strides never matter), keeping the last one if asked.
  Shape sh;
  std::vector<Strides> st(nops);
  for (size_t d = 0; d < shape.size(); ++d) {
    bool last = d + 1 == shape.size();
    if (shape[d] == 1 && !(keep_last && last)) continue;
    sh.push_back(shape[d]);
    for (size_t o = 0; o < nops; ++o) st[o].push_back(strides[o][d]);
  }
  if (sh.empty()) {
    sh.push_back(1);
    for (size_t o = 0; o < nops; ++o) st[o].push_back(0);
  }
  // Merge dim d into d+1 when every operand is contiguous across them.
  Shape msh{sh[0]};
  std::vector<Strides> mst(nops);
  for (size_t o = 0; o < nops; ++o) mst[o].push_back(st[o][0]);
  for (size_t d = 1; d < sh.size(); ++d) {
    bool last = d + 1 == sh.size();
    bool can = !(keep_last && last);
    for (size_t o = 0; o < nops && can; ++o) can = mst[o].back() == st[o][d] * sh[d];
    if (can) {
      msh.back() *= sh[d];
      for (size_t o = 0; o < nops; ++o) mst[o].back() = st[o][d];
    } else {
      msh.push_back(sh[d]);
      for (size_t o = 0; o < nops; ++o) mst[o].push_back(st[o][d]);
    }
  }
  len_ = msh.back();
  inner_.resize(nops);
  for (size_t o = 0; o < nops; ++o) {
    inner_[o] = mst[o].back();
    mst[o].pop_back();
  }
  msh.pop_back();
  shape_ = msh;
  strides_ = mst;
  rows_ = shape_numel(shape_);
}

void RowIter::offsets(int64_t r, int64_t* off) const {
  for (size_t o = 0; o < strides_.size(); ++o) off[o] = 0;
  for (size_t d = shape_.size(); d-- > 0;) {
    int64_t i = r % shape_[d];
    r /= shape_[d];
    for (size_t o = 0; o < strides_.size(); ++o) off[o] += i * strides_[o][d];
  }
}

namespace {
template <class T>
Staged<T> stage(const Tensor& x, DType self) {
  Staged<T> s;
  if (x.dtype() == self && x.is_contiguous()) {
    s.ptr = x.data<T>();
    return s;
  }
  s.owned.resize(static_cast<size_t>(x.numel()));
  if (x.numel() == 0) { s.ptr = s.owned.data(); return s; }
  RowIter it(x.shape(), {x.strides()});
  const int64_t len = it.row_len(), is = it.inner_stride(0);
  const size_t es = dtype_size(x.dtype());
  const char* base = byte_ptr(x);
  T* dst = s.owned.data();
#pragma omp parallel for schedule(static) if (x.numel() > 32768)
  for (int64_t r = 0; r < it.rows(); ++r) {
    int64_t off;
    it.offsets(r, &off);
    load_row(base + off * static_cast<int64_t>(es), x.dtype(), is, len, dst + r * len);
  }
  s.ptr = dst;
  return s;
}
}  // namespace

Staged<float> stage_f32(const Tensor& x) { return stage<float>(x, DType::F32); }
Staged<double> stage_f64(const Tensor& x) { return stage<double>(x, DType::F64); }

void copy_strided(const Tensor& src, const Tensor& dst) {
  VIDAX_CHECK(src.shape() == dst.shape(), "copy: shape " << src.str() << " into " << dst.str());
  if (src.numel() == 0) return;
  RowIter it(dst.shape(), {src.strides(), dst.strides()});
  const int64_t len = it.row_len(), ss = it.inner_stride(0), ds = it.inner_stride(1);
  const DType st = src.dtype(), dt = dst.dtype();
  const int64_t es = static_cast<int64_t>(dtype_size(st)), ed = static_cast<int64_t>(dtype_size(dt));
  const char* sb = byte_ptr(src);
  char* db = byte_ptr_mut(dst);
  const bool bulk = src.numel() > 32768;
#pragma omp parallel if (bulk)
  {
    std::vector<float> fbuf;
    std::vector<char> cbuf;
#pragma omp for schedule(static)
    for (int64_t r = 0; r < it.rows(); ++r) {
      int64_t off[2];
      it.offsets(r, off);
      const char* s = sb + off[0] * es;
      char* d = db + off[1] * ed;
      if (st == dt) {
        if (ss == 1 && ds == 1) {
          std::memcpy(d, s, static_cast<size_t>(len * es));
        } else {
          for (int64_t i = 0; i < len; ++i) std::memcpy(d + i * ds * ed, s + i * ss * es, static_cast<size_t>(es));
        }
        continue;
      }
      const bool float_path = dtype_is_float(st) && dtype_is_float(dt) && st != DType::F64 && dt != DType::F64 &&
                              st != DType::F8_E4M3 && st != DType::F8_E5M2 && dt != DType::F8_E4M3 &&
                              dt != DType::F8_E5M2;
      if (float_path && ds == 1) {
        // F32/BF16/F16 -> F32/BF16/F16 through f32 (exact widening, one RNE rounding).
        fbuf.resize(static_cast<size_t>(len));
        load_row(s, st, ss, len, fbuf.data());
        store_row(fbuf.data(), len, d, dt);
        continue;
      }
      // Everything else element by element through vidax::convert (ints, f64, fp8).
      for (int64_t i = 0; i < len; ++i) convert(s + i * ss * es, st, d + i * ds * ed, dt, 1);
    }
  }
}

}  // namespace vidax::cpu
