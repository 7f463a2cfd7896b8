// CPU GEMM entry points shared by the kernels (linear, matmul, conv, attention
// tiles). Implemented with oneDNN when the build has it (VIDAX_HAVE_DNNL; see
// docs/dependencies.md for the measurements behind that choice), else OpenBLAS;
// bf16 linear runs our own AMX kernel (gemm_amx.h) when the CPU has AMX.
#pragma once
#include <cstdint>
#include <string>

namespace vidax::cpu {

// Row-major C[M, N] = A[M, K] * op(B) (+ C when accumulate), f32, fp32 accumulation.
// op(B) = B^T with B [N, K] (ldb >= K) when b_transposed, else B [K, N] (ldb >= N).
void sgemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb,
           bool b_transposed, float* C, int64_t ldc, bool accumulate = false);

// The library that runs GEMMs in this build and on this CPU
// ("vidax-amx (bf16 linear) + onednn 2.6.3" / "onednn 2.6.3" / "openblas").
std::string gemm_library();

// Which kernel runs bf16 x bf16 linear when the CPU has AMX (oneDNN builds):
// BySize (default): ours when K or N >= 1024, oneDNN below (by measurement,
// see gemm.cpp); Always / Never: ours / oneDNN for every shape. The initial
// policy comes from VIDAX_AMX_GEMM=bysize|always|never (A/B runs without a rebuild).
enum class AmxGemmPolicy { BySize, Always, Never };
void set_amx_gemm_policy(AmxGemmPolicy policy);
// Number of linear calls the AMX kernel has run in this process (tests), and how
// many of them applied a fused GELU or gated residual in their output stage.
uint64_t amx_gemm_calls();
uint64_t amx_fused_epilogue_calls();
// Tests and benchmarks: true = Always, false = Never. amx_gemm_active(): the
// AMX kernel can run now (policy not Never, CPU has AMX, Linux granted it).
void set_amx_gemm_enabled(bool enabled);
bool amx_gemm_active();

// Drops every cached packed weight (e.g. after weights were changed in place).
// The cache also drops a pack on its own when the weight's buffer is freed or
// when a sample of the weight's bytes no longer matches.
void clear_weight_pack_cache();
size_t weight_pack_cache_size();  // number of packed weights held

}  // namespace vidax::cpu
