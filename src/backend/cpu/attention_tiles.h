// Pieces shared by the attention kernels (attention.cpp: AVX-512 fp32 tiles;
// attention_amx.cpp: AMX bf16 tiles): tile sizes, the vector exp, the online
// softmax step of one score row, and strided [B, L, H, D] operand access.
#pragma once
#include <immintrin.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "backend/cpu/common.h"
#include "backend/cpu/vmath.h"
#include "backend/ops.h"

namespace vidax::cpu::attn {

// Inline helpers compiled per instruction set (isa.h).
inline namespace VIDAX_ISA_NS {

constexpr int64_t kQ = 64;  // query rows per tile
constexpr int64_t kK = 64;  // keys per tile (4 AVX-512 vectors)
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

constexpr float kNaN = std::numeric_limits<float>::quiet_NaN();

// A score row met a NaN that the running max did not keep: its state and the
// returned rescale factor become NaN, so the row's output O * corr + P V and its
// sum l are NaN from here on (every later step keeps a NaN m and l NaN).
inline float poison_row(float& m, float& l) {
  m = kNaN;
  l = kNaN;
  return kNaN;
}

// 1 / l for a row's finished sum: 0 for a row that saw no key (l = 0: zeros out),
// NaN for a NaN row (a NaN l must not read as "no key").
inline float inv_row_sum(float l) { return l == 0.0f ? 0.0f : 1.0f / l; }

#if defined(__AVX512F__)

using vmath::exp512;

// One score row of a key tile (NV x 16 keys), fused: scale, bias, visibility mask, running
// max m and sum l, P = exp(s - m) written as f32 (p32) and/or bf16 (p16, RNE).
// Returns the factor that rescales the row's previous output (1 when the max
// did not grow, so the caller can skip the rescale).
template <int NV = 4>  // 16-lane vectors per row
inline float softmax_row_fused(const float* s, int64_t visible, float scale, const float* bias, float& m, float& l,
                               float* p32, uint16_t* p16) {
  __m512 v[NV];
  __m512 mx = _mm512_set1_ps(kNegInf);
  const __m512 sc = _mm512_set1_ps(scale), ninf = _mm512_set1_ps(kNegInf);
  for (int c = 0; c < NV; ++c) {
    const int64_t left = std::clamp<int64_t>(visible - c * 16, 0, 16);
    const __mmask16 k = static_cast<__mmask16>((1u << left) - 1u);
    __m512 x = _mm512_mul_ps(_mm512_loadu_ps(s + c * 16), sc);
    if (bias) x = _mm512_add_ps(x, _mm512_maskz_loadu_ps(k, bias + c * 16));
    v[c] = _mm512_mask_blend_ps(k, ninf, x);
    mx = _mm512_max_ps(mx, v[c]);
  }
  // NaN scores: a max that sees a NaN lane may keep it or drop it. Where it drops it,
  // m_new is finite and exp(NaN - m_new) = NaN makes the row's sum l NaN; where every
  // visible score is NaN (or the NaN survived while m was -inf), m_new is -inf and the
  // branch below poisons the row. Either way the row's output is NaN, as in torch
  // (module comment of attention.cpp), and the common path pays nothing.
  const float m_new = std::max(m, _mm512_reduce_max_ps(mx));
  if (m_new == kNegInf) {  // nothing visible yet: P = 0, keep the (zero) output
    __mmask16 nan = 0;
    for (int c = 0; c < NV; ++c) {
      nan |= _mm512_cmp_ps_mask(v[c], v[c], _CMP_UNORD_Q);
      if (p32) _mm512_storeu_ps(p32 + c * 16, _mm512_setzero_ps());
      if (p16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p16 + c * 16), _mm256_setzero_si256());
    }
    return nan ? poison_row(m, l) : 1.0f;
  }
  const float corr = m_new > m ? std::exp(m - m_new) : 1.0f;  // 0 on the first visible tile
  const __m512 mn = _mm512_set1_ps(m_new);
  __m512 sum = _mm512_setzero_ps();
  for (int c = 0; c < NV; ++c) {
    const __m512 p = exp512(_mm512_sub_ps(v[c], mn));
    sum = _mm512_add_ps(sum, p);
    if (p32) _mm512_storeu_ps(p32 + c * 16, p);
#if defined(__AVX512BF16__)
    if (p16) _mm256_storeu_si256(reinterpret_cast<__m256i*>(p16 + c * 16), (__m256i)_mm512_cvtneps_pbh(p));
#endif
  }
  l = l * corr + _mm512_reduce_add_ps(sum);
  m = m_new;
  return corr;
}

#else

// Portable online-softmax step (see softmax_row_fused).
inline float softmax_row(float* s, int64_t visible, float& m, float& l) {
  for (int64_t j = visible; j < kK; ++j) s[j] = kNegInf;
  float bm = kNegInf;
  for (int64_t j = 0; j < kK; ++j) bm = std::max(bm, s[j]);
  const float m_new = std::max(m, bm);  // std::max drops NaN scores: see softmax_row_fused
  if (m_new == kNegInf) {
    bool nan = false;
    for (int64_t j = 0; j < kK; ++j) {
      nan |= std::isnan(s[j]);
      s[j] = 0.0f;
    }
    return nan ? poison_row(m, l) : 1.0f;
  }
  const float corr = std::exp(m - m_new);
  float sum = 0;
  for (int64_t j = 0; j < kK; ++j) {
    s[j] = std::exp(s[j] - m_new);
    sum += s[j];
  }
  l = l * corr + sum;
  m = m_new;
  return corr;
}

#endif

// Rounds a row of probabilities to bf16 values (RNE), kept as f32.
inline void round_to_bf16(float* p, int64_t n) {
  for (int64_t j = 0; j < n; ++j) p[j] = bf16_to_f32(f32_to_bf16(p[j]));
}

// Element pointer and strides of a [B, L, H, D] operand.
struct View {
  const char* base;
  DType dtype;
  int64_t es, sb, sl, sh, sd;
  const char* row(int64_t b, int64_t l, int64_t h) const { return base + (b * sb + l * sl + h * sh) * es; }
};
inline View view_of(const Tensor& t) {
  const Strides& s = t.strides();
  return {byte_ptr(t), t.dtype(), static_cast<int64_t>(dtype_size(t.dtype())), s[0], s[1], s[2], s[3]};
}

// Scales row i's scores of the key tile at j0 (nk keys), adds its bias row and
// returns how many leading keys are visible (causal: keys <= i).
inline int64_t finish_scores(float* s, int64_t i, int64_t j0, int64_t nk, bool causal, float scale,
                             const float* bias_row) {
  const int64_t visible = causal ? std::clamp<int64_t>(i + 1 - j0, 0, nk) : nk;
  for (int64_t j = 0; j < visible; ++j) s[j] *= scale;
  if (bias_row)
    for (int64_t j = 0; j < visible; ++j) s[j] += bias_row[j0 + j];
  return visible;
}

}  // inline namespace VIDAX_ISA_NS

// The AMX path for bf16 q/k/v (attention_amx.cpp). amx_available() asks the OS
// for the AMX tile state once; false on CPUs or kernels without it.
bool amx_available();
// Tests switch the AMX path off to exercise the AVX-512 path on AMX machines.
void set_amx_enabled(bool enabled);
void attention_bf16_amx(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt,
                        Tensor& out);

}  // namespace vidax::cpu::attn
