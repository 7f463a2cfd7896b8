// The machine's arithmetic peak for a compute dtype at the CPU tier in use, measured with
// register-only micro-kernels (no memory traffic: independent accumulator chains, enough of
// them to cover the FMA latency on two pipes):
//   fp32: FMA on 8 lanes (avx2) or 16 lanes (avx512 and up), 2 FLOP per lane;
//   bf16: vdpbf16ps (avx512_bf16: 16 lanes x 2 products + 2 adds = 64 FLOP) or AMX
//         tdpbf16ps (amx: 16 x 16 x 32 x 2 = 16384 FLOP per tile product);
//   bf16 below avx512_bf16 computes in fp32 (gemm.cpp), so its peak is the fp32 one.
// `vidax bench` relates the model's achieved FLOPs to this (MFU), and the engine's own GEMM rate
// to it too (a GEMM above this "peak" would mean the micro-kernel is wrong).
#pragma once
#include <cstdint>
#include <string>

#include "core/dtype.h"

namespace vidax::cpu {

struct MachinePeak {
  double flops_per_cpu_second = 0;  // one thread's rate on its own CPU time (best of the threads' runs)
  double flops_per_second = 0;      // flops_per_cpu_second x threads: the peak of `threads` cores
  int threads = 1;
  std::string method;               // e.g. "avx512 fp32 FMA, 12 zmm chains, 16 lanes x 2 FLOP"
};

// Runs the micro-kernel of `compute` (F32 or BF16) on `threads` OpenMP threads, best of `reps`.
MachinePeak measure_machine_peak(DType compute, int threads, int reps = 3);

// One thread's micro-kernels, each in the translation unit of its tier (peak*.cpp): run
// `iters` iterations and return the FLOPs done.
namespace peak {
double fp32_avx2(int64_t iters);
double fp32_avx512(int64_t iters);
double bf16_avx512(int64_t iters);
double bf16_amx(int64_t iters);
}  // namespace peak

}  // namespace vidax::cpu
