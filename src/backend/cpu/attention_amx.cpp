// Flash attention for bf16 q/k/v on AMX tiles (TDPBF16PS: bf16 products, fp32
// accumulation), with the same masking contract as attention.cpp.
//
// Work item = (batch, head, block of kBQ query rows); a thread takes a static,
// contiguous range of items and packs K and V of a head once when it enters it:
//   K: B tiles [16 pairs of d][16 keys][2]          -> S  = Q K^T on AMX
//   V: B tiles [16 pairs of keys][16 columns][2]    -> O += P V  on AMX
// Each item sweeps key blocks of kBK keys:
//   1. S[kBQ x kBK] = Q K^T (2 x 2 tile micro-kernels, fp32 tiles stored to scratch),
//   2. online softmax in base 2 with scale * log2(e) folded into one FMA, 16 rows
//      at a time: row max and row sum by a transposed 16-row reduction, a short
//      exp2 polynomial (7.5e-5 relative; P is rounded to bf16 anyway), P written
//      as bf16 (RNE) two vectors per instruction. A row's base m (its running max
//      when last moved) stays while a block's P sums to at most kLazySum = 2^16:
//      one pass over S then gives P = exp2(logit - m) and the row sums (no max
//      pass; measured +9% at N = 4096, one thread); otherwise the block is redone
//      with m moved to the new max and those rows' O rescaled (after the first
//      blocks, rare),
//   3. O[kBQ x Dv] += P V on tiles, 8 chunks of 32 keys per O tile load/store.
// Measured on a shared 2-core AMX machine (see the attention section of
// bench_kernels): 256-key blocks over 32-row items beat 64/128-key blocks and
// 64-row items; issuing the next block's Q K^T during the softmax (software
// pipelining, S double-buffered) and software prefetch did not help there.
// Blocks with a mask (key length, causal diagonal) or a bias first turn S into
// base-2 logits with masked keys at -1e30, which the exp maps to exactly 0.
// NaN (the contract is in attention.cpp): a NaN logit gives a NaN P (exp2_bounded
// passes NaN), so the row sum l turns NaN whichever max the NaN-blind
// reductions below keep, and a NaN l makes the row's output NaN (inv_row_sum);
// masked keys are -1e30 whatever their score and keys past kv_len are packed as
// zeros, so neither leaks. A causal call whose V holds a NaN does not come here
// (tiles would multiply a hidden key's P = 0 by its NaN V); attention.cpp keeps
// it on the AVX-512 path. Built on AMX machines only: on others this file
// compiles to the stub below, and these rules hold by construction, unmeasured.
// (Now compiled with AMX flags in every x86-64 build and entered only at the amx tier, cpu_tier.h.)
// Every output row is computed by one thread in a fixed key order: results are
// bit-identical whatever the thread count.
// Every AMX tile here is 16 rows x 64 bytes (16 x 32 bf16 or 16 x 16 f32).
// D and Dv are zero-padded to multiples of 32, keys to whole key blocks.
// GCC 12 false positives inside its own AVX-512 headers (_mm512_undefined_* helpers).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#include <omp.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <vector>
#include <new>

#include "backend/cpu/amx.h"
#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/kernels.h"

namespace vidax::cpu::attn {

// amx_available() and set_amx_enabled() are in kernel_dispatch.cpp (baseline code: they
// run on every CPU, this file's code only at the amx tier).

#if defined(__AMX_BF16__) && defined(__AMX_TILE__) && defined(__AVX512BF16__)

namespace {

// Query rows per work item: every key block streamed in (from L3 once K/V of a
// head outgrow L2, L >~ 4000) serves 128 rows. Measured at 2 threads, L = 7800,
// 12 heads: 555-730 GFLOP/s with 32 rows, 940-955 with 64, 970-1060 with 128;
// L = 3120 unchanged (~1000).
constexpr int64_t kBQ = 128;
constexpr int64_t kBK = 256;  // keys per key block
constexpr int64_t kNV = kBK / 16;  // 16-lane vectors per score row of a block
constexpr int64_t kTileElems = 16 * 32;  // bf16 values in one 1 KiB tile
constexpr float kLog2e = 1.44269504088896341f;
// Base-2 logit of a masked key: finite, so that (masked - row max) stays far below
// the exp's underflow threshold (-126) even when the whole row is masked.
constexpr float kMaskedLogit = -1e30f;
// Row maxima are clamped to this before subtracting: a row whose keys are all
// masked so far (max = kMaskedLogit) then gets P = 0 instead of exp2(0) = 1.
constexpr float kMaxFloor = -1e20f;
// The most a row's P may sum to over one key block before the row's base m is
// moved to the block's max: then every P = exp2(logit - m) <= 2^16, far inside
// fp32 / bf16.
constexpr float kLazySum = 65536.0f;

static_assert(kBK % 32 == 0 && kBQ % 32 == 0, "blocks are whole 2 x 2 micro-kernels");

// 64-byte aligned scratch (AVX-512 rows, tiles).
template <class T>
class AlignedArray {
 public:
  explicit AlignedArray(int64_t n) {
    const size_t bytes = (static_cast<size_t>(std::max<int64_t>(n, 1)) * sizeof(T) + 63) / 64 * 64;
    p_ = static_cast<T*>(std::aligned_alloc(64, bytes));
    if (!p_) throw std::bad_alloc();
    std::memset(static_cast<void*>(p_), 0, bytes);
  }
  AlignedArray(const AlignedArray&) = delete;
  AlignedArray& operator=(const AlignedArray&) = delete;
  ~AlignedArray() { std::free(p_); }
  T* data() { return p_; }

 private:
  T* p_ = nullptr;
};

// Copies n bf16 values (stride in elements) to dst.
void load_bf16(const char* src, int64_t stride, int64_t n, uint16_t* dst) {
  if (stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 2);
    return;
  }
  const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = s[i * stride];
}

// 2^x for x <= 128: 2^floor(x) * p(x - floor(x)), p a degree-3 minimax fit of 2^f on
// [0, 1) (relative error 7.5e-5 evaluated in fp32; P is rounded to bf16 right after,
// a relative step of 2^-8, so at most a few percent of P values round the other
// way; the degree-4 fit cost one more FMA per 16 values). x < -126 gives 0 (no
// denormals), x >= 128 gives inf, NaN gives NaN (a NaN logit must reach the row
// sum: see attention.cpp on NaN).
inline __m512 exp2_bounded(__m512 x) {
  const __m512 f = _mm512_reduce_ps(x, 0x09);  // x - floor(x): M = 0 fraction bits, round down, no exceptions
  __m512 p = _mm512_set1_ps(0.07802419364452362f);
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.2260672152042389f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.6958337426185608f));
  p = _mm512_fmadd_ps(p, f, _mm512_set1_ps(0.9999251961708069f));
  // Not (x < -126): unordered (NaN) lanes keep p = NaN, scalef(NaN, NaN) = NaN.
  const __mmask16 normal = _mm512_cmp_ps_mask(x, _mm512_set1_ps(-126.0f), _CMP_NLT_UQ);
  return _mm512_maskz_scalef_ps(normal, p, x);  // scalef multiplies by 2^floor(x)
}

// Reduces 16 vectors to one whose lane r is op over all lanes of v[r] (a 16 x 16
// transpose-and-reduce in 15 combining steps instead of 16 horizontal reductions).
template <class Op>
inline __m512 reduce_rows16(const __m512 (&v)[16], Op op) {
  // Input order 4k + t <- row 4t + k makes the output lane order the row order.
  const auto in = [&](int i) { return v[4 * (i % 4) + i / 4]; };
  __m512 x[8], y[4], z[2];
  for (int i = 0; i < 8; ++i) {
    const __m512 a = in(2 * i), b = in(2 * i + 1);
    x[i] = op(_mm512_shuffle_f32x4(a, b, 0x44), _mm512_shuffle_f32x4(a, b, 0xEE));
  }
  for (int i = 0; i < 4; ++i)
    y[i] = op(_mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0x88), _mm512_shuffle_f32x4(x[2 * i], x[2 * i + 1], 0xDD));
  for (int j = 0; j < 2; ++j)
    z[j] = op(_mm512_shuffle_ps(y[2 * j], y[2 * j + 1], 0x44), _mm512_shuffle_ps(y[2 * j], y[2 * j + 1], 0xEE));
  return op(_mm512_shuffle_ps(z[0], z[1], 0x88), _mm512_shuffle_ps(z[0], z[1], 0xDD));
}

// The combining steps reduce_rows16 is used with: row sums and row maxima (lambdas,
// so that each reduction is inlined as one type).
constexpr auto add16 = [](__m512 a, __m512 b) { return _mm512_add_ps(a, b); };
constexpr auto max16 = [](__m512 a, __m512 b) { return _mm512_max_ps(a, b); };

// Online-softmax state of 16 query rows (base-2 logits).
struct RowState {
  alignas(64) float m[16];  // running max of the logits
  alignas(64) float l[16];  // running sum of exp2(logit - m)
};

// One score row of a block: P = bf16(exp2(s * c - m)) (two vectors per instruction,
// one 32-key chunk: p is the row's line in the block's first chunk tile, the
// chunks kTileElems apart); returns the 16 partial sums of P.
inline __m512 exp_row(const float* s, __m512 cc, __m512 m, uint16_t* p) {
  __m512 sum = _mm512_setzero_ps();
  for (int v = 0; v < kNV; v += 2) {
    const __m512 x0 = _mm512_load_ps(s + v * 16), x1 = _mm512_load_ps(s + v * 16 + 16);
    const __m512 p0 = exp2_bounded(_mm512_fmsub_ps(x0, cc, m));
    const __m512 p1 = exp2_bounded(_mm512_fmsub_ps(x1, cc, m));
    sum = _mm512_add_ps(sum, _mm512_add_ps(p0, p1));
    _mm512_store_si512(p + (v / 2) * kTileElems, (__m512i)_mm512_cvtne2ps_pbh(p1, p0));
  }
  return sum;
}

// One key block of 16 score rows (row stride kBK): logit = s * c (c = scale * log2 e,
// or 1 when S already holds logits). Writes P (bf16, as A tiles: see Worker::P), updates the
// state and returns in corr the factor each row's previous O must be scaled by;
// the mask says which rows have corr != 1.
inline __mmask16 softmax_rows16(const float* S, float c, RowState& st, uint16_t* P, float* corr) {
  const __m512 m_prev = _mm512_load_ps(st.m);
  // Every row has seen a key: one pass computes P against the current m. Only when
  // some row's P sums to more than kLazySum over the block (so some logit may have
  // risen past log2(kLazySum) above m) is the block redone below with m moved to
  // the block's max (after the first blocks, rare). While the sum stays below it,
  // every P <= kLazySum: far inside fp32 and bf16. The result is the same softmax:
  // P and l share the base. Checking the sum, which is needed anyway, instead of a
  // max of the scores saves one instruction per 16 scores.
  if (_mm512_cmp_ps_mask(m_prev, _mm512_set1_ps(kMaxFloor), _CMP_GE_OQ) == 0xffff) {
    __m512 sums[16];
    const __m512 cc = _mm512_set1_ps(c);
    alignas(64) float m_row[16];
    _mm512_store_ps(m_row, m_prev);
    for (int r = 0; r < 16; ++r) sums[r] = exp_row(S + r * kBK, cc, _mm512_set1_ps(m_row[r]), P + r * 32);
    const __m512 rowsum = reduce_rows16(sums, add16);
    // Not (rowsum <= kLazySum): an inf or NaN sum also takes the careful path.
    if (_mm512_cmp_ps_mask(rowsum, _mm512_set1_ps(kLazySum), _CMP_NLE_UQ) == 0) {
      _mm512_store_ps(corr, _mm512_set1_ps(1.0f));
      _mm512_store_ps(st.l, _mm512_add_ps(_mm512_load_ps(st.l), rowsum));
      return 0;
    }
  }
  __m512 red[16];
  for (int r = 0; r < 16; ++r) {
    const float* s = S + r * kBK;
    __m512 mx = _mm512_load_ps(s);
    for (int v = 1; v < kNV; ++v) mx = _mm512_max_ps(mx, _mm512_load_ps(s + v * 16));
    red[r] = mx;
  }
  const __m512 m_new = _mm512_max_ps(m_prev, _mm512_mul_ps(reduce_rows16(red, max16), _mm512_set1_ps(c)));
  const __m512 cv = exp2_bounded(_mm512_sub_ps(m_prev, m_new));
  const __mmask16 changed = _mm512_cmp_ps_mask(cv, _mm512_set1_ps(1.0f), _CMP_NEQ_UQ);
  _mm512_store_ps(st.m, m_new);
  _mm512_store_ps(corr, cv);
  alignas(64) float m_sub[16];
  _mm512_store_ps(m_sub, _mm512_max_ps(m_new, _mm512_set1_ps(kMaxFloor)));
  const __m512 cc = _mm512_set1_ps(c);
  for (int r = 0; r < 16; ++r) red[r] = exp_row(S + r * kBK, cc, _mm512_set1_ps(m_sub[r]), P + r * 32);
  const __m512 rowsum = reduce_rows16(red, add16);
  _mm512_store_ps(st.l, _mm512_fmadd_ps(_mm512_load_ps(st.l), cv, rowsum));
  return changed;
}

// 16 x 16 transpose of 32-bit elements: r[i] holds row i on entry, column i on exit.
inline void transpose16x16_epi32(__m512i (&r)[16]) {
  __m512i t[16], u[16];
  for (int i = 0; i < 16; i += 2) {
    t[i] = _mm512_unpacklo_epi32(r[i], r[i + 1]);
    t[i + 1] = _mm512_unpackhi_epi32(r[i], r[i + 1]);
  }
  for (int i = 0; i < 16; i += 4) {
    u[i] = _mm512_unpacklo_epi64(t[i], t[i + 2]);
    u[i + 1] = _mm512_unpackhi_epi64(t[i], t[i + 2]);
    u[i + 2] = _mm512_unpacklo_epi64(t[i + 1], t[i + 3]);
    u[i + 3] = _mm512_unpackhi_epi64(t[i + 1], t[i + 3]);
  }
  for (int i = 0; i < 16; i += 8)
    for (int j = 0; j < 4; ++j) {
      t[i + j] = _mm512_shuffle_i32x4(u[i + j], u[i + 4 + j], 0x88);
      t[i + 4 + j] = _mm512_shuffle_i32x4(u[i + j], u[i + 4 + j], 0xdd);
    }
  for (int j = 0; j < 8; ++j) {
    r[j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0x88);
    r[8 + j] = _mm512_shuffle_i32x4(t[j], t[8 + j], 0xdd);
  }
}

// Per-thread state and scratch.
struct Worker {
  int64_t Dp, Dvp, dchunks, vchunks, kblocks;
  int64_t packed_b = -1, packed_h = -1;
  // P of 16 query rows is stored as the A tiles P V loads, one 1 KiB tile per 32-key
  // chunk ([chunk][row][32 keys]): contiguous tile loads, no row stride of kBK.
  AlignedArray<uint16_t> Kp, Vp, Q, P;
  AlignedArray<float> S, O;
  AlignedArray<uint16_t> stage;  // rows being packed
  RowState rows[kBQ / 16];
  alignas(64) float corr[kBQ];

  Worker(int64_t D, int64_t Dv, int64_t Lk)
      : Dp((D + 31) / 32 * 32),
        Dvp((Dv + 31) / 32 * 32),
        dchunks(Dp / 32),
        vchunks(Dvp / 16),
        kblocks((Lk + kBK - 1) / kBK),
        Kp(kblocks * kBK * Dp),
        Vp(kblocks * kBK * Dvp),
        Q(kBQ * Dp),
        P(kBQ * kBK),
        S(kBQ * kBK),
        O(kBQ * Dvp),
        stage(16 * std::max(Dp, Dvp)) {}

  // K tile (key tile kt of 16 keys, d chunk dc): [pair p][key c][2].
  uint16_t* k_tile(int64_t kt, int64_t dc) { return Kp.data() + (kt * dchunks + dc) * kTileElems; }
  // V tile (key chunk kc of 32 keys, column tile vc): [key pair p][column c][2].
  uint16_t* v_tile(int64_t kc, int64_t vc) { return Vp.data() + (kc * vchunks + vc) * kTileElems; }

  // Packs the keys [0, kv_len) of one head, zero-padded to whole key blocks (the
  // blocks past kv_len are never read).
  void pack_head(const View& Kv, const View& Vv, int64_t b, int64_t h, int64_t D, int64_t Dv, int64_t kv_len) {
    packed_b = b;
    packed_h = h;
    const int64_t keys = (kv_len + kBK - 1) / kBK * kBK;
    // K: 16 keys at a time; per d chunk, tile row p holds pair p of d of the 16 keys,
    // a 16 x 16 transpose of 32-bit pairs.
    for (int64_t kt = 0; kt < keys / 16; ++kt) {
      for (int64_t c = 0; c < 16; ++c) {
        uint16_t* dst = stage.data() + c * Dp;  // columns [D, Dp) stay 0
        const int64_t j = kt * 16 + c;
        if (j < kv_len) load_bf16(Kv.row(b, j, h), Kv.sd, D, dst);
        else std::memset(dst, 0, static_cast<size_t>(D) * 2);
      }
      for (int64_t dc = 0; dc < dchunks; ++dc) {
        __m512i r[16];
        for (int c = 0; c < 16; ++c) r[c] = _mm512_load_si512(stage.data() + c * Dp + dc * 32);
        transpose16x16_epi32(r);
        for (int p = 0; p < 16; ++p) _mm512_store_si512(k_tile(kt, dc) + p * 32, r[p]);
      }
    }
    // V: keys 2p and 2p + 1 of a 32-key chunk interleaved column by column form row p.
    alignas(64) static constexpr uint16_t kLo[32] = {0, 32, 1, 33, 2, 34, 3, 35, 4, 36, 5, 37, 6, 38, 7, 39,
                                                     8, 40, 9, 41, 10, 42, 11, 43, 12, 44, 13, 45, 14, 46, 15, 47};
    const __m512i lo = _mm512_load_si512(kLo), hi = _mm512_add_epi16(lo, _mm512_set1_epi16(16));
    for (int64_t j = 0; j < keys; j += 2) {
      for (int64_t e = 0; e < 2; ++e) {
        uint16_t* dst = stage.data() + e * Dvp;  // columns [Dv, Dvp) stay 0
        if (j + e < kv_len) load_bf16(Vv.row(b, j + e, h), Vv.sd, Dv, dst);
        else std::memset(dst, 0, static_cast<size_t>(Dv) * 2);
      }
      const int64_t kc = j / 32, p = (j % 32) / 2;
      for (int64_t g = 0; g < Dvp / 32; ++g) {
        const __m512i a = _mm512_load_si512(stage.data() + g * 32), c = _mm512_load_si512(stage.data() + Dvp + g * 32);
        _mm512_store_si512(v_tile(kc, 2 * g) + p * 32, _mm512_permutex2var_epi16(a, lo, c));
        _mm512_store_si512(v_tile(kc, 2 * g + 1) + p * 32, _mm512_permutex2var_epi16(a, hi, c));
      }
    }
  }
};

struct Problem {
  int64_t B, Lq, H, D, Lk, Dv;
  View Qv, Kv, Vv;
  float scale;
  bool causal;
  const std::vector<int64_t>* kv_lens;
  const float* bias;
  int64_t bsb, bsh;
  char* out;
  DType out_dtype;
  int64_t oes;
};

// S rows of the row pairs [rp0, rp1) (fp32, row stride kBK) = Q rows times the key
// block's K^T, for its first kpairs pairs of key tiles (the rest are masked). Row
// pairs run innermost, so each pass's K tiles are reused from L1.
inline void qk_tiles(Worker& w, int64_t rp0, int64_t rp1, int64_t kblock, int64_t kpairs, float* S) {
  const int64_t Dp = w.Dp;
  for (int64_t kt = 0; kt < 2 * kpairs; kt += 2) {
    const int64_t gkt = kblock * (kBK / 16) + kt;
    for (int64_t rp = rp0; rp < rp1; ++rp) {
      const uint16_t* q = w.Q.data() + rp * 32 * Dp;
      _tile_zero(0);
      _tile_zero(1);
      _tile_zero(2);
      _tile_zero(3);
      for (int64_t dc = 0; dc < w.dchunks; ++dc) {
        _tile_loadd(4, q + dc * 32, Dp * 2);
        _tile_loadd(5, q + 16 * Dp + dc * 32, Dp * 2);
        _tile_loadd(6, w.k_tile(gkt, dc), 64);
        _tile_loadd(7, w.k_tile(gkt + 1, dc), 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      float* s = S + rp * 32 * kBK + kt * 16;
      _tile_stored(0, s, kBK * 4);
      _tile_stored(1, s + 16, kBK * 4);
      _tile_stored(2, s + 16 * kBK, kBK * 4);
      _tile_stored(3, s + 16 * kBK + 16, kBK * 4);
    }
  }
}

// O rows of the row pairs [rp0, rp1) += P (A tiles, see Worker::P) times the key block's V,
// over its first kchunks chunks of 32 keys (the rest have P = 0). Row pairs run
// innermost, so each column pass's V tiles are reused from L1.
inline void pv_tiles(Worker& w, int64_t rp0, int64_t rp1, int64_t kblock, int64_t kchunks, const uint16_t* P) {
  const int64_t Dvp = w.Dvp;
  for (int64_t vc = 0; vc < w.vchunks; vc += 2)
    for (int64_t rp = rp0; rp < rp1; ++rp) {
      const uint16_t* p = P + rp * 32 * kBK;  // row tiles 2 rp and 2 rp + 1
      float* o = w.O.data() + rp * 32 * Dvp + vc * 16;
      _tile_loadd(0, o, Dvp * 4);
      _tile_loadd(1, o + 16, Dvp * 4);
      _tile_loadd(2, o + 16 * Dvp, Dvp * 4);
      _tile_loadd(3, o + 16 * Dvp + 16, Dvp * 4);
      for (int64_t kc = 0; kc < kchunks; ++kc) {
        const int64_t gkc = kblock * (kBK / 32) + kc;
        _tile_loadd(4, p + kc * kTileElems, 64);
        _tile_loadd(5, p + 16 * kBK + kc * kTileElems, 64);
        _tile_loadd(6, w.v_tile(gkc, vc), 64);
        _tile_loadd(7, w.v_tile(gkc, vc + 1), 64);
        _tile_dpbf16ps(0, 4, 6);
        _tile_dpbf16ps(1, 4, 7);
        _tile_dpbf16ps(2, 5, 6);
        _tile_dpbf16ps(3, 5, 7);
      }
      _tile_stored(0, o, Dvp * 4);
      _tile_stored(1, o + 16, Dvp * 4);
      _tile_stored(2, o + 16 * Dvp, Dvp * 4);
      _tile_stored(3, o + 16 * Dvp + 16, Dvp * 4);
    }
}

// Turns 16 score rows of the block at j0 into base-2 logits in place: scale, bias,
// and kMaskedLogit for keys a row cannot see (beyond the key length, or causal).
inline void masked_logits16(float* S, const Problem& pb, int64_t b, int64_t h, int64_t i0, int64_t j0, int64_t kv_len) {
  const __m512 c = _mm512_set1_ps(pb.scale * kLog2e), l2e = _mm512_set1_ps(kLog2e), masked = _mm512_set1_ps(kMaskedLogit);
  for (int64_t r = 0; r < 16; ++r) {
    const int64_t i = i0 + r;
    const int64_t end = pb.causal ? std::min(kv_len, i + 1) : kv_len;  // keys [0, end) visible
    const int64_t visible = std::clamp<int64_t>(end - j0, 0, kBK);
    const float* bias_row = pb.bias && i < pb.Lq ? pb.bias + b * pb.bsb + h * pb.bsh + i * pb.Lk + j0 : nullptr;
    float* s = S + r * kBK;
    for (int64_t v = 0; v < kNV; ++v) {
      const __mmask16 k = static_cast<__mmask16>((1u << std::clamp<int64_t>(visible - v * 16, 0, 16)) - 1u);
      __m512 x = _mm512_mul_ps(_mm512_load_ps(s + v * 16), c);
      if (bias_row) x = _mm512_fmadd_ps(_mm512_maskz_loadu_ps(k, bias_row + v * 16), l2e, x);
      x = _mm512_max_ps(masked, x);  // a -inf bias is masked too (NaN stays NaN)
      _mm512_store_ps(s + v * 16, _mm512_mask_blend_ps(k, masked, x));
    }
  }
}

// Rescales O's rows (16 rows from o, row stride Dvp) whose mask bit is set.
inline void rescale_rows16(float* o, int64_t Dvp, __mmask16 rows, const float* corr) {
  while (rows) {
    const int r = __builtin_ctz(rows);
    rows = static_cast<__mmask16>(rows & (rows - 1));
    const __m512 f = _mm512_set1_ps(corr[r]);
    float* orow = o + r * Dvp;
    for (int64_t c = 0; c < Dvp; c += 16) _mm512_store_ps(orow + c, _mm512_mul_ps(_mm512_load_ps(orow + c), f));
  }
}

void run_item(Worker& w, const Problem& pb, int64_t b, int64_t h, int64_t qb) {
  const int64_t kv_len = pb.kv_lens->empty() ? pb.Lk : (*pb.kv_lens)[static_cast<size_t>(b)];
  if (w.packed_b != b || w.packed_h != h) w.pack_head(pb.Kv, pb.Vv, b, h, pb.D, pb.Dv, kv_len);
  const int64_t i0 = qb * kBQ, nq = std::min(kBQ, pb.Lq - i0), npairs = (nq + 31) / 32;
  std::memset(w.Q.data(), 0, static_cast<size_t>(kBQ * w.Dp) * 2);
  for (int64_t r = 0; r < nq; ++r) load_bf16(pb.Qv.row(b, i0 + r, h), pb.Qv.sd, pb.D, w.Q.data() + r * w.Dp);
  std::memset(w.O.data(), 0, static_cast<size_t>(kBQ * w.Dvp) * 4);
  for (RowState& st : w.rows) {
    std::fill(std::begin(st.m), std::end(st.m), kMaskedLogit);
    std::fill(std::begin(st.l), std::end(st.l), 0.0f);
  }
  const bool fast_ok = pb.scale > 0 && !pb.bias;  // unmasked blocks: max of raw scores, logits by one FMA
  const float c = pb.scale * kLog2e;
  const int64_t item_end = pb.causal ? std::min(kv_len, i0 + nq) : kv_len;
  // Keys row pair rp sees (its last row; causal rows see fewer).
  const auto pair_end = [&](int64_t rp) { return pb.causal ? std::min(kv_len, i0 + rp * 32 + 32) : kv_len; };
  for (int64_t j0 = 0; j0 < item_end; j0 += kBK) {
    const int64_t kblock = j0 / kBK;
    int64_t rp0 = 0;
    while (j0 >= pair_end(rp0)) ++rp0;  // the pairs that see none of this block come first
    const int64_t block_keys = std::min(kBK, pair_end(npairs - 1) - j0);  // keys any row sees
    qk_tiles(w, rp0, npairs, kblock, (block_keys + 31) / 32, w.S.data());
    for (int64_t rp = rp0; rp < npairs; ++rp) {
      const int64_t nk = std::min(kBK, pair_end(rp) - j0);
      // The pair's first row sees every key of an unmasked block.
      const bool unmasked = fast_ok && nk == kBK && (!pb.causal || j0 + kBK <= i0 + rp * 32 + 1);
      for (int64_t rb = 2 * rp; rb < 2 * rp + 2; ++rb) {
        float* S = w.S.data() + rb * 16 * kBK;
        if (!unmasked) masked_logits16(S, pb, b, h, i0 + rb * 16, j0, kv_len);
        const __mmask16 changed = softmax_rows16(S, unmasked ? c : 1.0f, w.rows[rb], w.P.data() + rb * 16 * kBK, w.corr + rb * 16);
        rescale_rows16(w.O.data() + rb * 16 * w.Dvp, w.Dvp, changed, w.corr + rb * 16);
      }
    }
    pv_tiles(w, rp0, npairs, kblock, (block_keys + 31) / 32, w.P.data());
  }
  for (int64_t r = 0; r < nq; ++r) {
    const float inv = inv_row_sum(w.rows[r / 16].l[r % 16]);  // no visible key: zeros; a NaN row: NaN
    float* orow = w.O.data() + r * w.Dvp;
    char* dst = pb.out + (((b * pb.Lq + i0 + r) * pb.H + h) * pb.Dv) * pb.oes;
    const __m512 f = _mm512_set1_ps(inv);
    if (pb.out_dtype == DType::BF16) {
      for (int64_t c0 = 0; c0 < pb.Dv; c0 += 16) {
        const __mmask16 k = static_cast<__mmask16>((1u << std::min<int64_t>(16, pb.Dv - c0)) - 1u);
        const __m256i v = (__m256i)_mm512_cvtneps_pbh(_mm512_mul_ps(_mm512_load_ps(orow + c0), f));
        _mm256_mask_storeu_epi16(dst + c0 * 2, k, v);
      }
    } else {
      for (int64_t c0 = 0; c0 < pb.Dv; c0 += 16) _mm512_store_ps(orow + c0, _mm512_mul_ps(_mm512_load_ps(orow + c0), f));
      store_row(orow, pb.Dv, dst, pb.out_dtype);
    }
  }
}

}  // namespace

void attention_bf16_amx(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt,
                        Tensor& out) {
  Problem pb{};
  pb.B = q.size(0);
  pb.Lq = q.size(1);
  pb.H = q.size(2);
  pb.D = q.size(3);
  pb.Lk = k.size(1);
  pb.Dv = v.size(3);
  pb.Qv = view_of(q);
  pb.Kv = view_of(k);
  pb.Vv = view_of(v);
  pb.scale = static_cast<float>(opt.scale);
  pb.causal = opt.causal;
  pb.kv_lens = &opt.kv_lens;
  Staged<float> bias_staged;
  if (opt.bias) {
    bias_staged = stage_f32(*opt.bias);
    pb.bias = bias_staged.ptr;
    pb.bsb = opt.bias->size(0) == 1 ? 0 : opt.bias->size(1) * pb.Lq * pb.Lk;
    pb.bsh = opt.bias->size(1) == 1 ? 0 : pb.Lq * pb.Lk;
  }
  pb.out = byte_ptr_mut(out);
  pb.out_dtype = out.dtype();
  pb.oes = static_cast<int64_t>(dtype_size(out.dtype()));

  const int64_t qblocks = (pb.Lq + kBQ - 1) / kBQ, items = pb.B * pb.H * qblocks;
  // Scratch per thread, allocated here so that a failed allocation throws to the caller.
  const int64_t threads = std::max<int64_t>(1, std::min<int64_t>(omp_get_max_threads(), items));
  std::vector<std::unique_ptr<Worker>> workers;
  for (int64_t t = 0; t < threads; ++t) workers.push_back(std::make_unique<Worker>(pb.D, pb.Dv, pb.Lk));
#pragma omp parallel num_threads(static_cast<int>(threads))
  {
    // Static contiguous ranges of (batch, head, query block): a thread packs each
    // head it enters once, and the split never changes a row's arithmetic.
    const int64_t nt = omp_get_num_threads(), t = omp_get_thread_num();
    const int64_t begin = items * t / nt, end = items * (t + 1) / nt;
    if (begin < end) {
      Worker& w = *workers[static_cast<size_t>(t)];
      amx::configure_full_tiles();  // a static config: see amx.cpp on GCC 12's LDTILECFG
      for (int64_t it = begin; it < end; ++it) {
        const int64_t bh = it / qblocks;
        run_item(w, pb, bh / pb.H, bh % pb.H, it % qblocks);
      }
      _tile_release();
    }
  }
}

#else  // no AMX in this build

void attention_bf16_amx(const Tensor&, const Tensor&, const Tensor&, const ops::AttentionOptions&, Tensor&) {
  throw Error("attention_bf16_amx: this build has no AMX support");
}

#endif

}  // namespace vidax::cpu::attn
