#include "backend/cpu/amx.h"

#if defined(__AMX_TILE__)
#include <immintrin.h>
#endif

namespace vidax::cpu::amx {

#if defined(__AMX_BF16__) && defined(__AMX_TILE__)

// available() is in kernel_dispatch.cpp (baseline code; the detection is cpu_tier.cpp's):
// this file is compiled with AMX flags and runs only at the amx tier.

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

void configure_full_tiles() {}
void release_tiles() {}

#endif

}  // namespace vidax::cpu::amx
