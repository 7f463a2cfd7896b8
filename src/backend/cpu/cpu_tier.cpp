// CPU tier detection (see cpu_tier.h). Compiled for the baseline (x86-64-v3): it runs
// before anything knows which kernels this CPU can execute.
#include "backend/cpu/cpu_tier.h"

#include <cstdlib>
#include <sstream>

#include "core/error.h"

#if defined(__x86_64__)
#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

namespace vidax::cpu {

namespace {

struct Features {
  bool avx2 = false, fma = false, os_avx = false;
  bool avx512f = false, avx512bw = false, avx512dq = false, avx512vl = false, os_avx512 = false;
  bool avx512_bf16 = false;
  bool amx_tile = false, amx_bf16 = false, os_amx = false, amx_granted = false;
};

#if defined(__x86_64__)
unsigned long long xcr0() {
  unsigned lo = 0, hi = 0;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  return (static_cast<unsigned long long>(hi) << 32) | lo;
}

// Linux hands the AMX tile data state (8 KiB per thread) only to a process that asks.
bool linux_grants_tile_data() {
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtiledata = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtiledata) == 0;
}

Features detect() {
  Features f;
  unsigned a = 0, b = 0, c = 0, d = 0;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
  f.fma = c & (1u << 12);
  const bool osxsave = c & (1u << 27), avx = c & (1u << 28);
  if (osxsave && avx) {
    const unsigned long long x = xcr0();
    f.os_avx = (x & 0x6) == 0x6;                  // XMM and YMM state
    f.os_avx512 = f.os_avx && (x & 0xe0) == 0xe0;  // opmask, ZMM_Hi256, Hi16_ZMM
    f.os_amx = (x & 0x60000) == 0x60000;           // XTILECFG, XTILEDATA
  }
  if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
    f.avx2 = b & (1u << 5);
    f.avx512f = b & (1u << 16);
    f.avx512dq = b & (1u << 17);
    f.avx512bw = b & (1u << 30);
    f.avx512vl = b & (1u << 31);
    f.amx_bf16 = d & (1u << 22);
    f.amx_tile = d & (1u << 24);
    unsigned a1 = 0, b1 = 0, c1 = 0, d1 = 0;
    if (a >= 1 && __get_cpuid_count(7, 1, &a1, &b1, &c1, &d1)) f.avx512_bf16 = a1 & (1u << 5);
  }
  return f;
}
#else
Features detect() { return {}; }
#endif

bool has_avx512(const Features& f) { return f.avx512f && f.avx512bw && f.avx512dq && f.avx512vl && f.os_avx512; }

struct Host {
  Features f;
  CpuTier tier = CpuTier::Avx2;
  std::string why;  // what the next tier up lacks (empty at amx)
};

const Host& host() {
  static const Host h = [] {
    Host r;
    r.f = detect();
    Features& f = r.f;
    if (!(f.avx2 && f.fma && f.os_avx)) {
      r.why = "the CPU lacks AVX2/FMA (or the OS did not enable AVX): this build needs x86-64-v3";
      return r;
    }
    if (!has_avx512(f)) {
      r.why = f.avx512f && !f.os_avx512 ? "the OS did not enable the AVX-512 state (XCR0)"
                                        : "no AVX-512 F/BW/DQ/VL";
      return r;
    }
    r.tier = CpuTier::Avx512;
    if (!f.avx512_bf16) {
      r.why = "no AVX512-BF16";
      return r;
    }
    r.tier = CpuTier::Avx512Bf16;
#if defined(VIDAX_HAVE_AMX_KERNELS)
    if (!(f.amx_tile && f.amx_bf16)) {
      r.why = "no AMX-TILE/AMX-BF16";
      return r;
    }
    if (!f.os_amx || !(f.amx_granted = linux_grants_tile_data())) {
      r.why = "the CPU has AMX but the OS did not grant the tile state (XCR0 / arch_prctl)";
      return r;
    }
    r.tier = CpuTier::Amx;
#else
    r.why = "this build has no AMX kernels (the compiler lacked -mamx-tile)";
#endif
    return r;
  }();
  return h;
}

struct Active {
  CpuTier tier;
  std::string cap;  // VIDAX_CPU_TIER's value when it capped the tier
};

const Active& active() {
  static const Active a = [] {
    const CpuTier h = host_cpu_tier();
    const char* env = std::getenv("VIDAX_CPU_TIER");
    if (!env || !*env) return Active{h, ""};
    const std::optional<CpuTier> want = parse_cpu_tier(env);
    if (!want)
      throw Error(std::string("VIDAX_CPU_TIER=") + env + " is not a tier: avx2 | avx512 | avx512_bf16 | amx");
    if (static_cast<int>(*want) > static_cast<int>(h))
      throw Error(std::string("VIDAX_CPU_TIER=") + env + " is above this CPU's tier " + cpu_tier_name(h) + " (" +
                  host().why + "); unset it or ask for a tier up to " + cpu_tier_name(h));
    return Active{*want, env};
  }();
  return a;
}

}  // namespace

const char* cpu_tier_name(CpuTier tier) {
  switch (tier) {
    case CpuTier::Avx2: return "avx2";
    case CpuTier::Avx512: return "avx512";
    case CpuTier::Avx512Bf16: return "avx512_bf16";
    case CpuTier::Amx: return "amx";
  }
  return "?";
}

std::optional<CpuTier> parse_cpu_tier(std::string_view name) {
  for (CpuTier t : {CpuTier::Avx2, CpuTier::Avx512, CpuTier::Avx512Bf16, CpuTier::Amx})
    if (name == cpu_tier_name(t)) return t;
  return std::nullopt;
}

CpuTier host_cpu_tier() { return host().tier; }

CpuTier cpu_tier() { return active().tier; }

std::string cpu_features() {
  const Features& f = host().f;
  std::string s;
  auto add = [&](bool on, const char* name) {
    if (!on) return;
    if (!s.empty()) s += ' ';
    s += name;
  };
  add(f.avx2 && f.os_avx, "avx2");
  add(f.fma, "fma");
  add(f.avx512f && f.os_avx512, "avx512f");
  add(f.avx512bw && f.os_avx512, "avx512bw");
  add(f.avx512dq && f.os_avx512, "avx512dq");
  add(f.avx512vl && f.os_avx512, "avx512vl");
  add(f.avx512_bf16 && f.os_avx512, "avx512_bf16");
  if (f.amx_tile && f.amx_bf16) add(true, host().tier == CpuTier::Amx ? "amx" : "amx(no OS permission)");
  return s.empty() ? "none of avx2/fma/avx512/amx" : s;
}

std::string cpu_tier_report() {
  const Active& a = active();
  std::ostringstream os;
  os << "cpu tier " << cpu_tier_name(a.tier) << " (cpu: " << cpu_features() << "; ";
  if (!a.cap.empty() && a.tier != host_cpu_tier())
    os << "capped by VIDAX_CPU_TIER=" << a.cap << ", the CPU's own tier is " << cpu_tier_name(host_cpu_tier()) << ")";
  else if (a.tier == CpuTier::Amx)
    os << "the highest tier)";
  else
    os << "not higher: " << host().why << ")";
  return os.str();
}

bool has_bf16_arithmetic() { return cpu_tier_at_least(CpuTier::Avx512Bf16); }

PrecisionChoice default_compute_precision(const std::string& model_default) {
  if (model_default != "bf16")
    return {model_default, "the model's default (" + model_default + ")"};
  if (has_bf16_arithmetic())
    return {"bf16", std::string("the model's default bf16: cpu tier ") + cpu_tier_name(cpu_tier()) +
                        " has bf16 arithmetic"};
  return {"fp32", std::string("fp32 instead of the model's bf16: cpu tier ") + cpu_tier_name(cpu_tier()) +
                      " has no bf16 arithmetic (bf16 would compute through widening to fp32 anyway); "
                      "--precision bf16 forces it"};
}

}  // namespace vidax::cpu
