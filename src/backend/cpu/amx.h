// AMX (Advanced Matrix Extensions) plumbing shared by the AMX kernels: the
// runtime check (CPU has AMX-TILE + AMX-BF16 and Linux granted this process the
// tile data state) and the tile configuration used by the GEMM.
#pragma once
#include <cstdint>

namespace vidax::cpu::amx {

// True at the amx tier (cpu_tier.h): this build has the AMX kernels, the CPU reports
// AMX-TILE and AMX-BF16, and arch_prctl(ARCH_REQ_XCOMP_PERM, XFEATURE_XTILEDATA)
// succeeded (Linux refuses tile instructions to a process that did not ask).
// Asked once per process.
bool available();

// The 64-byte block LDTILECFG reads (palette 1).
struct TileConfig {
  uint8_t palette = 1, start_row = 0, reserved[14] = {};
  uint16_t colsb[16] = {};  // bytes per row of tile t
  uint8_t rows[16] = {};    // rows of tile t
};

// Configures tiles 0..7 as 16 rows x 64 bytes (16 x 32 bf16, or 16 x 16 f32)
// on the calling thread. Always loads the configuration: other kernels (the
// attention) configure and release tiles on the same threads.
void configure_full_tiles();

// Releases this thread's tile state (TILERELEASE).
void release_tiles();

}  // namespace vidax::cpu::amx
