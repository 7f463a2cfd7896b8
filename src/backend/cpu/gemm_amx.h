// bf16 GEMM on AMX tiles for linear (y = x W^T + b): bf16 products, fp32
// accumulation (TDPBF16PS), fp32 bias, one RNE rounding to the output dtype.
// Callers check amx::available() first.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "core/tensor.h"

namespace vidax::cpu::amx {

// A weight W [N, K] (bf16) packed into AMX B tiles, once per weight.
//
// Layout: K is zero-padded to Kp (a multiple of 32), N to Np (a multiple of 32).
// The columns are cut into 32-column blocks; within a block the k range is cut
// into chunks of 32, and each (block, chunk) is 2 KiB holding two B tiles
// (columns 0-15, then 16-31), each 16 rows x 64 bytes in the VNNI pair layout
// TDPBF16PS reads:
//   data[((nb * Kp/32 + kc) * 2 + half) * 512 + p * 32 + c * 2 + e]
//     = W[nb * 32 + half * 16 + c][kc * 32 + 2 * p + e]      (0 past N or K)
// so one micro-kernel call streams one contiguous run of memory along K.
struct PackedWeight {
  int64_t N = 0, K = 0, Np = 0, Kp = 0;
  std::shared_ptr<Buffer> data;  // 64-byte aligned, Np * Kp bf16
  const uint16_t* tiles() const { return static_cast<const uint16_t*>(data->data()); }
};

// Packs w [N, K] (bf16, any strides).
PackedWeight pack_weight(const Tensor& w);

// What the kernel applies to each product y[m, n] = round(sum_k x W + bias) as it
// writes it (ops::linear_gelu, ops::linear_gated_residual), with the values of the
// unfused ops: y is rounded first, then
//   GeluTanh / GeluErf: out = round(gelu(y)) (y and out in out_dtype);
//   GatedResidual: out[m, n] = residual[m * N + n] + gate[(m / gate_rows) * N + n] * y[m, n],
//     y rounded to bf16 (the plain linear's output dtype), the product and the sum
//     rounded to f32 separately (no FMA); out_dtype must be F32.
struct Epilogue {
  enum class Op { None, GeluTanh, GeluErf, GatedResidual };
  Op op = Op::None;
  const float* residual = nullptr;  // [M, N]
  const float* gate = nullptr;      // [M / gate_rows, N]
  int64_t gate_rows = 1;
};

// out[m, n] = round(sum_k x[m, k] W[n, k] + bias[n]) for m < M, n < N, then `ep`.
// x: M rows of K bf16 values with row stride lda (elements, unit column stride).
// bias: N floats or null. out: M x N contiguous, F32 or BF16.
// Threads split M and N only (never K): results are bit-identical for any
// thread count.
void linear_bf16(int64_t M, const uint16_t* x, int64_t lda, const PackedWeight& w, const float* bias, void* out,
                 DType out_dtype, const Epilogue& ep = {});

// Cache blocking: mb = most rows of x per block (a thread packs its block once;
// blocks are evened out over the threads), nc = weight columns per panel,
// kc = k per pass (a kc x 32 weight piece stays in L1 while every 32-row strip
// of the block uses it), kb = k per block of x held in L2 (mb x kb bf16; a
// multiple of kc). Multiples of 32; set_blocking rounds up. The result does not
// depend on them (only speed does). Exposed for tuning and tests.
struct Blocking {
  int64_t mb = 0, nc = 0, kc = 0, kb = 0;
};
Blocking blocking();
void set_blocking(const Blocking& b);

// How the output stage writes out. Streaming (non-temporal) stores send whole
// 64-byte lines to memory without first reading them into the cache; ordinary
// stores to an output far larger than the caches miss on every line, and those
// misses stall the tile products (docs/dependencies.md). Auto streams when out
// is at least 8 MiB. Only speed depends on it, never a value.
// The initial policy comes from VIDAX_GEMM_STREAM_STORES=auto|always|never.
enum class StreamStores { Auto, Always, Never };
StreamStores stream_stores();
void set_stream_stores(StreamStores s);
// Calls of linear_bf16 that chose streaming stores (for tests; within such a
// call the rows whose 32 columns fill whole aligned lines use them).
uint64_t streaming_calls();

}  // namespace vidax::cpu::amx
