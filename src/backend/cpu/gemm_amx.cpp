// AMX bf16 GEMM (see gemm_amx.h for the packed weight layout).
//
// Structure (per thread, per block of mb rows of x; threads split the rows, and
// the columns too when there are fewer row blocks than threads):
//   pack the block's rows into A tiles once     [strip of 32 rows][k chunk][2 tiles]
//   for each panel of nc weight columns:
//     for each k block of kb:                   A block mb x kb (512 KiB-1 MiB) stays in L2
//       for each 32 columns of the panel:       C column block mb x 32 (fp32, 32 KiB)
//         for each k pass of kc:                B piece kc x 32 (16 KiB) stays in L1
//           for each 32-row strip of the block: micro-kernel: 2 x 2 C tiles (32 x 32 fp32),
//                                               2 A + 2 B tile loads per 32 k
//         after the last k block: epilogue of the column block, C + bias rounded
//         once into the output dtype (then GELU or a gated residual when the
//         caller fuses one, gemm_amx.h's Epilogue).
// The weights are the operand streamed from L3 / memory (each weight is read
// once per row block, so 1/mb bytes per flop); x stays in L2 for all columns.
// The earlier order (k pass outside the 32-column loop, a kc x 512 weight panel
// in L2) needed x's block, the panel's weights over all k and C in L2 at once
// (2.8 MB at K = 1536, L2 is 2 MB) and ran 1.2-1.3x slower (docs/dependencies.md).
// Every output element sums its k chunks in the same order whatever the
// blocking of M/N or the thread count; C goes through fp32 memory between k
// passes exactly, so the result depends on neither (tested bit for bit).
//
// Why x is packed rather than tile-loaded in place (stride = row stride): on
// this CPU the in-place loads measured about half the speed (16 rows 3-27 KiB
// apart fall into a few L1 sets), and packing once per row block costs one
// pass over x (< 5% at the DiT's N >= 1536). Packing also absorbs every tail
// (M % 32 rows and K % 32 zero-padded), so the micro-kernel has no edge cases.
// GCC 12 false positive inside the AVX-512 intrinsics (_mm512_undefined_* operands).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#include "backend/cpu/gemm_amx.h"

#include <immintrin.h>
#include <omp.h>

#include <algorithm>
#include <atomic>
#include <cstring>

#include "backend/cpu/amx.h"
#include "backend/cpu/env_switch.h"
#include "backend/cpu/vmath.h"
#include "core/error.h"

namespace vidax::cpu::amx {

namespace {

constexpr int64_t kTile = 16;                  // rows of a tile; f32 columns of a C tile
constexpr int64_t kChunk = 32;                 // bf16 k values per A tile row
constexpr int64_t kBlock = 32;                 // rows / columns of the 2 x 2 micro-kernel
constexpr int64_t kTileElems = kTile * kChunk; // bf16 values per A or B tile (1 KiB)

Blocking g_blocking{256, 1536, 256, 2048};

// Outputs at least this large are written with streaming stores under Auto.
constexpr int64_t kStreamMinBytes = int64_t{8} << 20;

EnvSwitch<StreamStores> g_stream_stores("VIDAX_GEMM_STREAM_STORES", {"auto", "always", "never"});
std::atomic<uint64_t> g_streaming_calls{0};

int64_t round_up(int64_t v, int64_t m) { return (v + m - 1) / m * m; }

}  // namespace

Blocking blocking() { return g_blocking; }

StreamStores stream_stores() { return g_stream_stores.get(); }

void set_stream_stores(StreamStores s) { g_stream_stores.set(s); }

uint64_t streaming_calls() { return g_streaming_calls.load(); }

void set_blocking(const Blocking& b) {
  VIDAX_CHECK(b.mb > 0 && b.nc > 0 && b.kc > 0 && b.kb > 0, "amx::set_blocking: sizes must be positive, got mb="
                                                                 << b.mb << " nc=" << b.nc << " kc=" << b.kc
                                                                 << " kb=" << b.kb);
  const int64_t kc = round_up(b.kc, kChunk);
  g_blocking = {round_up(b.mb, kBlock), round_up(b.nc, kBlock), kc, round_up(b.kb, kc)};
}

PackedWeight pack_weight(const Tensor& w) {
  VIDAX_CHECK(w.dim() == 2 && w.dtype() == DType::BF16,
              "amx::pack_weight: want a 2-D bf16 weight, got " << dtype_name(w.dtype()) << " of rank " << w.dim());
  PackedWeight p;
  p.N = w.size(0);
  p.K = w.size(1);
  p.Np = round_up(std::max<int64_t>(p.N, 1), kBlock);
  p.Kp = round_up(std::max<int64_t>(p.K, 1), kChunk);
  p.data = Buffer::allocate_host(static_cast<size_t>(p.Np * p.Kp) * 2);
  uint16_t* dst = static_cast<uint16_t*>(p.data->data());
  const uint16_t* src = w.data<uint16_t>();
  const int64_t sN = w.strides()[0], sK = w.strides()[1], chunks = p.Kp / kChunk, N = p.N, K = p.K;
  // Threads only pay off for big weights (small ones pack in microseconds).
#pragma omp parallel for schedule(static) if (p.Np * p.Kp >= (int64_t{1} << 20))
  for (int64_t nb = 0; nb < p.Np / kBlock; ++nb)
    for (int64_t kc = 0; kc < chunks; ++kc)
      for (int64_t half = 0; half < 2; ++half) {
        uint16_t* t = dst + ((nb * chunks + kc) * 2 + half) * kTileElems;
        for (int64_t c = 0; c < kTile; ++c) {
          const int64_t n = nb * kBlock + half * kTile + c;
          for (int64_t j = 0; j < kChunk; ++j) {  // j = 2 p + e
            const int64_t k = kc * kChunk + j;
            t[(j / 2) * kChunk + c * 2 + (j & 1)] = (n < N && k < K) ? src[n * sN + k * sK] : uint16_t(0);
          }
        }
      }
  return p;
}

#if defined(__AMX_BF16__) && defined(__AMX_TILE__) && defined(__AVX512BW__)

namespace {

// Packs x rows [r0, r0 + rows) (rows <= 32), k in [k0, k0 + chunks * 32), into
// 32 x 32 blocks of two A tiles: buf[(c * 2 + half) * 512 + r * 32 + j]. Rows
// past `rows` and k past K are zero.
void pack_a_strip(const uint16_t* x, int64_t lda, int64_t rows, int64_t K, int64_t k0, int64_t chunks, uint16_t* buf) {
  for (int64_t c = 0; c < chunks; ++c) {
    const int64_t k = k0 + c * kChunk;
    const int64_t valid = std::clamp<int64_t>(K - k, 0, kChunk);
    const __mmask32 mask = valid == kChunk ? ~__mmask32(0) : ((__mmask32(1) << valid) - 1);
    uint16_t* blk = buf + c * 2 * kTileElems;
    for (int64_t r = 0; r < kBlock; ++r) {
      const __m512i v = r < rows ? _mm512_maskz_loadu_epi16(mask, x + r * lda + k) : _mm512_setzero_si512();
      _mm512_store_si512(blk + r * kChunk, v);
    }
  }
}

// C[32 x 32] (fp32, row stride ldc floats) (+)= A strip x B block over `chunks`
// k chunks; both operands packed: 2 KiB (two tiles) per chunk. Along the way it
// prefetches `pf_lines` cache lines from `pf` into L2, an equal share per chunk.
template <bool kAccumulate>
void micro_2x2(const uint16_t* a, const uint16_t* b, int64_t chunks, float* c, int64_t ldc, const char* pf,
               int64_t pf_lines) {
  const int64_t cs = ldc * 4;
  if constexpr (kAccumulate) {
    _tile_loadd(0, c, cs);
    _tile_loadd(1, c + kTile, cs);
    _tile_loadd(2, c + kTile * ldc, cs);
    _tile_loadd(3, c + kTile * ldc + kTile, cs);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  const int64_t pf_per_chunk = (pf_lines + chunks - 1) / chunks;
  for (int64_t i = 0; i < chunks; ++i) {
    const uint16_t* ai = a + i * 2 * kTileElems;
    const uint16_t* bi = b + i * 2 * kTileElems;
    _tile_loadd(4, ai, 64);
    _tile_loadd(6, bi, 64);
    _tile_dpbf16ps(0, 4, 6);
    for (int64_t l = i * pf_per_chunk; l < std::min(pf_lines, (i + 1) * pf_per_chunk); ++l)
      _mm_prefetch(pf + l * 64, _MM_HINT_T1);
    _tile_loadd(7, bi + kTileElems, 64);
    _tile_dpbf16ps(1, 4, 7);
    _tile_loadd(5, ai + kTileElems, 64);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, cs);
  _tile_stored(1, c + kTile, cs);
  _tile_stored(2, c + kTile * ldc, cs);
  _tile_stored(3, c + kTile * ldc + kTile, cs);
}

struct alignas(64) CacheLine { float f[16]; };

// Scratch that lives as long as the calling thread and only grows (a fresh
// multi-MiB allocation per call would pay its page faults every time).
uint16_t* packed_a_scratch(size_t elems) {
  struct alignas(64) Line { uint16_t v[32]; };
  thread_local std::vector<Line> scratch;
  const size_t lines = (elems + 31) / 32;
  if (scratch.size() < lines) {
    scratch.clear();
    scratch.shrink_to_fit();
    scratch.resize(lines);
  }
  return scratch.data()->v;
}

// bf16 of 16 floats, RNE, every NaN -> 0xffff (as f32_to_bf16 and torch).
__m256i to_bf16_rne(__m512 v) {
  const __m512i u = _mm512_castps_si512(v);
  const __m512i lsb = _mm512_and_si512(_mm512_srli_epi32(u, 16), _mm512_set1_epi32(1));
  __m512i r = _mm512_srli_epi32(_mm512_add_epi32(u, _mm512_add_epi32(lsb, _mm512_set1_epi32(0x7fff))), 16);
  r = _mm512_mask_mov_epi32(r, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), _mm512_set1_epi32(0xffff));
  return _mm512_cvtepi32_epi16(r);
}

// f32 -> bf16 (RNE) -> f32: the value a bf16 store and a reload would give.
__m512 round_bf16_ps(__m512 v) {
  return _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_cvtepu16_epi32(to_bf16_rne(v)), 16));
}

// out rows [0, rows), columns [0, cols) of the block = C + bias, rounded once, then ep (whose
// row index is m0 + r and column index n0 + j; N = out's row length). With `stream`, rows
// whose 32 columns fill whole aligned 64-byte lines of out go out as streaming stores.
void epilogue(const float* C, int64_t ldc, int64_t rows, int64_t cols, const float* bias, void* out, int64_t ldo,
              DType out_dtype, const Epilogue& ep, int64_t m0, int64_t n0, bool stream) {
  constexpr int kRn = _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC;
  const int64_t osz = out_dtype == DType::F32 ? 4 : 2;
  for (int64_t r = 0; r < rows; ++r) {
    const float* cr = C + r * ldc;
    const float* res = ep.residual ? ep.residual + (m0 + r) * ldo + n0 : nullptr;
    const float* gate = ep.gate ? ep.gate + ((m0 + r) / ep.gate_rows) * ldo + n0 : nullptr;
    char* orow = static_cast<char*>(out) + r * ldo * osz;
    // The finished value of columns [j, j + 16) (lanes of m).
    auto value = [&](int64_t j, __mmask16 m) {
      __m512 v = _mm512_maskz_loadu_ps(m, cr + j);
      if (bias) v = _mm512_add_ps(v, _mm512_maskz_loadu_ps(m, bias + j));
      switch (ep.op) {
        case Epilogue::Op::None: break;
        case Epilogue::Op::GeluTanh:
          v = vmath::gelu_tanh_ps(out_dtype == DType::BF16 ? round_bf16_ps(v) : v);
          break;
        case Epilogue::Op::GeluErf:
          v = vmath::gelu_erf_ps(out_dtype == DType::BF16 ? round_bf16_ps(v) : v);
          break;
        case Epilogue::Op::GatedResidual:
          v = _mm512_add_round_ps(_mm512_maskz_loadu_ps(m, res + j),
                                  _mm512_mul_round_ps(_mm512_maskz_loadu_ps(m, gate + j), round_bf16_ps(v), kRn), kRn);
          break;
      }
      return v;
    };
    if (stream && cols == kBlock && reinterpret_cast<uintptr_t>(orow) % 64 == 0) {
      const __m512 lo = value(0, 0xffff), hi = value(16, 0xffff);
      if (out_dtype == DType::F32) {
        _mm512_stream_ps(reinterpret_cast<float*>(orow), lo);
        _mm512_stream_ps(reinterpret_cast<float*>(orow) + 16, hi);
      } else {
        _mm512_stream_si512(reinterpret_cast<__m512i*>(orow),
                            _mm512_inserti64x4(_mm512_castsi256_si512(to_bf16_rne(lo)), to_bf16_rne(hi), 1));
      }
      continue;
    }
    for (int64_t j = 0; j < cols; j += 16) {
      const int64_t n = std::min<int64_t>(16, cols - j);
      const __mmask16 m = n == 16 ? __mmask16(0xffff) : __mmask16((1u << n) - 1);
      const __m512 v = value(j, m);
      if (out_dtype == DType::F32)
        _mm512_mask_storeu_ps(reinterpret_cast<float*>(orow) + j, m, v);
      else
        _mm256_mask_storeu_epi16(reinterpret_cast<uint16_t*>(orow) + j, m, to_bf16_rne(v));
    }
  }
}

}  // namespace

void linear_bf16(int64_t M, const uint16_t* x, int64_t lda, const PackedWeight& w, const float* bias, void* out,
                 DType out_dtype, const Epilogue& ep) {
  VIDAX_CHECK(out_dtype == DType::F32 || out_dtype == DType::BF16,
              "amx::linear_bf16: output dtype must be f32 or bf16, got " << dtype_name(out_dtype));
  VIDAX_CHECK(ep.op != Epilogue::Op::GatedResidual || (out_dtype == DType::F32 && ep.residual && ep.gate &&
                                                       ep.gate_rows > 0),
              "amx::linear_bf16: the gated residual needs f32 output, a residual, a gate and gate_rows > 0");
  if (M <= 0 || w.N == 0) return;
  const Blocking bl = g_blocking;
  const int64_t N = w.N, K = w.K, Kp = w.Kp, chunks_total = Kp / kChunk;
  const int64_t nc = std::min(bl.nc, w.Np), kc = std::min(bl.kc, Kp), kb = std::min(bl.kb, round_up(Kp, kc));
  // One k block: each 32-column block's C is finished before the next starts and
  // one C block is reused. Several: every column block of the panel keeps its C
  // between k blocks.
  const bool one_k_block = kb >= Kp;
  // A parallel region costs more than a small GEMM (~ 1 Mflop) computes.
  const bool parallel = 2.0 * static_cast<double>(M) * static_cast<double>(w.Np) * static_cast<double>(Kp) >= 4e6;
  const int64_t threads = parallel ? omp_get_max_threads() : 1;
  // Row blocks: at most bl.mb rows, as many per thread as possible, evenly sized.
  const int64_t per_thread = (M + threads - 1) / threads;
  const int64_t blocks_per_thread = (per_thread + bl.mb - 1) / bl.mb;
  const int64_t mb = std::min(bl.mb, round_up((per_thread + blocks_per_thread - 1) / blocks_per_thread, kBlock));
  const int64_t m_blocks = (M + mb - 1) / mb;
  // Fewer row blocks than threads (few tokens, e.g. the time embedding): the
  // columns are split too, in whole 32-column blocks.
  const int64_t col_blocks = w.Np / kBlock;
  const int64_t n_parts = m_blocks < threads ? std::min(col_blocks, threads / m_blocks) : 1;
  const int64_t osz = static_cast<int64_t>(dtype_size(out_dtype));
  const uint16_t* B = w.tiles();
  const StreamStores ss = stream_stores();
  const bool stream = ss == StreamStores::Always || (ss == StreamStores::Auto && M * N * osz >= kStreamMinBytes);
  if (stream) g_streaming_calls.fetch_add(1, std::memory_order_relaxed);
  const int64_t c_block = mb * kBlock;  // floats of one C column block (mb x 32, row stride 32)

#pragma omp parallel if (parallel)
  {
    // This thread's row block of x, packed into tiles once and reused by every column panel:
    // strip s (32 rows), chunk c at Ablk + (s * chunks_total + c) * 2 tiles.
    uint16_t* Ablk = packed_a_scratch(static_cast<size_t>(mb * Kp));
    std::vector<CacheLine> Cl(static_cast<size_t>(one_k_block ? c_block : c_block * (nc / kBlock)) / 16);
    float* const Cbuf = Cl.data()->f;  // 64-byte aligned: a C tile row is one cache line
    configure_full_tiles();
#pragma omp for schedule(dynamic, 1)
    for (int64_t u = 0; u < m_blocks * n_parts; ++u) {
      const int64_t ib = u / n_parts, part = u % n_parts;
      const int64_t m0 = ib * mb, mrows = std::min(mb, M - m0);
      const int64_t n_begin = col_blocks * part / n_parts * kBlock, n_end = col_blocks * (part + 1) / n_parts * kBlock;
      for (int64_t s = 0; s < mrows; s += kBlock)
        pack_a_strip(x + (m0 + s) * lda, lda, std::min(kBlock, mrows - s), K, 0, chunks_total,
                     Ablk + (s / kBlock) * chunks_total * 2 * kTileElems);
      for (int64_t n0 = n_begin; n0 < n_end; n0 += nc) {
        const int64_t ncols = std::min(nc, n_end - n0);
        for (int64_t kb0 = 0; kb0 < Kp; kb0 += kb) {  // k in order: C goes through fp32 memory between passes
          const int64_t kb_end = std::min(Kp, kb0 + kb);
          for (int64_t j = 0; j < ncols; j += kBlock) {
            float* c = Cbuf + (one_k_block ? 0 : (j / kBlock) * c_block);
            for (int64_t k0 = kb0; k0 < kb_end; k0 += kc) {
              const int64_t chunks = std::min(kc, kb_end - k0) / kChunk;
              const uint16_t* b = B + (((n0 + j) / kBlock) * chunks_total + k0 / kChunk) * 2 * kTileElems;
              // The weight piece used next (next k pass, else the next 32 columns) is
              // prefetched, a slice per strip, while this one runs; without it the first
              // strip of every piece waits on L3 / memory (10-20% slower in all).
              int64_t next_j = j, next_k = k0 + kc;
              if (next_k >= kb_end) next_j += kBlock, next_k = kb0;
              const char* next = next_j < ncols ? reinterpret_cast<const char*>(
                                                      B + (((n0 + next_j) / kBlock) * chunks_total + next_k / kChunk) *
                                                              2 * kTileElems)
                                                : nullptr;
              const int64_t next_lines = next ? (std::min(kc, kb_end - next_k) / kChunk) * 2 * kTileElems * 2 / 64 : 0;
              const int64_t strips = (mrows + kBlock - 1) / kBlock;
              for (int64_t s = 0; s < mrows; s += kBlock) {
                const int64_t l0 = next_lines * (s / kBlock) / strips, l1 = next_lines * (s / kBlock + 1) / strips;
                const char* pf = next ? next + l0 * 64 : nullptr;
                const uint16_t* a = Ablk + ((s / kBlock) * chunks_total + k0 / kChunk) * 2 * kTileElems;
                if (k0 == 0) micro_2x2<false>(a, b, chunks, c + s * kBlock, kBlock, pf, l1 - l0);
                else micro_2x2<true>(a, b, chunks, c + s * kBlock, kBlock, pf, l1 - l0);
              }
            }
            if (kb_end == Kp) {
              const int64_t col = n0 + j;
              epilogue(c, kBlock, mrows, std::min(kBlock, N - col), bias ? bias + col : nullptr,
                       static_cast<char*>(out) + (m0 * N + col) * osz, N, out_dtype, ep, m0, col, stream);
            }
          }
        }
      }
    }
    if (stream) _mm_sfence();  // this thread's streaming stores are visible before the region's barrier
    release_tiles();
  }
}

#else  // no AMX in this build

void linear_bf16(int64_t, const uint16_t*, int64_t, const PackedWeight&, const float*, void*, DType, const Epilogue&) {
  throw Error("amx::linear_bf16: this build has no AMX support (compile with -march=native on an AMX CPU)");
}

#endif

}  // namespace vidax::cpu::amx
