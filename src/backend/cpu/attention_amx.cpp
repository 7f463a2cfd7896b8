// Flash attention for bf16 q/k/v on AMX tiles (TDPBF16PS: bf16 products,
// fp32 accumulation). Same algorithm and masking as attention.cpp; only the two
// tile products run on AMX:
//   S[64 x 64]  = Q[64 x D] K^T        (A = Q rows, B = K packed in pairs of d)
//   O[64 x Dv] += P[64 x 64] V[64 x Dv] (A = P rounded to bf16, B = V packed in pairs of keys)
// Every AMX tile here is 16 rows x 64 bytes (16 x 32 bf16 or 16 x 16 f32).
// D and Dv are zero-padded to multiples of 32 and 16, keys to whole tiles.
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"  // GCC 12 false positive in _mm512_reduce_*
#include <sys/syscall.h>
#include <unistd.h>

#include <atomic>
#include <cstring>

#include "backend/cpu/attention_tiles.h"
#include "backend/cpu/kernels.h"

namespace vidax::cpu::attn {

#if defined(__AMX_BF16__) && defined(__AMX_TILE__) && defined(__AVX512BF16__)

namespace {

struct TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};
  uint8_t rows[16] = {};
};

void load_tile_config() {
  TileConfig cfg;
  for (int t = 0; t < 8; ++t) {
    cfg.colsb[t] = 64;
    cfg.rows[t] = 16;
  }
  _tile_loadconfig(&cfg);
}

constexpr int64_t kDChunk = 32;  // bf16 values of d per tile row
constexpr int64_t kVCols = 16;   // f32 output columns per tile

// Converts n values of any float dtype (stride in elements) to bf16 (RNE).
void load_bf16(const char* src, DType dt, int64_t stride, int64_t n, uint16_t* dst) {
  if (dt == DType::BF16 && stride == 1) {
    std::memcpy(dst, src, static_cast<size_t>(n) * 2);
    return;
  }
  const uint16_t* s = reinterpret_cast<const uint16_t*>(src);
  for (int64_t i = 0; i < n; ++i) dst[i] = s[i * stride];  // BF16 only reaches here (strided)
}

}  // namespace

namespace {
std::atomic<bool> g_amx_enabled{true};
}  // namespace

void set_amx_enabled(bool enabled) { g_amx_enabled = enabled; }

bool amx_available() {
  if (!g_amx_enabled) return false;
  static const bool ok = [] {
    constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
    if (!__builtin_cpu_supports("avx512bf16")) return false;
    return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
  }();
  return ok;
}

void attention_bf16_amx(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt,
                        Tensor& out) {
  const int64_t B = q.size(0), Lq = q.size(1), H = q.size(2), D = q.size(3), Lk = k.size(1), Dv = v.size(3);
  const View Qv = view_of(q), Kv = view_of(k), Vv = view_of(v);
  const float scale = static_cast<float>(opt.scale);
  const int64_t Dp = (D + kDChunk - 1) / kDChunk * kDChunk, dchunks = Dp / kDChunk;
  const int64_t Dvp = (Dv + kVCols - 1) / kVCols * kVCols, vchunks = Dvp / kVCols;
  const int64_t ktiles = (Lk + kK - 1) / kK, qtiles = (Lq + kQ - 1) / kQ;

  Staged<float> bias_staged;
  const float* bias = nullptr;
  int64_t bsb = 0, bsh = 0;
  if (opt.bias) {
    bias_staged = stage_f32(*opt.bias);
    bias = bias_staged.ptr;
    bsb = opt.bias->size(0) == 1 ? 0 : opt.bias->size(1) * Lq * Lk;
    bsh = opt.bias->size(1) == 1 ? 0 : Lq * Lk;
  }

  // Packed K: [ktile][dchunk][key block of 16][pair p of d (16)][key (16)][2] -> one 1 KiB B tile each.
  // Packed V: [ktile][vchunk][key half (2 x 32 keys)][key pair (16)][col (16)][2] -> one 1 KiB B tile each.
  constexpr int64_t kTileElems = 16 * 32;
  std::vector<uint16_t> Kp(static_cast<size_t>(ktiles * dchunks * 4 * kTileElems));
  std::vector<uint16_t> Vp(static_cast<size_t>(ktiles * vchunks * 2 * kTileElems));
  const int64_t oes = static_cast<int64_t>(dtype_size(out.dtype()));
  char* ob = byte_ptr_mut(out);

  for (int64_t b = 0; b < B; ++b) {
    const int64_t kv_len = opt.kv_lens.empty() ? Lk : opt.kv_lens[static_cast<size_t>(b)];
    for (int64_t h = 0; h < H; ++h) {
#pragma omp parallel
      {
        std::vector<uint16_t> krow(static_cast<size_t>(Dp)), vrow(static_cast<size_t>(Dvp));
#pragma omp for schedule(static)
        for (int64_t t = 0; t < ktiles; ++t) {
          uint16_t* kt = Kp.data() + t * dchunks * 4 * kTileElems;
          uint16_t* vt = Vp.data() + t * vchunks * 2 * kTileElems;
          for (int64_t jj = 0; jj < kK; ++jj) {
            const int64_t j = t * kK + jj;
            std::fill(krow.begin(), krow.end(), uint16_t(0));
            std::fill(vrow.begin(), vrow.end(), uint16_t(0));
            if (j < Lk) {
              load_bf16(Kv.row(b, j, h), Kv.dtype, Kv.sd, D, krow.data());
              load_bf16(Vv.row(b, j, h), Vv.dtype, Vv.sd, Dv, vrow.data());
            }
            // K: 32-bit pairs of d go to row p of the (dchunk, key block) tile, column kc.
            const int64_t kb = jj / 16, kc = jj % 16;
            const uint32_t* k32 = reinterpret_cast<const uint32_t*>(krow.data());
            uint32_t* kt32 = reinterpret_cast<uint32_t*>(kt);
            for (int64_t dc = 0; dc < dchunks; ++dc)
              for (int64_t p = 0; p < 16; ++p) kt32[((dc * 4 + kb) * 16 + p) * 16 + kc] = k32[dc * 16 + p];
            // V: key jj is half (jj/32), pair ((jj%32)/2), element (jj&1) of column cc.
            const int64_t half = jj / 32, pair = (jj % 32) / 2, e = jj & 1;
            for (int64_t vc = 0; vc < vchunks; ++vc) {
              uint16_t* dst = vt + ((vc * 2 + half) * 16 + pair) * 32 + e;
              const uint16_t* src = vrow.data() + vc * kVCols;
              for (int64_t cc = 0; cc < kVCols; ++cc) dst[cc * 2] = src[cc];
            }
          }
        }

        load_tile_config();
        std::vector<uint16_t> Qb(static_cast<size_t>(kQ * Dp)), Pb(static_cast<size_t>(kQ * kK));
        std::vector<float> S(static_cast<size_t>(kQ * kK)), O(static_cast<size_t>(kQ * Dvp)), m(kQ), l(kQ);
#pragma omp for schedule(dynamic, 1)
        for (int64_t qt = 0; qt < qtiles; ++qt) {
          const int64_t i0 = qt * kQ, nq = std::min(kQ, Lq - i0);
          std::fill(Qb.begin(), Qb.end(), uint16_t(0));
          for (int64_t r = 0; r < nq; ++r) load_bf16(Qv.row(b, i0 + r, h), Qv.dtype, Qv.sd, D, Qb.data() + r * Dp);
          std::fill(O.begin(), O.end(), 0.0f);
          std::fill(m.begin(), m.end(), kNegInf);
          std::fill(l.begin(), l.end(), 0.0f);
          const int64_t tile_end = opt.causal ? std::min(kv_len, i0 + nq) : kv_len;
          for (int64_t j0 = 0; j0 < tile_end; j0 += kK) {
            const int64_t nk = std::min(kK, tile_end - j0);
            const uint16_t* kt = Kp.data() + (j0 / kK) * dchunks * 4 * kTileElems;
            // S = Q K^T: 2 x 2 blocks of 16 x 16 at a time (tmm0-3), A in tmm4/5, B in tmm6/7.
            for (int64_t rb = 0; rb < 4; rb += 2)
              for (int64_t kb = 0; kb < 4; kb += 2) {
                _tile_zero(0);
                _tile_zero(1);
                _tile_zero(2);
                _tile_zero(3);
                for (int64_t dc = 0; dc < dchunks; ++dc) {
                  _tile_loadd(4, Qb.data() + rb * 16 * Dp + dc * kDChunk, Dp * 2);
                  _tile_loadd(5, Qb.data() + (rb + 1) * 16 * Dp + dc * kDChunk, Dp * 2);
                  _tile_loadd(6, kt + (dc * 4 + kb) * kTileElems, 64);
                  _tile_loadd(7, kt + (dc * 4 + kb + 1) * kTileElems, 64);
                  _tile_dpbf16ps(0, 4, 6);
                  _tile_dpbf16ps(1, 4, 7);
                  _tile_dpbf16ps(2, 5, 6);
                  _tile_dpbf16ps(3, 5, 7);
                }
                _tile_stored(0, S.data() + rb * 16 * kK + kb * 16, kK * 4);
                _tile_stored(1, S.data() + rb * 16 * kK + (kb + 1) * 16, kK * 4);
                _tile_stored(2, S.data() + (rb + 1) * 16 * kK + kb * 16, kK * 4);
                _tile_stored(3, S.data() + (rb + 1) * 16 * kK + (kb + 1) * 16, kK * 4);
              }
            // Online softmax per row; P rounded to bf16; rescale the row's output.
            for (int64_t r = 0; r < kQ; ++r) {
              float* s = S.data() + r * kK;
              uint16_t* pb = Pb.data() + r * kK;
              if (r >= nq) {  // padding rows: P = 0
                std::fill(pb, pb + kK, uint16_t(0));
                continue;
              }
              const int64_t i = i0 + r;
              const int64_t visible = opt.causal ? std::clamp<int64_t>(i + 1 - j0, 0, nk) : nk;
              const float corr = softmax_row_fused(s, visible, scale, bias ? bias + b * bsb + h * bsh + i * Lk + j0 : nullptr,
                                                   m[static_cast<size_t>(r)], l[static_cast<size_t>(r)], nullptr, pb);
              if (corr != 1.0f) {
                float* orow = O.data() + r * Dvp;
                const __m512 cr = _mm512_set1_ps(corr);
                for (int64_t c = 0; c < Dvp; c += 16) _mm512_storeu_ps(orow + c, _mm512_mul_ps(_mm512_loadu_ps(orow + c), cr));
              }
            }
            // O += P V: per 16-row block, 4 column tiles at a time (tmm0-3), A in tmm4, B in tmm6/7.
            const uint16_t* vt = Vp.data() + (j0 / kK) * vchunks * 2 * kTileElems;
            const int64_t halves = nk > 32 ? 2 : 1;  // keys beyond nk have P = 0 (and zero V)
            for (int64_t rb = 0; rb < (nq + 15) / 16; ++rb)
              for (int64_t vc0 = 0; vc0 < vchunks; vc0 += 4) {
                const int64_t nv = std::min<int64_t>(4, vchunks - vc0);
                float* o = O.data() + rb * 16 * Dvp + vc0 * kVCols;
                if (nv > 0) _tile_loadd(0, o, Dvp * 4);
                if (nv > 1) _tile_loadd(1, o + 16, Dvp * 4);
                if (nv > 2) _tile_loadd(2, o + 32, Dvp * 4);
                if (nv > 3) _tile_loadd(3, o + 48, Dvp * 4);
                for (int64_t hf = 0; hf < halves; ++hf) {
                  _tile_loadd(4, Pb.data() + rb * 16 * kK + hf * 32, kK * 2);
                  const uint16_t* vb = vt + ((vc0 * 2) + hf) * kTileElems;
                  // column tile vc0 + c lives at ((vc0 + c) * 2 + hf) * kTileElems
                  if (nv > 0) { _tile_loadd(6, vb, 64); _tile_dpbf16ps(0, 4, 6); }
                  if (nv > 1) { _tile_loadd(7, vb + 2 * kTileElems, 64); _tile_dpbf16ps(1, 4, 7); }
                  if (nv > 2) { _tile_loadd(6, vb + 4 * kTileElems, 64); _tile_dpbf16ps(2, 4, 6); }
                  if (nv > 3) { _tile_loadd(7, vb + 6 * kTileElems, 64); _tile_dpbf16ps(3, 4, 7); }
                }
                if (nv > 0) _tile_stored(0, o, Dvp * 4);
                if (nv > 1) _tile_stored(1, o + 16, Dvp * 4);
                if (nv > 2) _tile_stored(2, o + 32, Dvp * 4);
                if (nv > 3) _tile_stored(3, o + 48, Dvp * 4);
              }
          }
          for (int64_t r = 0; r < nq; ++r) {
            const float lr = l[static_cast<size_t>(r)], inv = lr > 0.0f ? 1.0f / lr : 0.0f;
            float* orow = O.data() + r * Dvp;
            for (int64_t c = 0; c < Dv; ++c) orow[c] *= inv;
            store_row(orow, Dv, ob + (((b * Lq + i0 + r) * H + h) * Dv) * oes, out.dtype());
          }
        }
        _tile_release();
      }
    }
  }
}

#else  // no AMX in this build

void set_amx_enabled(bool) {}
bool amx_available() { return false; }
void attention_bf16_amx(const Tensor&, const Tensor&, const Tensor&, const ops::AttentionOptions&, Tensor&) {
  throw Error("attention_bf16_amx: this build has no AMX support");
}

#endif

}  // namespace vidax::cpu::attn
