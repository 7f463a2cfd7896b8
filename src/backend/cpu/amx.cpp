#include "backend/cpu/amx.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#if defined(__AMX_TILE__)
#include <immintrin.h>
#endif

namespace vidax::cpu::amx {

namespace {

bool cpu_reports_amx_bf16() {
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  constexpr unsigned kAmxBf16 = 1u << 22, kAmxTile = 1u << 24;  // CPUID.(7,0):EDX
  return (d & kAmxBf16) && (d & kAmxTile);
}

bool os_grants_tile_data() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

}  // namespace

#if defined(__AMX_BF16__) && defined(__AMX_TILE__)

bool available() {
  static const bool ok = cpu_reports_amx_bf16() && os_grants_tile_data();
  return ok;
}

// GCC 12's _tile_loadconfig passes the config to LDTILECFG as an 8-byte "m"
// operand, so the compiler may drop the stores of a local config's colsb/rows
// as dead (it did: LDTILECFG then read an all-zero config and faulted). A
// static object is in memory in full before any call.
const TileConfig& full_tiles_config() {
  static const TileConfig cfg = [] {
    TileConfig c;
    for (int t = 0; t < 8; ++t) {
      c.colsb[t] = 64;
      c.rows[t] = 16;
    }
    return c;
  }();
  return cfg;
}

void configure_full_tiles() { _tile_loadconfig(&full_tiles_config()); }

void release_tiles() {
  _tile_release();
}

#else  // this build has no AMX intrinsics

bool available() { return false; }
void configure_full_tiles() {}
void release_tiles() {}

#endif

}  // namespace vidax::cpu::amx
