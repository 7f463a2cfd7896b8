// The machine's measured arithmetic peak: every OpenMP thread runs long chains
// of independent instructions on registers only (no memory traffic), best of
// `reps` runs, so the figure is what the cores can issue right now (on a
// shared machine, what they can issue under the current load).
#pragma once

namespace vidax::bench {

// Time with this process's CPU time instead of the wall clock (single-threaded runs).
void use_cpu_clock(bool on);

double measured_peak_fp32_gflops(int reps = 5);      // AVX-512 FMA: 16 lanes x 2 flops
double measured_peak_bf16_gflops(int reps = 5);      // AVX512-BF16 VDPBF16PS: 16 lanes x 2 pairs x 2 flops
double measured_peak_amx_bf16_gflops(int reps = 5);  // AMX TDPBF16PS (0 when the OS does not grant AMX)

}  // namespace vidax::bench
