// The amx tier's bf16 micro-kernel (peak.h): TDPBF16PS on 16 x 64-byte tiles, four
// independent accumulator tiles (C0..C3 += A0/A1 x B0/B1), operands zero (the values do not
// change the rate). Compiled with AMX flags and called only at the amx tier (src/CMakeLists.txt).
#include <immintrin.h>

#include "backend/cpu/amx.h"
#include "backend/cpu/peak.h"

namespace vidax::cpu::peak {

double bf16_amx(int64_t iters) {
  amx::configure_full_tiles();
  _tile_zero(0);
  _tile_zero(1);
  _tile_zero(2);
  _tile_zero(3);
  _tile_zero(4);
  _tile_zero(5);
  _tile_zero(6);
  _tile_zero(7);
  for (int64_t i = 0; i < iters; ++i) {
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  alignas(64) float c[16 * 16];
  _tile_stored(0, c, 64);
  volatile float sink = c[0];
  (void)sink;
  amx::release_tiles();
  return static_cast<double>(iters) * 4 * 16 * 16 * 32 * 2;
}

}  // namespace vidax::cpu::peak
