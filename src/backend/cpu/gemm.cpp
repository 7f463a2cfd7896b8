// GEMM: linear (y = x W^T + b) and batched matmul, fp32 accumulation.
//
// linear: bf16 x bf16 runs our AMX kernel (gemm_amx.cpp) when the CPU has AMX
// and Linux grants it; everything else runs oneDNN's matmul primitive (brgemm
// kernels: AVX-512 for f32, AMX / AVX512-BF16 for bf16). Either way the weight
// is packed once (our AMX tile layout, or oneDNN's blocked layout) and cached.
// Compute dtype: bf16 x bf16 -> bf16 products, fp32 accumulation;
// every other combination widens to f32 exactly (f16/bf16 weights are packed
// as f32, bf16 activations staged as f32), so no value is ever rounded on the
// way in. The output is rounded once (RNE) into x's dtype.
#include "backend/cpu/gemm.h"

#ifdef VIDAX_HAVE_OPENBLAS
#include <cblas.h>
#endif

#include <algorithm>
#include <cstdlib>
#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <unordered_map>

#include "backend/cpu/amx.h"
#include "backend/cpu/common.h"
#include "backend/cpu/cpu_tier.h"
#include "backend/cpu/env_switch.h"
#include "backend/cpu/gemm_amx.h"
#include "backend/cpu/kernels.h"

#ifdef VIDAX_HAVE_DNNL
#include <dnnl.hpp>
#endif

namespace vidax::cpu {

namespace {

// VIDAX_AMX_GEMM=bysize|always|never (default bysize), for A/B measurements.
EnvSwitch<AmxGemmPolicy> g_amx_gemm_policy("VIDAX_AMX_GEMM", {"bysize", "always", "never"});
AmxGemmPolicy amx_gemm_policy() { return g_amx_gemm_policy.get(); }
std::atomic<uint64_t> g_amx_gemm_calls{0};
std::atomic<uint64_t> g_amx_fused_calls{0};

// VIDAX_FUSED_EPILOGUE=0 runs linear_gelu / linear_gated_residual as two ops (same values),
// for A/B timing without a rebuild; 1 or unset: fused where the AMX kernel runs.
bool fused_epilogues_enabled() {
  static EnvSwitch<int> fused("VIDAX_FUSED_EPILOGUE", {"1", "0"});
  return fused.get() == 0;
}

// Rows of a tensor viewed as a [M, K] matrix with unit column stride: the row
// stride when every leading dim steps evenly, else 0 (needs staging).
int64_t even_row_stride(const Tensor& x) {
  const int64_t K = x.size(-1);
  if (x.strides().back() != 1 && K != 1) return 0;
  int64_t row = 0, expect = 0;  // row: stride of the innermost leading dim > 1
  for (int64_t d = x.dim() - 2; d >= 0; --d) {
    const int64_t n = x.size(d), s = x.strides()[static_cast<size_t>(d)];
    if (n == 1) continue;
    if (row == 0) row = expect = s;
    else if (s != expect) return 0;
    expect = s * n;
  }
  if (row == 0) row = K;
  return row >= K ? row : 0;
}

}  // namespace

#ifdef VIDAX_HAVE_DNNL

namespace {

using dnnl::memory;
using dt = dnnl::memory::data_type;

// oneDNN picks its own kernels by cpuid: below the host's tier (VIDAX_CPU_TIER) it is
// capped to the same instruction set before its first primitive, unless the user set
// oneDNN's own DNNL_MAX_CPU_ISA.
void cap_onednn_isa() {
  static const bool once = [] {
    if (cpu_tier() == host_cpu_tier() || std::getenv("DNNL_MAX_CPU_ISA")) return true;
    dnnl::cpu_isa isa = dnnl::cpu_isa::avx2;
    switch (cpu_tier()) {
      case CpuTier::Avx2: isa = dnnl::cpu_isa::avx2; break;
      case CpuTier::Avx512: isa = dnnl::cpu_isa::avx512_core; break;
      case CpuTier::Avx512Bf16: isa = dnnl::cpu_isa::avx512_core_bf16; break;
      case CpuTier::Amx: isa = dnnl::cpu_isa::avx512_core_amx; break;
    }
    dnnl::set_max_cpu_isa(isa);
    return true;
  }();
  (void)once;
}

dnnl::engine& engine() {
  cap_onednn_isa();
  static dnnl::engine e(dnnl::engine::kind::cpu, 0);
  return e;
}

dnnl::stream& stream() {
  thread_local dnnl::stream s(engine());
  return s;
}

// ---- weight pack cache ------------------------------------------------------------
// Key: the weight's buffer, byte offset, dtype, shape, strides and compute dtype.
// The entry keeps a weak reference to the buffer (a freed buffer whose address
// is reused never hits) and a sample of the weight's bytes checked on each hit.
struct PackKey {
  const void* buffer;
  size_t offset;
  DType dtype, compute;
  int64_t N, K, sN, sK;
  auto tie() const { return std::tie(buffer, offset, dtype, compute, N, K, sN, sK); }
  bool operator<(const PackKey& o) const { return tie() < o.tie(); }
};

struct Pack {
  std::weak_ptr<Buffer> owner;
  std::vector<uint8_t> sample;
  std::vector<std::pair<memory::desc, memory>> layouts;  // one per oneDNN blocked layout asked for
  std::shared_ptr<const amx::PackedWeight> amx;          // our AMX tile layout (bf16 compute), when asked for
};

std::mutex g_pack_mu;
std::map<PackKey, Pack> g_packs;

std::vector<uint8_t> sample_bytes(const Tensor& w) {
  constexpr int64_t kSamples = 64;
  const int64_t n = w.numel();
  const size_t es = dtype_size(w.dtype());
  std::vector<uint8_t> s;
  const char* base = byte_ptr(w);
  for (int64_t i = 0; i < std::min(n, kSamples); ++i) {
    const int64_t flat = n <= kSamples ? i : (i * (n - 1)) / (kSamples - 1);
    const int64_t r = flat / w.size(1), c = flat % w.size(1);
    const char* p = base + (r * w.strides()[0] + c * w.strides()[1]) * static_cast<int64_t>(es);
    s.insert(s.end(), p, p + es);
  }
  return s;
}

// w [N, K] as oneDNN's logical [K, N] in the compute dtype, reordered to `want`.
memory pack_weight(const Tensor& w, dt compute, const memory::desc& want) {
  const int64_t N = w.size(0), K = w.size(1);
  memory packed(want, engine());
  Tensor src = w;
  const bool same = (compute == dt::f32 && w.dtype() == DType::F32) || (compute == dt::bf16 && w.dtype() == DType::BF16);
  if (!same) src = w.to(DType::F32);  // exact widening (bf16/f16 -> f32), contiguous
  memory::desc plain({K, N}, compute, memory::dims{src.strides()[1], src.strides()[0]});
  memory from(plain, engine(), src.data_ptr());
  dnnl::reorder(from, packed).execute(stream(), from, packed);
  stream().wait();
  return packed;
}

// The cache entry of w for `compute` (fresh when missing or stale). Call with g_pack_mu held.
Pack& pack_entry_locked(const Tensor& w, DType compute, std::vector<uint8_t> sample) {
  const PackKey key{w.buffer().get(), w.byte_offset(), w.dtype(), compute,
                    w.size(0), w.size(1), w.strides()[0], w.strides()[1]};
  auto it = g_packs.find(key);
  if (it != g_packs.end()) {
    auto owner = it->second.owner.lock();
    if (owner.get() != w.buffer().get() || it->second.sample != sample) {
      g_packs.erase(it);  // stale: the buffer was freed (address reused) or rewritten
      it = g_packs.end();
    }
  }
  if (it == g_packs.end()) {
    // Drop packs of freed weights before adding one.
    for (auto e = g_packs.begin(); e != g_packs.end();) e = e->second.owner.expired() ? g_packs.erase(e) : std::next(e);
    it = g_packs.emplace(key, Pack{w.buffer(), std::move(sample), {}, nullptr}).first;
  }
  return it->second;
}

memory packed_weight(const Tensor& w, dt compute, const memory::desc& want) {
  std::vector<uint8_t> sample = sample_bytes(w);
  std::lock_guard<std::mutex> lock(g_pack_mu);
  Pack& entry = pack_entry_locked(w, compute == dt::bf16 ? DType::BF16 : DType::F32, std::move(sample));
  for (auto& [desc, mem] : entry.layouts)
    if (desc == want) return mem;
  memory m = pack_weight(w, compute, want);
  entry.layouts.emplace_back(want, m);
  return m;
}

// w (bf16) packed into AMX B tiles, cached with the same staleness rules.
std::shared_ptr<const amx::PackedWeight> amx_packed_weight(const Tensor& w) {
  std::vector<uint8_t> sample = sample_bytes(w);
  std::lock_guard<std::mutex> lock(g_pack_mu);
  Pack& entry = pack_entry_locked(w, DType::BF16, std::move(sample));
  if (!entry.amx) entry.amx = std::make_shared<const amx::PackedWeight>(amx::pack_weight(w));
  return entry.amx;
}

bool use_amx_gemm() { return amx_gemm_policy() != AmxGemmPolicy::Never && amx::available(); }

// Measured on this machine (docs/benchmarks.md, bench_kernels, interleaved runs):
// since the column-block order and the weight prefetch (2026-11-30) ours is
// 5-15% ahead of oneDNN 2.6's AMX matmul at K = N = 1024-1536 (1 thread: 933-1015
// vs 813-892 GFLOP/s) and 1.2-2x ahead once K or N reaches 4096-8960; at
// K = N = 512 the two are level, so oneDNN keeps the small shapes. Both round
// once from fp32 sums, so the choice changes no value beyond the summation order
// (tested within one bf16 ulp of each other).
constexpr int64_t kAmxGemmMinDim = 1024;
bool amx_gemm_for(int64_t K, int64_t N) {
  if (!use_amx_gemm()) return false;
  return amx_gemm_policy() == AmxGemmPolicy::Always || std::max(K, N) >= kAmxGemmMinDim;
}

// linear for bf16 x and w on our AMX kernel; the kernel packs x's rows itself
// when they are evenly strided (else x is staged contiguous first), and writes
// out in place when it is contiguous f32/bf16.
void linear_amx(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, Tensor& out,
                const amx::Epilogue& ep = {}) {
  g_amx_gemm_calls.fetch_add(1, std::memory_order_relaxed);
  if (ep.op != amx::Epilogue::Op::None) g_amx_fused_calls.fetch_add(1, std::memory_order_relaxed);
  const int64_t K = w.size(1), N = w.size(0), M = out.numel() / N;
  Tensor src = x;
  int64_t lda = even_row_stride(x);
  if (lda == 0) {
    src = Tensor::empty(x.shape(), DType::BF16);
    copy_strided(x, src);
    lda = K;
  }
  const bool direct = out.is_contiguous() && (out.dtype() == DType::F32 || out.dtype() == DType::BF16);
  VIDAX_CHECK(direct || ep.op == amx::Epilogue::Op::None, "linear_amx: a fused epilogue needs a contiguous f32/bf16 out");
  Tensor dst = direct ? out : Tensor::empty(out.shape(), DType::F32);
  std::vector<float> bvec;
  if (bias) bvec = bias->to_f32_vector();
  const std::shared_ptr<const amx::PackedWeight> packed = amx_packed_weight(w);
  amx::linear_bf16(M, src.data<uint16_t>(), lda, *packed, bias ? bvec.data() : nullptr, dst.data_ptr(), dst.dtype(),
                   ep);
  if (!direct) copy_strided(dst, out);
}

// The gate of a fused gated residual as rows of N floats, one row per gate_rows
// output rows: gate broadcast to out [d0, ..., N] must vary at most along d0 and
// N. Returns false (no fused path) for any other broadcast.
bool gate_rows_of(const Tensor& gate, const Tensor& out, Tensor& rows, int64_t& gate_rows) {
  const int64_t r = out.dim(), N = out.size(-1), M = out.numel() / N;
  if (gate.dim() > r || gate.size(-1) != N) return false;
  const int64_t pad = r - gate.dim();
  int64_t lead = 1;
  for (int64_t i = 0; i + 1 < r; ++i) {
    const int64_t g = i < pad ? 1 : gate.size(i - pad);
    if (g == 1) continue;
    if (i != 0) return false;
    lead = g;
  }
  rows = Tensor::empty({lead, N}, DType::F32);
  Tensor view = rows.reshape(gate.shape());
  copy_strided(gate, view);
  gate_rows = M / lead;
  return true;
}

// ---- primitive cache ------------------------------------------------------------------
struct PrimKey {
  int64_t M, N, K, lda;
  dt src, dst;
  bool bias;
  auto tie() const { return std::tie(M, N, K, lda, src, dst, bias); }
  bool operator<(const PrimKey& o) const { return tie() < o.tie(); }
};
struct Prim {
  dnnl::matmul prim;
  memory::desc src, wei, bias, dst;
};
std::mutex g_prim_mu;
std::map<PrimKey, Prim> g_prims;

const Prim& matmul_prim(const PrimKey& k) {
  std::lock_guard<std::mutex> lock(g_prim_mu);
  auto it = g_prims.find(k);
  if (it != g_prims.end()) return it->second;
  memory::desc src({k.M, k.K}, k.src, memory::dims{k.lda, 1});
  memory::desc wei({k.K, k.N}, k.src, memory::format_tag::any);
  memory::desc bias = k.bias ? memory::desc({1, k.N}, dt::f32, memory::format_tag::ab) : memory::desc();
  memory::desc dst({k.M, k.N}, k.dst, memory::format_tag::ab);
  dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(src, wei, bias, dst), engine());
  Prim p{dnnl::matmul(pd), pd.src_desc(), pd.weights_desc(), bias, pd.dst_desc()};
  return g_prims.emplace(k, std::move(p)).first->second;
}

}  // namespace

void sgemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, bool b_transposed,
           float* C, int64_t ldc, bool accumulate) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (!accumulate)
      for (int64_t m = 0; m < M; ++m) std::fill(C + m * ldc, C + m * ldc + N, 0.0f);
    return;
  }
  cap_onednn_isa();
  const dnnl_status_t st = dnnl_sgemm('N', b_transposed ? 'T' : 'N', M, N, K, 1.0f, A, lda, B, ldb,
                                      accumulate ? 1.0f : 0.0f, C, ldc);
  VIDAX_CHECK(st == dnnl_success, "oneDNN sgemm failed (status " << static_cast<int>(st) << ") for M=" << M
                                                                  << " N=" << N << " K=" << K);
}

std::string gemm_library() {
  const dnnl_version_t* v = dnnl_version();
  const std::string onednn =
      "onednn " + std::to_string(v->major) + "." + std::to_string(v->minor) + "." + std::to_string(v->patch);
  if (!use_amx_gemm()) return onednn;
  return amx_gemm_policy() == AmxGemmPolicy::Always ? "vidax-amx (bf16 linear) + " + onednn
                                                     : "vidax-amx (bf16 linear, K or N >= 1024) + " + onednn;
}

void set_amx_gemm_enabled(bool enabled) {
  g_amx_gemm_policy.set(enabled ? AmxGemmPolicy::Always : AmxGemmPolicy::Never);
}
void set_amx_gemm_policy(AmxGemmPolicy policy) { g_amx_gemm_policy.set(policy); }
uint64_t amx_gemm_calls() { return g_amx_gemm_calls.load(); }
uint64_t amx_fused_epilogue_calls() { return g_amx_fused_calls.load(); }
bool amx_gemm_active() { return use_amx_gemm(); }

void clear_weight_pack_cache() {
  std::lock_guard<std::mutex> lock(g_pack_mu);
  g_packs.clear();
}

size_t weight_pack_cache_size() {
  std::lock_guard<std::mutex> lock(g_pack_mu);
  return g_packs.size();
}

void linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, Tensor& out) {
  const int64_t K = w.size(1), N = w.size(0);
  const int64_t M = out.numel() / std::max<int64_t>(N, 1);
  if (out.numel() == 0) return;
  if (K == 0) {  // empty reduction: y = bias (or 0)
    const std::vector<float> row = bias ? bias->to_f32_vector() : std::vector<float>(static_cast<size_t>(N), 0.0f);
    for (int64_t m = 0; m < M; ++m)
      store_row(row.data(), N, byte_ptr_mut(out) + m * N * static_cast<int64_t>(dtype_size(out.dtype())), out.dtype());
    return;
  }
  // bf16 x bf16 computes in bf16 (oneDNN's bf16 matmul, or our AMX kernel) only where the CPU
  // has bf16 arithmetic; below that tier oneDNN emulates it (measured 5x slower than its f32
  // matmul on an AVX-512 Xeon without AVX512-BF16), so the values are widened exactly to f32 and
  // run on the f32 kernels instead: a bf16 x bf16 product is exact in f32, so only the
  // summation order differs from the bf16 path.
  const bool bf16 = x.dtype() == DType::BF16 && w.dtype() == DType::BF16 && has_bf16_arithmetic();
  if (bf16 && amx_gemm_for(K, N)) return linear_amx(x, w, bias, out);
  const dt compute = bf16 ? dt::bf16 : dt::f32;
  const DType cdtype = bf16 ? DType::BF16 : DType::F32;

  // Source rows: x itself when it already is the compute dtype with even row strides.
  Tensor src = x;
  int64_t lda = x.dtype() == cdtype ? even_row_stride(x) : 0;
  if (lda == 0) {
    src = Tensor::empty(x.shape(), cdtype);
    copy_strided(x, src);
    lda = K;
  }
  // Destination: out itself when its dtype is what oneDNN writes for this compute dtype.
  const bool direct = out.dtype() == cdtype;
  Tensor dst = direct ? out : Tensor::empty(out.shape(), DType::F32);
  const dt dst_dt = direct ? compute : dt::f32;

  const Prim& p = matmul_prim(PrimKey{M, N, K, lda, compute, dst_dt, bias.has_value()});
  memory wmem = packed_weight(w, compute, p.wei);
  memory smem(p.src, engine(), src.data_ptr());
  memory dmem(p.dst, engine(), dst.data_ptr());
  std::unordered_map<int, memory> args{{DNNL_ARG_SRC, smem}, {DNNL_ARG_WEIGHTS, wmem}, {DNNL_ARG_DST, dmem}};
  std::vector<float> bvec;
  if (bias) {
    bvec = bias->to_f32_vector();
    args.emplace(DNNL_ARG_BIAS, memory(p.bias, engine(), bvec.data()));
  }
  p.prim.execute(stream(), args);
  stream().wait();
  if (!direct) copy_strided(dst, out);
}

namespace {

// The AMX kernel runs this linear and can write `out` with a fused output stage.
bool fusable(const Tensor& x, const Tensor& w, const Tensor& out) {
  return x.dtype() == DType::BF16 && w.dtype() == DType::BF16 && w.size(1) > 0 && out.numel() > 0 &&
         out.is_contiguous() && fused_epilogues_enabled() && amx_gemm_for(w.size(1), w.size(0));
}

}  // namespace

bool linear_gelu(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, ops::GeluMode mode, Tensor& out) {
  if (!fusable(x, w, out)) return false;
  amx::Epilogue ep;
  ep.op = mode == ops::GeluMode::Tanh ? amx::Epilogue::Op::GeluTanh : amx::Epilogue::Op::GeluErf;
  linear_amx(x, w, bias, out, ep);
  return true;
}

bool linear_gated_residual(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, const Tensor& residual,
                           const Tensor& gate, Tensor& out) {
  if (!fusable(x, w, out) || out.dtype() != DType::F32 || residual.dtype() != DType::F32 || !residual.is_contiguous())
    return false;
  amx::Epilogue ep;
  Tensor gate_rows;
  if (!gate_rows_of(gate, out, gate_rows, ep.gate_rows)) return false;
  ep.op = amx::Epilogue::Op::GatedResidual;
  ep.residual = residual.data<float>();
  ep.gate = gate_rows.data<float>();
  linear_amx(x, w, bias, out, ep);
  return true;
}

#else  // OpenBLAS only

void sgemm(int64_t M, int64_t N, int64_t K, const float* A, int64_t lda, const float* B, int64_t ldb, bool b_transposed,
           float* C, int64_t ldc, bool accumulate) {
  if (M == 0 || N == 0) return;
  if (K == 0) {
    if (!accumulate)
      for (int64_t m = 0; m < M; ++m) std::fill(C + m * ldc, C + m * ldc + N, 0.0f);
    return;
  }
#ifdef VIDAX_HAVE_OPENBLAS
  cblas_sgemm(CblasRowMajor, CblasNoTrans, b_transposed ? CblasTrans : CblasNoTrans, static_cast<blasint>(M),
              static_cast<blasint>(N), static_cast<blasint>(K), 1.0f, A, static_cast<blasint>(lda), B,
              static_cast<blasint>(ldb), accumulate ? 1.0f : 0.0f, C, static_cast<blasint>(ldc));
#else
  // Neither oneDNN nor OpenBLAS (the minimal build, VIDAX_MINIMAL): the engine's own loop, fp32
  // accumulation, rows in parallel. Correct and slow: it serves the CPU parts of a device run.
#pragma omp parallel for schedule(static)
  for (int64_t m = 0; m < M; ++m) {
    float* c = C + m * ldc;
    const float* a = A + m * lda;
    if (b_transposed) {
      for (int64_t n = 0; n < N; ++n) {
        const float* b = B + n * ldb;
        float s[8] = {0, 0, 0, 0, 0, 0, 0, 0};
        int64_t k = 0;
        for (; k + 8 <= K; k += 8)
          for (int j = 0; j < 8; ++j) s[j] += a[k + j] * b[k + j];
        float acc = ((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7]));
        for (; k < K; ++k) acc += a[k] * b[k];
        c[n] = accumulate ? c[n] + acc : acc;
      }
    } else {
      std::vector<float> row(static_cast<size_t>(N), 0.0f);
      for (int64_t k = 0; k < K; ++k) {
        const float av = a[k];
        const float* b = B + k * ldb;
        for (int64_t n = 0; n < N; ++n) row[static_cast<size_t>(n)] += av * b[n];
      }
      for (int64_t n = 0; n < N; ++n) c[n] = accumulate ? c[n] + row[static_cast<size_t>(n)] : row[static_cast<size_t>(n)];
    }
  }
#endif
}

#ifdef VIDAX_HAVE_OPENBLAS
std::string gemm_library() { return "openblas"; }
#else
std::string gemm_library() { return "vidax loop (no oneDNN, no OpenBLAS: the minimal build)"; }
#endif
void set_amx_gemm_enabled(bool) {}
void set_amx_gemm_policy(AmxGemmPolicy) {}
uint64_t amx_gemm_calls() { return 0; }
uint64_t amx_fused_epilogue_calls() { return 0; }
bool amx_gemm_active() { return false; }
void clear_weight_pack_cache() {}
size_t weight_pack_cache_size() { return 0; }
bool linear_gelu(const Tensor&, const Tensor&, const std::optional<Tensor>&, ops::GeluMode, Tensor&) { return false; }
bool linear_gated_residual(const Tensor&, const Tensor&, const std::optional<Tensor>&, const Tensor&, const Tensor&,
                           Tensor&) {
  return false;
}

void linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, Tensor& out) {
  const int64_t K = w.size(1), N = w.size(0), M = out.numel() / std::max<int64_t>(N, 1);
  if (out.numel() == 0) return;
  Staged<float> xs = stage_f32(x), ws = stage_f32(w);
  std::vector<float> y(static_cast<size_t>(M * N));
  sgemm(M, N, K, xs.ptr, K, ws.ptr, K, true, y.data(), N);
  if (bias) {
    const std::vector<float> b = bias->to_f32_vector();
    for (int64_t m = 0; m < M; ++m)
      for (int64_t n = 0; n < N; ++n) y[static_cast<size_t>(m * N + n)] += b[static_cast<size_t>(n)];
  }
  store_row(y.data(), M * N, out.data_ptr(), out.dtype());
}

#endif

namespace {
// Strides of t's batch dims (all but the last two) broadcast to `batch` (0 = repeated).
Strides batch_strides(const Tensor& t, const Shape& batch) {
  const size_t nb = static_cast<size_t>(t.dim() - 2), off = batch.size() - nb;
  Strides s(batch.size(), 0);
  for (size_t i = 0; i < nb; ++i) s[off + i] = t.shape()[i] == 1 ? 0 : t.strides()[i];
  return s;
}

// A [rows, cols] f32 matrix with unit column stride: t's own memory or a staged copy.
struct F32Matrix {
  std::vector<float> owned;
  const float* ptr = nullptr;
  int64_t ld = 0;
};
F32Matrix as_f32_matrix(const Tensor& t) {
  F32Matrix m;
  const bool one_row = t.size(0) == 1;
  if (t.dtype() == DType::F32 && (t.strides()[1] == 1 || t.size(1) == 1) && (one_row || t.strides()[0] >= t.size(1))) {
    m.ptr = t.data<float>();
    m.ld = one_row ? std::max<int64_t>(t.size(1), 1) : std::max<int64_t>(t.strides()[0], 1);
    return m;
  }
  Staged<float> s = stage_f32(t);
  m.owned = std::move(s.owned);
  m.ptr = m.owned.data();
  m.ld = std::max<int64_t>(t.size(1), 1);
  return m;
}
}  // namespace

void matmul(const Tensor& a, const Tensor& b, Tensor& out) {
  const int64_t M = out.size(-2), N = out.size(-1), K = a.size(-1);
  if (out.numel() == 0) return;
  const Shape& os = out.shape();
  const Shape batch(os.begin(), os.end() - 2);
  const int64_t nb = shape_numel(batch);
  const Strides sa = batch_strides(a, batch), sb = batch_strides(b, batch);
  const bool direct = out.dtype() == DType::F32;
  std::vector<float> ybuf(direct ? 0 : static_cast<size_t>(M * N));
  const int64_t oes = static_cast<int64_t>(dtype_size(out.dtype()));
  for (int64_t i = 0; i < nb; ++i) {
    int64_t oa = 0, ob = 0, rem = i;
    for (size_t d = batch.size(); d-- > 0;) {
      const int64_t idx = rem % batch[d];
      rem /= batch[d];
      oa += idx * sa[d];
      ob += idx * sb[d];
    }
    Tensor a2 = Tensor::from_buffer(a.buffer(), a.byte_offset() + static_cast<size_t>(oa) * dtype_size(a.dtype()),
                                    {M, K}, a.dtype(), {a.strides()[a.dim() - 2], a.strides()[a.dim() - 1]});
    Tensor b2 = Tensor::from_buffer(b.buffer(), b.byte_offset() + static_cast<size_t>(ob) * dtype_size(b.dtype()),
                                    {K, N}, b.dtype(), {b.strides()[b.dim() - 2], b.strides()[b.dim() - 1]});
    F32Matrix am = as_f32_matrix(a2), bm = as_f32_matrix(b2);
    float* y = direct ? out.data<float>() + i * M * N : ybuf.data();
    sgemm(M, N, K, am.ptr, am.ld, bm.ptr, bm.ld, false, y, N);
    if (!direct) store_row(ybuf.data(), M * N, byte_ptr_mut(out) + i * M * N * oes, out.dtype());
  }
}

}  // namespace vidax::cpu
