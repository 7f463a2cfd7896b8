// Linked into the test executables that ctest also runs once per CPU tier
// (vidax_add_tier_tests in tests/CMakeLists.txt, docs/cpu.md). With VIDAX_CPU_TIER above
// this CPU's tier the engine would refuse to start; here the executable exits 77 before
// any test runs instead, which ctest reports as skipped (SKIP_RETURN_CODE), with the reason.
#include <cstdio>
#include <cstdlib>

#include "backend/cpu/cpu_tier.h"

namespace {

const bool g_tier_checked = [] {
  const char* env = std::getenv("VIDAX_CPU_TIER");
  if (!env || !*env) return true;
  const auto want = vidax::cpu::parse_cpu_tier(env);
  if (!want) {
    std::fprintf(stderr, "VIDAX_CPU_TIER=%s is not a tier: avx2 | avx512 | avx512_bf16 | amx\n", env);
    std::exit(2);
  }
  const vidax::cpu::CpuTier host = vidax::cpu::host_cpu_tier();
  if (static_cast<int>(*want) > static_cast<int>(host)) {
    std::fprintf(stderr, "skipped: VIDAX_CPU_TIER=%s is above this CPU's tier %s\n", env,
                 vidax::cpu::cpu_tier_name(host));
    std::exit(77);
  }
  std::fprintf(stderr, "%s\n", vidax::cpu::cpu_tier_report().c_str());
  return true;
}();

}  // namespace
