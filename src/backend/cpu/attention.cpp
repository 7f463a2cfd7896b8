// Flash attention on the CPU.
//
// For each (batch, head): K is packed transposed ([D][Lk], f32) and V packed
// ([Lk][Dv], f32) once, reading q/k/v in their [B, L, H, D] layout through
// strides (fused-QKV views need no copy beforehand). Query tiles of kQ rows
// then sweep key tiles of kK keys: S = Q K^T * scale (+ bias), masking, online
// softmax in fp32 (running max m and sum l per row), O += P V. No Lq x Lk
// buffer exists; each output row is produced by one thread in a fixed key
// order, so results are bit-identical whatever the thread count.
//
// BF16/F16 inputs are widened exactly to f32 while packing: the products and
// sums are the fp32 computation on the same values.
//
// Masking: keys j >= kv_lens[b] are skipped; causal masks j > i (top-left
// aligned, as torch's scaled_dot_product_attention(is_causal=True)). A query
// row with no visible key (kv_len 0, or every score -inf) outputs zeros.
//
// NaN, as torch's scaled_dot_product_attention on its math path (which
// tests/backend/data/attention_nan.safetensors comes from, made by
// tools/golden/attention_nan.py) and flash_attn on CUDA (the reference's GPU
// path): a NaN in a row's visible scores (from q, k or the bias) makes every
// column of that row's output NaN; a NaN in V makes the output columns NaN of
// every row that sees that key, even where its probability underflowed to 0
// (0 * NaN). torch's CPU flash backend (SDPA's default on the CPU) instead
// outputs zeros for an all-NaN score row, as this kernel did: that hid NaN
// weights (issue 16), so it is not followed. A masked key is not part of the
// problem: keys at or past kv_lens[b] are never read (as flash_attn_varlen with
// the reference's k_lens), and a causal row never sees later keys, not even
// through 0 * NaN (torch's kernels multiply 0 by V inside a partly masked key
// block, an artefact of their block size that would make results depend on
// tile sizes here).
// GCC 12 flags its own _mm512_reduce_* helpers (-Wmaybe-uninitialized): a known false positive.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/common.h"
#include "backend/cpu/small_ops.h"
#include "backend/cpu/kernels.h"

namespace vidax::cpu::VIDAX_KERNEL_NS {  // one copy per tier: isa.h, kernel_tiers.h

namespace {

using namespace attn;

#if defined(__AVX512F__)

// S[r][0..64) = sum_d Q[r][d] * Kt[d][0..64) for NR rows (Q rows ld = D, Kt ld = ldk).
template <int NR>
inline void qk_rows(const float* Q, int64_t D, const float* Kt, int64_t ldk, float* S) {
  __m512 acc[NR][4];
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < 4; ++c) acc[r][c] = _mm512_setzero_ps();
  for (int64_t d = 0; d < D; ++d) {
    const float* kr = Kt + d * ldk;
    const __m512 k0 = _mm512_loadu_ps(kr), k1 = _mm512_loadu_ps(kr + 16), k2 = _mm512_loadu_ps(kr + 32),
                 k3 = _mm512_loadu_ps(kr + 48);
    for (int r = 0; r < NR; ++r) {
      const __m512 q = _mm512_set1_ps(Q[r * D + d]);
      acc[r][0] = _mm512_fmadd_ps(q, k0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(q, k1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(q, k2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(q, k3, acc[r][3]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < 4; ++c) _mm512_storeu_ps(S + r * kK + c * 16, acc[r][c]);
}

// O[r][c0..c0+64) = O * corr[r] + sum_j P[r][j] * V[j][c0..] for NR rows, nk keys.
template <int NR>
inline void pv_rows(const float* P, const float* V, int64_t ldv, int64_t nk, const float* corr, float* O, int64_t ldo,
                    const __mmask16* mask) {
  __m512 acc[NR][4];
  for (int r = 0; r < NR; ++r) {
    const __m512 cr = _mm512_set1_ps(corr[r]);
    for (int c = 0; c < 4; ++c) acc[r][c] = _mm512_mul_ps(_mm512_maskz_loadu_ps(mask[c], O + r * ldo + c * 16), cr);
  }
  for (int64_t j = 0; j < nk; ++j) {
    const float* vr = V + j * ldv;
    const __m512 v0 = _mm512_maskz_loadu_ps(mask[0], vr), v1 = _mm512_maskz_loadu_ps(mask[1], vr + 16),
                 v2 = _mm512_maskz_loadu_ps(mask[2], vr + 32), v3 = _mm512_maskz_loadu_ps(mask[3], vr + 48);
    for (int r = 0; r < NR; ++r) {
      const __m512 p = _mm512_set1_ps(P[r * kK + j]);
      acc[r][0] = _mm512_fmadd_ps(p, v0, acc[r][0]);
      acc[r][1] = _mm512_fmadd_ps(p, v1, acc[r][1]);
      acc[r][2] = _mm512_fmadd_ps(p, v2, acc[r][2]);
      acc[r][3] = _mm512_fmadd_ps(p, v3, acc[r][3]);
    }
  }
  for (int r = 0; r < NR; ++r)
    for (int c = 0; c < 4; ++c) _mm512_mask_storeu_ps(O + r * ldo + c * 16, mask[c], acc[r][c]);
}

template <int NR>
void qk_block(const float* Q, int64_t D, const float* Kt, int64_t ldk, float* S, int64_t nq) {
  int64_t r = 0;
  for (; r + NR <= nq; r += NR) qk_rows<NR>(Q + r * D, D, Kt, ldk, S + r * kK);
  for (; r < nq; ++r) qk_rows<1>(Q + r * D, D, Kt, ldk, S + r * kK);
}

// row_nk (optional): each row's own key count (< nk where a causal row sees
// fewer keys of the tile); the rows then go one at a time.
void pv_block(const float* P, const float* V, int64_t Dv, int64_t nk, const float* corr, float* O, int64_t nq,
              const int64_t* row_nk) {
  for (int64_t c0 = 0; c0 < Dv; c0 += 64) {
    __mmask16 mask[4];
    for (int c = 0; c < 4; ++c) {
      const int64_t left = std::clamp<int64_t>(Dv - c0 - c * 16, 0, 16);
      mask[c] = static_cast<__mmask16>((1u << left) - 1u);
    }
    int64_t r = 0;
    if (!row_nk)
      for (; r + 4 <= nq; r += 4) pv_rows<4>(P + r * kK, V + c0, Dv, nk, corr + r, O + r * Dv + c0, Dv, mask);
    for (; r < nq; ++r)
      pv_rows<1>(P + r * kK, V + c0, Dv, row_nk ? row_nk[r] : nk, corr + r, O + r * Dv + c0, Dv, mask);
  }
}

#else  // portable fallback (builds without AVX-512)

// Loops ordered so that the compiler vectorizes over the tile's 64 keys (AVX2 at the avx2
// tier); each score is still summed over d in order, as before.
template <int NR>
void qk_block(const float* Q, int64_t D, const float* Kt, int64_t ldk, float* S, int64_t nq) {
  for (int64_t r = 0; r < nq; ++r) {
    float acc[kK] = {};
    for (int64_t d = 0; d < D; ++d) {
      const float q = Q[r * D + d];
      const float* kr = Kt + d * ldk;
      for (int64_t j = 0; j < kK; ++j) acc[j] += q * kr[j];
    }
    std::copy(acc, acc + kK, S + r * kK);
  }
}

void pv_block(const float* P, const float* V, int64_t Dv, int64_t nk, const float* corr, float* O, int64_t nq,
              const int64_t* row_nk) {
  for (int64_t r = 0; r < nq; ++r) {
    for (int64_t c = 0; c < Dv; ++c) O[r * Dv + c] *= corr[r];
    for (int64_t j = 0; j < (row_nk ? row_nk[r] : nk); ++j)
      for (int64_t c = 0; c < Dv; ++c) O[r * Dv + c] += P[r * kK + j] * V[j * Dv + c];
  }
}

#endif

// Whether any of V's [B, Lk, H, Dv] values is NaN (one pass over V: Lq times
// less work than the attention itself).
bool any_nan(const View& Vv, int64_t B, int64_t Lk, int64_t H, int64_t Dv) {
  // On the raw bits (exponent all ones, mantissa not zero), so that the loop vectorizes.
  const auto scan = [&](auto abs_mask, auto exp_mask) {
    using U = decltype(abs_mask);
    int found = 0;
#pragma omp parallel for collapse(2) reduction(| : found) schedule(static) if (B * Lk * H * Dv > kMinParallelElements)
    for (int64_t b = 0; b < B; ++b)
      for (int64_t j = 0; j < Lk; ++j)
        for (int64_t h = 0; h < H; ++h) {
          const U* r = reinterpret_cast<const U*>(Vv.row(b, j, h));
          for (int64_t d = 0; d < Dv; ++d) found |= static_cast<U>(r[d * Vv.sd] & abs_mask) > exp_mask;
        }
    return found != 0;
  };
  switch (Vv.dtype) {
    case DType::F32: return scan(uint32_t{0x7fffffff}, uint32_t{0x7f800000});
    case DType::BF16: return scan(uint16_t{0x7fff}, uint16_t{0x7f80});
    case DType::F16: return scan(uint16_t{0x7fff}, uint16_t{0x7c00});
    default: {  // other dtypes: through f32
      int found = 0;
      std::vector<float> row(static_cast<size_t>(Dv));
      for (int64_t b = 0; b < B; ++b)
        for (int64_t j = 0; j < Lk; ++j)
          for (int64_t h = 0; h < H; ++h) {
            load_row(Vv.row(b, j, h), Vv.dtype, Vv.sd, Dv, row.data());
            for (float x : row) found |= std::isnan(x);
          }
      return found != 0;
    }
  }
}

}  // namespace

void attention(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt, Tensor& out) {
  const int64_t B = q.size(0), Lq = q.size(1), H = q.size(2), D = q.size(3), Lk = k.size(1), Dv = v.size(3);
  if (out.numel() == 0) return;
  // bf16 q/k/v: P is rounded to bf16 before P V, as torch's CPU flash attention
  // and FlashAttention do; on AMX machines the tiles run on AMX.
  const bool p_bf16 = q.dtype() == DType::BF16 && k.dtype() == DType::BF16 && v.dtype() == DType::BF16;
  const View Qv = view_of(q), Kv = view_of(k), Vv = view_of(v);
  // Causal tiles hold keys that some of their rows must not see; their P is 0
  // there, and 0 * NaN would leak a later key's NaN V into earlier rows. With a
  // NaN in V, such tiles take each row's own key count (here; the AMX path
  // multiplies whole tiles, so such calls stay on this path).
  const bool exact_causal_pv = opt.causal && any_nan(Vv, B, Lk, H, Dv);
  if (p_bf16 && amx_available() && !exact_causal_pv) return attention_bf16_amx(q, k, v, opt, out);
  const float scale = static_cast<float>(opt.scale);

  // Bias [B|1, H|1, Lq, Lk] staged as f32 with broadcast strides.
  Staged<float> bias_staged;
  const float* bias = nullptr;
  int64_t bsb = 0, bsh = 0;
  if (opt.bias) {
    bias_staged = stage_f32(*opt.bias);
    bias = bias_staged.ptr;
    bsb = opt.bias->size(0) == 1 ? 0 : opt.bias->size(1) * Lq * Lk;
    bsh = opt.bias->size(1) == 1 ? 0 : Lq * Lk;
  }

  // K^T is packed tile-major ([tile][D][kK]): a tile's rows sit next to each other,
  // so they do not alias in L1 the way rows Lk floats apart would.
  const int64_t ktiles = (Lk + kK - 1) / kK, ldk = kK, qtiles = (Lq + kQ - 1) / kQ;
  std::vector<float> Kt(static_cast<size_t>(std::max<int64_t>(D * ktiles * kK, 1)));
  std::vector<float> Vp(static_cast<size_t>(std::max<int64_t>(Lk * Dv, 1)));
  const int64_t oes = static_cast<int64_t>(dtype_size(out.dtype()));
  char* ob = byte_ptr_mut(out);

  for (int64_t b = 0; b < B; ++b) {
    const int64_t kv_len = opt.kv_lens.empty() ? Lk : opt.kv_lens[static_cast<size_t>(b)];
    for (int64_t h = 0; h < H; ++h) {
#pragma omp parallel if (Lq * kv_len * std::max(D, Dv) > kMinParallelElements)
      {
        std::vector<float> row(static_cast<size_t>(std::max(D, Dv)));
        // Pack K^T (zero-padded to whole tiles) and V for this head.
#pragma omp for schedule(static)
        for (int64_t t = 0; t < ktiles; ++t) {
          for (int64_t j = t * kK; j < (t + 1) * kK; ++j) {
            if (j < Lk) load_row(Kv.row(b, j, h), Kv.dtype, Kv.sd, D, row.data());
            else std::fill(row.begin(), row.begin() + D, 0.0f);
            float* kt = Kt.data() + t * D * kK + (j - t * kK);
            for (int64_t d = 0; d < D; ++d) kt[d * kK] = row[static_cast<size_t>(d)];
            if (j < Lk) load_row(Vv.row(b, j, h), Vv.dtype, Vv.sd, Dv, Vp.data() + j * Dv);
          }
        }
        std::vector<float> Qt(static_cast<size_t>(kQ * D)), S(static_cast<size_t>(kQ * kK)),
            O(static_cast<size_t>(kQ * Dv)), m(kQ), l(kQ), corr(kQ);
        std::vector<int64_t> row_nk(kQ);  // keys of the tile each row sees (exact_causal_pv)
#pragma omp for schedule(dynamic, 1)
        for (int64_t qt = 0; qt < qtiles; ++qt) {
          const int64_t i0 = qt * kQ, nq = std::min(kQ, Lq - i0);
          for (int64_t r = 0; r < nq; ++r) load_row(Qv.row(b, i0 + r, h), Qv.dtype, Qv.sd, D, Qt.data() + r * D);
          std::fill(O.begin(), O.end(), 0.0f);
          std::fill(m.begin(), m.end(), kNegInf);
          std::fill(l.begin(), l.end(), 0.0f);
          // Keys any row of this tile can see.
          const int64_t tile_end = opt.causal ? std::min(kv_len, i0 + nq) : kv_len;
          for (int64_t j0 = 0; j0 < tile_end; j0 += kK) {
            const int64_t nk = std::min(kK, tile_end - j0);
            qk_block<4>(Qt.data(), D, Kt.data() + (j0 / kK) * D * kK, ldk, S.data(), nq);
            for (int64_t r = 0; r < nq; ++r) {
              float* s = S.data() + r * kK;
              const int64_t i = i0 + r;
#if defined(__AVX512F__)
              const int64_t visible = opt.causal ? std::clamp<int64_t>(i + 1 - j0, 0, nk) : nk;
              corr[static_cast<size_t>(r)] =
                  softmax_row_fused(s, visible, scale, bias ? bias + b * bsb + h * bsh + i * Lk + j0 : nullptr,
                                    m[static_cast<size_t>(r)], l[static_cast<size_t>(r)], s, nullptr);
#else
              const int64_t visible =
                  finish_scores(s, i, j0, nk, opt.causal, scale, bias ? bias + b * bsb + h * bsh + i * Lk : nullptr);
              corr[static_cast<size_t>(r)] = softmax_row(s, visible, m[static_cast<size_t>(r)], l[static_cast<size_t>(r)]);
#endif
              if (p_bf16) round_to_bf16(s, nk);
              row_nk[static_cast<size_t>(r)] = visible;
            }
            pv_block(S.data(), Vp.data() + j0 * Dv, Dv, nk, corr.data(), O.data(), nq,
                     exact_causal_pv ? row_nk.data() : nullptr);
          }
          for (int64_t r = 0; r < nq; ++r) {
            const float inv = inv_row_sum(l[static_cast<size_t>(r)]);
            float* orow = O.data() + r * Dv;
            for (int64_t c = 0; c < Dv; ++c) orow[c] *= inv;
            store_row(orow, Dv, ob + (((b * Lq + i0 + r) * H + h) * Dv) * oes, out.dtype());
          }
        }
      }
    }
  }
}

}  // namespace vidax::cpu::VIDAX_KERNEL_NS
