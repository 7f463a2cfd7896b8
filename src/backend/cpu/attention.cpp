// Flash-style attention: for each (batch, head, query row) the keys are visited
// in blocks; scores of a block are computed in fp32, the running max and sum
// are updated once per block (online softmax) and the output accumulates in
// fp32. No Lq x Lk buffer exists. q/k/v are read in their [B, L, H, D] layout
// through strides (no transposing copies).
//
// Masking: keys j >= kv_lens[b] are skipped; causal masks j > i (top-left
// aligned, as torch's scaled_dot_product_attention(is_causal=True)). A query
// row with no visible key (kv_len 0, or every score -inf) outputs zeros.
#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/common.h"
#include "backend/cpu/kernels.h"

namespace vidax::cpu {

namespace {

constexpr int64_t kKeyBlock = 128;

// Element strides of a [B, L, H, D] operand staged as f32 with unit stride in D.
struct Operand {
  Staged<float> staged;
  const float* ptr = nullptr;
  int64_t sb = 0, sl = 0, sh = 0;
};

Operand stage_bLhd(const Tensor& t) {
  Operand o;
  if (t.dtype() == DType::F32 && (t.strides()[3] == 1 || t.size(3) == 1)) {
    o.ptr = t.data<float>();
    o.sb = t.strides()[0];
    o.sl = t.strides()[1];
    o.sh = t.strides()[2];
    return o;
  }
  o.staged = stage_f32(t);
  o.ptr = o.staged.owned.empty() ? o.staged.ptr : o.staged.owned.data();
  const int64_t L = t.size(1), H = t.size(2), D = t.size(3);
  o.sh = D;
  o.sl = H * D;
  o.sb = L * H * D;
  return o;
}

}  // namespace

void attention(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt, Tensor& out) {
  const int64_t B = q.size(0), Lq = q.size(1), H = q.size(2), D = q.size(3), Lk = k.size(1), Dv = v.size(3);
  if (out.numel() == 0) return;
  const Operand Q = stage_bLhd(q), K = stage_bLhd(k), V = stage_bLhd(v);
  const float scale = static_cast<float>(opt.scale);

  // Bias [B|1, H|1, Lq, Lk] as f32 with broadcast strides.
  Staged<float> bias_staged;
  const float* bias = nullptr;
  int64_t bsb = 0, bsh = 0;
  if (opt.bias) {
    bias_staged = stage_f32(*opt.bias);
    bias = bias_staged.owned.empty() ? bias_staged.ptr : bias_staged.owned.data();
    bsb = opt.bias->size(0) == 1 ? 0 : opt.bias->size(1) * Lq * Lk;
    bsh = opt.bias->size(1) == 1 ? 0 : Lq * Lk;
  }

  const bool out_f32 = out.dtype() == DType::F32;
  char* ob = byte_ptr_mut(out);
  const int64_t oes = static_cast<int64_t>(dtype_size(out.dtype()));
  constexpr float kNegInf = -std::numeric_limits<float>::infinity();

#pragma omp parallel
  {
    std::vector<float> s(kKeyBlock), acc(static_cast<size_t>(Dv));
#pragma omp for schedule(static) collapse(3)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h)
        for (int64_t i = 0; i < Lq; ++i) {
          const float* qi = Q.ptr + b * Q.sb + i * Q.sl + h * Q.sh;
          int64_t kv_end = opt.kv_lens.empty() ? Lk : opt.kv_lens[static_cast<size_t>(b)];
          if (opt.causal) kv_end = std::min(kv_end, i + 1);
          const float* brow = bias ? bias + b * bsb + h * bsh + i * Lk : nullptr;
          float m = kNegInf, l = 0.0f;
          std::fill(acc.begin(), acc.end(), 0.0f);
          for (int64_t j0 = 0; j0 < kv_end; j0 += kKeyBlock) {
            const int64_t nj = std::min(kKeyBlock, kv_end - j0);
            float bm = kNegInf;
            for (int64_t j = 0; j < nj; ++j) {
              const float* kj = K.ptr + b * K.sb + (j0 + j) * K.sl + h * K.sh;
              float d = 0.0f;
              for (int64_t c = 0; c < D; ++c) d += qi[c] * kj[c];
              float sc = d * scale;
              if (brow) sc += brow[j0 + j];
              s[static_cast<size_t>(j)] = sc;
              bm = std::max(bm, sc);
            }
            if (bm == kNegInf) continue;  // the whole block is masked by the bias
            const float m_new = std::max(m, bm);
            const float corr = std::exp(m - m_new);  // 0 on the first visible block
            l *= corr;
            for (int64_t c = 0; c < Dv; ++c) acc[static_cast<size_t>(c)] *= corr;
            for (int64_t j = 0; j < nj; ++j) {
              const float p = std::exp(s[static_cast<size_t>(j)] - m_new);
              l += p;
              const float* vj = V.ptr + b * V.sb + (j0 + j) * V.sl + h * V.sh;
              for (int64_t c = 0; c < Dv; ++c) acc[static_cast<size_t>(c)] += p * vj[c];
            }
            m = m_new;
          }
          const float inv = l > 0.0f ? 1.0f / l : 0.0f;
          for (int64_t c = 0; c < Dv; ++c) acc[static_cast<size_t>(c)] *= inv;
          char* orow = ob + ((b * Lq + i) * H + h) * Dv * oes;
          if (out_f32) std::copy(acc.begin(), acc.end(), reinterpret_cast<float*>(orow));
          else store_row(acc.data(), Dv, orow, out.dtype());
        }
  }
}

}  // namespace vidax::cpu
