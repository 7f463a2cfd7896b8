// CPU GEMM entry points shared by the kernels (linear, matmul, conv, attention
// tiles). Implemented with oneDNN when the build has it (VIDAX_HAVE_DNNL; see
// docs/dependencies.md for the measurements behind that choice), else OpenBLAS.
#pragma once
#include <cstdint>
#include <string>

namespace vidax::cpu {

// Row-major C[M, N] = A[M, K] * op(B) (+ C when accumulate), f32, fp32 accumulation.
// op(B) = B^T with B [N, K] (ldb >= K) when b_transposed, else B [K, N] (ldb >= N).
void sgemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
           bool b_transposed, float* C, int64_t ldc, bool accumulate = false);

// The library that runs GEMMs in this build ("onednn 2.6.3" / "openblas").
std::string gemm_library();

// Drops every cached packed weight (e.g. after weights were changed in place).
// The cache also drops a pack on its own when the weight's buffer is freed or
// when a sample of the weight's bytes no longer matches.
void clear_weight_pack_cache();
size_t weight_pack_cache_size();  // number of packed weights held

}  // namespace vidax::cpu
