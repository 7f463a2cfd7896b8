// The avx512 tier's copy of backend/cpu/attention.cpp: the same source compiled with
// -mavx512f -mavx512bw -mavx512dq -mavx512vl (src/CMakeLists.txt), so that its
// AVX-512 paths are built, in namespace tier_avx512 (isa.h, kernel_tiers.h).
#define VIDAX_KERNEL_NS tier_avx512
#include "backend/cpu/attention.cpp"
