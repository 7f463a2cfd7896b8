// Names that keep code compiled with different instruction-set flags apart at link time.
//
// The kernels of each CPU tier are compiled in their own translation units with their own
// flags (docs/cpu.md). An inline function or template of a header used by several of them
// would otherwise be one symbol with several bodies, and the linker keeps any one: AVX-512
// code could then run on an AVX2-only CPU. So:
//  - VIDAX_ISA_NS: an inline namespace named after the flags of the translation unit, for the
//    inline helpers of headers (common.h, attention_tiles.h, vmath.h);
//  - VIDAX_KERNEL_NS: the namespace of one tier's copy of a kernel file compiled once per
//    tier (elementwise, norms, norm_silu, attention): tier_avx2 by default, and the wrapper
//    files under avx512/ define it as tier_avx512 before including the kernel file.
#pragma once

#if defined(__AMX_TILE__)
#define VIDAX_ISA_NS isa_amx
#elif defined(__AVX512BF16__)
#define VIDAX_ISA_NS isa_avx512bf16
#elif defined(__AVX512F__)
#define VIDAX_ISA_NS isa_avx512
#else
#define VIDAX_ISA_NS isa_base
#endif

#ifndef VIDAX_KERNEL_NS
#define VIDAX_KERNEL_NS tier_avx2
#endif
