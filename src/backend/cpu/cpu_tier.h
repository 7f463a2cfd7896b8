// The CPU tier this process runs its kernels at, chosen once at start-up from
// cpuid and what the OS enabled (XCR0; for AMX, Linux's arch_prctl permission),
// optionally capped by VIDAX_CPU_TIER for testing a lower tier's kernels on a
// higher machine. docs/cpu.md has the tiers, the dispatch design and the flags
// each tier's translation units are compiled with.
//
// Tiers, each including the ones below it:
//   avx2         AVX2 + FMA (x86-64-v3): the generic code's own baseline;
//   avx512       AVX-512 F/BW/DQ/VL: our AVX-512 kernels (src/backend/cpu/avx512/);
//   avx512_bf16  + AVX512-BF16: bf16 arithmetic (oneDNN's bf16 matmul, vdpbf16ps);
//   amx          + AMX-TILE/AMX-BF16 granted by the OS: our AMX GEMM and attention.
#pragma once
#include <optional>
#include <string>
#include <string_view>

namespace vidax::cpu {

enum class CpuTier { Avx2 = 0, Avx512 = 1, Avx512Bf16 = 2, Amx = 3 };

const char* cpu_tier_name(CpuTier tier);                     // "avx2", "avx512", "avx512_bf16", "amx"
std::optional<CpuTier> parse_cpu_tier(std::string_view name);  // the names above; nullopt otherwise

// The highest tier this CPU and OS support (no cap applied; never throws). Asks
// Linux for the AMX tile state only when the CPU reports AMX.
CpuTier host_cpu_tier();

// The tier the kernels run at: host_cpu_tier(), or VIDAX_CPU_TIER when that is
// set and not above it. VIDAX_CPU_TIER above the host's tier is refused (an
// Error naming both), not clamped: a test run that asked for AMX kernels must not
// pass on AVX-512 ones. An unknown name is refused the same way. Decided once
// per process, on the first call.
CpuTier cpu_tier();
inline bool cpu_tier_at_least(CpuTier t) { return static_cast<int>(cpu_tier()) >= static_cast<int>(t); }

// The instruction-set features cpuid/XCR0 reported, e.g. "avx2 fma avx512f avx512bw avx512dq
// avx512vl avx512_bf16" (AMX as "amx" when the OS granted it, "amx(no OS permission)" otherwise).
std::string cpu_features();

// One line: the tier in use, what the CPU has, and why this tier (e.g. capped by VIDAX_CPU_TIER).
std::string cpu_tier_report();

// True when the CPU computes bf16 products natively at the tier in use (avx512_bf16 or amx):
// the default compute precision follows it (default_compute_precision()).
bool has_bf16_arithmetic();

// The compute precision a model whose reference runs in bf16 gets when the user did not
// choose one: "bf16" where the CPU has bf16 arithmetic at the tier in use, else "fp32"
// (bf16 on such a CPU runs through emulation, measured 3.2x slower than fp32 on an
// AVX-512 Xeon without bf16). `reason` says which and why, for the run's first lines.
struct PrecisionChoice {
  std::string precision;
  std::string reason;
};
PrecisionChoice default_compute_precision(const std::string& model_default);

}  // namespace vidax::cpu
