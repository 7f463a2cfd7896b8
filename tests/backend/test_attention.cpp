#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <limits>

#include "backend/cpu/attention_tiles.h"
#include "backend/ops.h"
#include "helpers.h"

using namespace vidax;
using namespace vidax::test;

namespace {

// Plain softmax(q k^T * scale + bias + mask) v in double, full score rows. A masked
// key takes no part; a NaN among a row's visible scores makes the row NaN, and a
// NaN in V reaches every row that sees its key, whatever the key's probability (the
// NaN contract in attention.cpp).
std::vector<double> ref_attention(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& o) {
  const int64_t B = q.size(0), Lq = q.size(1), H = q.size(2), D = q.size(3), Lk = k.size(1), Dv = v.size(3);
  const auto qv = q.contiguous().to_f64_vector(), kv = k.contiguous().to_f64_vector(), vv = v.contiguous().to_f64_vector();
  std::vector<double> bias;
  if (o.bias) bias = o.bias->contiguous().to_f64_vector();
  const double scale = o.scale == 0 ? 1.0 / std::sqrt(double(D)) : o.scale;
  std::vector<double> out(static_cast<size_t>(B * Lq * H * Dv), 0.0), s(static_cast<size_t>(Lk));
  for (int64_t b = 0; b < B; ++b)
    for (int64_t h = 0; h < H; ++h)
      for (int64_t i = 0; i < Lq; ++i) {
        double mx = -std::numeric_limits<double>::infinity();
        for (int64_t j = 0; j < Lk; ++j) {
          bool masked = (!o.kv_lens.empty() && j >= o.kv_lens[b]) || (o.causal && j > i);
          double d = 0;
          for (int64_t c = 0; c < D; ++c) d += qv[((b * Lq + i) * H + h) * D + c] * kv[((b * Lk + j) * H + h) * D + c];
          d *= scale;
          if (o.bias) {
            const int64_t bb = o.bias->size(0) == 1 ? 0 : b, bh = o.bias->size(1) == 1 ? 0 : h;
            d += bias[((bb * o.bias->size(1) + bh) * Lq + i) * Lk + j];
          }
          s[j] = masked ? -std::numeric_limits<double>::infinity() : d;
          mx = std::isnan(s[j]) || std::isnan(mx) ? std::nan("") : std::max(mx, s[j]);
        }
        if (mx == -std::numeric_limits<double>::infinity()) continue;  // no visible key: zeros
        double z = 0;
        for (int64_t j = 0; j < Lk; ++j) z += std::exp(s[j] - mx);
        for (int64_t j = 0; j < Lk; ++j) {
          if (s[j] == -std::numeric_limits<double>::infinity()) continue;  // masked (or a -inf bias)
          const double p = std::exp(s[j] - mx) / z;
          for (int64_t c = 0; c < Dv; ++c) out[((b * Lq + i) * H + h) * Dv + c] += p * vv[((b * Lk + j) * H + h) * Dv + c];
        }
      }
  return out;
}

void check(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& o, double tol,
           const std::string& what) {
  Tensor out = ops::attention(q, k, v, o);
  ASSERT_EQ(out.shape(), (Shape{q.size(0), q.size(1), q.size(2), v.size(3)})) << what;
  EXPECT_EQ(out.dtype(), q.dtype()) << what;
  expect_close(out, ref_attention(q, k, v, o), tol, tol, what);
}

}  // namespace

TEST(Attention, SelfAttentionHeadDims) {
  for (int64_t D : {1, 13, 64, 128}) {
    Tensor q = randn({2, 37, 3, D}, 1), k = randn({2, 37, 3, D}, 2), v = randn({2, 37, 3, D}, 3);
    check(q, k, v, {}, 2e-5, "self D=" + std::to_string(D));
  }
}

TEST(Attention, KvLensCrossLengthsAndDv) {
  Tensor q = randn({3, 5, 2, 64}, 4), k = randn({3, 77, 2, 64}, 5), v = randn({3, 77, 2, 40}, 6);
  ops::AttentionOptions o;
  o.kv_lens = {77, 1, 30};
  check(q, k, v, o, 2e-5, "cross with kv_lens");
  o.kv_lens = {0, 77, 12};  // an empty prompt gives zeros
  check(q, k, v, o, 2e-5, "kv_len 0");
  o.scale = 0.3;
  check(q, k, v, o, 2e-5, "explicit scale");
  o.kv_lens = {78, 1, 1};
  EXPECT_THROW(ops::attention(q, k, v, o), Error);
  o.kv_lens = {1, 1};
  EXPECT_THROW(ops::attention(q, k, v, o), Error);
}

TEST(Attention, BiasAndCausal) {
  Tensor q = randn({2, 19, 4, 32}, 7), k = randn({2, 23, 4, 32}, 8), v = randn({2, 23, 4, 32}, 9);
  ops::AttentionOptions o;
  o.bias = randn({1, 4, 19, 23}, 10, DType::F32, 3.0);  // T5-style position bias, shared over the batch
  check(q, k, v, o, 2e-5, "bias [1,H,Lq,Lk]");
  o.bias = randn({2, 1, 19, 23}, 11);
  o.kv_lens = {23, 9};
  check(q, k, v, o, 2e-5, "bias [B,1,Lq,Lk] + kv_lens");
  o.bias.reset();
  o.kv_lens.clear();
  o.causal = true;
  check(q, k, v, o, 2e-5, "causal Lq<Lk");
  Tensor q2 = randn({2, 23, 4, 32}, 12);
  check(q2, k, v, o, 2e-5, "causal self");
  // a bias row entirely -inf over the visible keys: no visible key -> zeros
  Tensor bias = Tensor::zeros({1, 1, 19, 23}, DType::F32);
  for (int j = 0; j < 23; ++j) bias.data<float>()[j] = -INFINITY;
  o.causal = false;
  o.bias = bias;
  check(q, k, v, o, 2e-5, "-inf bias row");
}

TEST(Attention, StridedFusedQkvViews) {
  // q/k/v as views of one fused [B, L, 3, H, D] projection: no copies needed.
  Tensor qkv = randn({2, 29, 3, 2, 48}, 13);
  Tensor q = qkv.select(2, 0), k = qkv.select(2, 1), v = qkv.select(2, 2);
  EXPECT_FALSE(q.is_contiguous());
  check(q, k, v, {}, 2e-5, "fused views");
}

TEST(Attention, Bf16Inputs) {
  // bf16 q/k/v take the AMX tile path where the CPU has it: odd head dims, Dv != D,
  // partial tiles, masks, bias, causal and strided views.
  struct Case { int64_t B, Lq, Lk, H, D, Dv; bool causal, bias; std::vector<int64_t> lens; };
  const std::vector<Case> cases = {{1, 64, 70, 2, 64, 64, false, false, {50}},
                                   {2, 37, 129, 3, 13, 40, false, true, {129, 0}},
                                   {1, 100, 100, 1, 72, 72, true, false, {}},
                                   {2, 17, 5, 2, 128, 128, false, false, {3, 5}},
                                   {1, 130, 200, 2, 80, 24, true, true, {}},
                                   // several key blocks, a key length inside a block, 3 query blocks
                                   {2, 150, 300, 2, 64, 64, false, false, {300, 129}},
                                   {1, 200, 200, 1, 128, 128, true, false, {}}};
  // Later keys score higher (keys scaled up along the sequence): the running row
  // max keeps growing across key blocks, so earlier output is rescaled many times.
  {
    Tensor q = randn({1, 70, 2, 64}, 20, DType::BF16), k = randn({1, 600, 2, 64}, 21), v = randn({1, 600, 2, 64}, 22, DType::BF16);
    float* kd = k.data<float>();
    for (int64_t j = 0; j < 600; ++j)
      for (int64_t e = 0; e < 2 * 64; ++e) kd[j * 128 + e] *= 0.2f + 0.004f * static_cast<float>(j);
    check(q, k.to(DType::BF16), v, {}, 1.0 / 64, "bf16 growing scores");
  }
  for (bool amx : {true, false}) {
  cpu::attn::set_amx_enabled(amx);
  for (const Case& c : cases) {
    Tensor q = randn({c.B, c.Lq, c.H, c.D}, 14, DType::BF16), k = randn({c.B, c.Lk, c.H, c.D}, 15, DType::BF16),
           v = randn({c.B, c.Lk, c.H, c.Dv}, 16, DType::BF16);
    ops::AttentionOptions o;
    o.kv_lens = c.lens;
    o.causal = c.causal;
    if (c.bias) o.bias = randn({1, c.H, c.Lq, c.Lk}, 17, DType::BF16);
    check(q, k, v, o, 1.0 / 64,
          std::string(amx ? "amx " : "avx512 ") + "bf16 Lq=" + std::to_string(c.Lq) + " Lk=" + std::to_string(c.Lk) +
              " D=" + std::to_string(c.D));
  }
  }
  cpu::attn::set_amx_enabled(true);
  Tensor qkv = randn({2, 45, 3, 2, 64}, 18, DType::BF16);
  check(qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2), {}, 1.0 / 64, "bf16 fused views");
  ops::AttentionOptions neg;
  neg.scale = -0.2;  // the max is then taken of the scaled scores
  check(qkv.select(2, 0), qkv.select(2, 1), qkv.select(2, 2), neg, 1.0 / 64, "bf16 negative scale");
}

TEST(Attention, Bf16RowMaxRisingSlowlyAndFast) {
  // The AMX path keeps a row's softmax base m while a key block's P = exp2(logit - m)
  // sums to at most 2^16, else moves m to the block's max and redoes the block.
  // Logits q_i . k_j = a_i * 0.02 * j (rising) or a_i * 0.02 * (Lk - j) (falling) with
  // a_i in {0.5, 1, 8, 32}: per 256-key block they rise 3.7, 7.4, 59 or 236 log2
  // units, so some blocks keep m and some must move it (P of the 32x rows overflows
  // fp32 to inf unless m moves).
  const int64_t Lq = 40, Lk = 1290, D = 64;
  for (bool rising : {true, false}) {
    Tensor q = Tensor::zeros({1, Lq, 1, D}, DType::F32), k = randn({1, Lk, 1, D}, 31, DType::F32, 0.01);
    Tensor v = randn({1, Lk, 1, D}, 32, DType::BF16);
    const float slope[4] = {0.5f, 1.0f, 8.0f, 32.0f};
    for (int64_t i = 0; i < Lq; ++i) q.data<float>()[i * D] = slope[i % 4];
    for (int64_t j = 0; j < Lk; ++j) k.data<float>()[j * D] = 0.02f * static_cast<float>(rising ? j : Lk - j);
    ops::AttentionOptions o;
    o.scale = 1.0;
    check(q.to(DType::BF16), k.to(DType::BF16), v, o, 1.0 / 64, rising ? "rising logits" : "falling logits");
  }
}

TEST(Attention, Bf16AmxMatchesAvx512Path) {
  // Both paths round P to bf16 (each its own exp and block order, so a P value
  // may round the other way: ~5e-4 apart at most here); a wrong rescale, mask or
  // packing would be far off.
  Tensor q = randn({1, 300, 2, 128}, 26, DType::BF16), k = randn({1, 700, 2, 128}, 27, DType::BF16),
         v = randn({1, 700, 2, 128}, 28, DType::BF16);
  ops::AttentionOptions o;
  o.kv_lens = {650};
  const Tensor amx = ops::attention(q, k, v, o);
  cpu::attn::set_amx_enabled(false);
  const Tensor avx = ops::attention(q, k, v, o);
  cpu::attn::set_amx_enabled(true);
  expect_close(amx, avx.to_f64_vector(), 1.0 / 512, 1.0 / 128, "amx vs avx512");
}

TEST(Attention, Bf16BitIdenticalAcrossThreadCounts) {
  // Work is split over (batch, head, query block) ranges that change with the
  // thread count; each output row must not.
  Tensor q = randn({2, 200, 3, 64}, 23, DType::BF16), k = randn({2, 260, 3, 64}, 24, DType::BF16),
         v = randn({2, 260, 3, 64}, 25, DType::BF16);
  ops::AttentionOptions o;
  o.kv_lens = {260, 131};
  const int saved = omp_get_max_threads();
  omp_set_num_threads(1);
  const Tensor ref = ops::attention(q, k, v, o);
  for (int threads : {1, 2, 3, 5}) {
    omp_set_num_threads(threads);
    EXPECT_TRUE(same_bits(ops::attention(q, k, v, o), ref)) << threads << " threads";
  }
  o.kv_lens.clear();
  o.causal = true;
  omp_set_num_threads(1);
  const Tensor ref_causal = ops::attention(q, k, v, o);
  omp_set_num_threads(3);
  EXPECT_TRUE(same_bits(ops::attention(q, k, v, o), ref_causal)) << "causal, 3 threads";
  omp_set_num_threads(saved);
}

TEST(Attention, LongSequence) {
  Tensor q = randn({1, 2000, 1, 64}, 17), k = randn({1, 2000, 1, 64}, 18), v = randn({1, 2000, 1, 64}, 19);
  ops::AttentionOptions o;
  o.kv_lens = {1999};
  check(q, k, v, o, 2e-5, "N=2000");
}

namespace {

// Sets element [b, l, h, d] of a contiguous [B, L, H, D] tensor (any float dtype) to NaN.
Tensor with_nan(const Tensor& t, int64_t b, int64_t l, int64_t h, int64_t d) {
  std::vector<double> v = t.contiguous().to_f64_vector();
  v[static_cast<size_t>(lin(t.shape(), {b, l, h, d}))] = std::nan("");
  return Tensor::from_f64(v, t.shape(), t.dtype());
}

size_t count_nan(const std::vector<double>& v) {
  size_t n = 0;
  for (double x : v) n += std::isnan(x);
  return n;
}

}  // namespace

TEST(Attention, NanPropagatesAsTorchAndMaskedKeysStayOut) {
  // Issue 16: the online softmax's std::max dropped a NaN row max and zeroed the
  // row, so NaN weights gave a finite video. Every path (f32, bf16 on AVX-512 and,
  // where the CPU has it, AMX), one tile and several (Lk = 300: two AMX key blocks,
  // five AVX-512 tiles), masks and bias. `nans` is how many NaNs the reference has:
  // it keeps each case from passing vacuously.
  const int64_t B = 2, Lq = 70, Lk = 300, H = 2, D = 64, Dv = 40;
  struct Case {
    const char* what;
    char operand;  // q, k, v, b (bias)
    int64_t b, l, h, d;  // where the NaN goes (bias: [b, h, i = l, j = d])
    bool causal;
    std::vector<int64_t> lens;
    size_t nans;
  };
  const std::vector<Case> cases = {
      {"q: its row", 'q', 1, 5, 0, 3, false, {}, Dv},
      {"k in the first tile: every row", 'k', 0, 2, 1, 7, false, {}, Lq * Dv},
      {"k in the last tile, after a finite max", 'k', 0, 290, 1, 0, false, {}, Lq * Dv},
      {"v: its column of every row", 'v', 1, 150, 0, 9, false, {}, Lq},
      {"k past kv_len: nothing", 'k', 1, 250, 0, 1, false, {300, 200}, 0},
      {"v past kv_len: nothing", 'v', 1, 299, 1, 2, false, {300, 200}, 0},
      {"k inside kv_len", 'k', 1, 199, 1, 2, false, {300, 200}, Lq * Dv},
      {"causal k: rows at and after the key", 'k', 0, 40, 0, 5, true, {}, (Lq - 40) * Dv},
      {"causal v: rows at and after the key", 'v', 0, 40, 0, 5, true, {}, Lq - 40},
      {"causal v of a key no row sees", 'v', 0, 100, 0, 5, true, {}, 0},
      {"bias at a visible key: its row", 'b', 0, 9, 1, 30, false, {300, 300}, Dv},
      {"bias at a masked key: nothing", 'b', 1, 9, 1, 250, false, {300, 200}, 0},
  };
  for (DType dt : {DType::F32, DType::BF16}) {
    for (bool amx : {true, false}) {
      if (dt == DType::F32 && !amx) continue;  // f32 has one path
      cpu::attn::set_amx_enabled(amx);
      for (const Case& c : cases) {
        Tensor q = randn({B, Lq, H, D}, 40, dt), k = randn({B, Lk, H, D}, 41, dt), v = randn({B, Lk, H, Dv}, 42, dt);
        ops::AttentionOptions o;
        o.causal = c.causal;
        o.kv_lens = c.lens;
        if (c.operand == 'b' || dt == DType::F32) o.bias = randn({B, H, Lq, Lk}, 43, DType::F32, 0.5);
        if (c.operand == 'q') q = with_nan(q, c.b, c.l, c.h, c.d);
        if (c.operand == 'k') k = with_nan(k, c.b, c.l, c.h, c.d);
        if (c.operand == 'v') v = with_nan(v, c.b, c.l, c.h, c.d);
        if (c.operand == 'b') o.bias = with_nan(*o.bias, c.b, c.h, c.l, c.d);
        const std::string what = std::string(dtype_name(dt)) + (amx ? " " : " no-amx ") + c.what;
        const std::vector<double> ref = ref_attention(q, k, v, o);
        ASSERT_EQ(count_nan(ref), c.nans) << what << " (the reference)";
        const Tensor out = ops::attention(q, k, v, o);
        EXPECT_EQ(count_nan(out.to_f64_vector()), c.nans) << what;
        expect_close(out, ref, dt == DType::F32 ? 2e-5 : 1.0 / 64, dt == DType::F32 ? 2e-5 : 1.0 / 64, what);
      }
    }
  }
  cpu::attn::set_amx_enabled(true);
}

TEST(Attention, NanScoresEverywhereInARow) {
  // A whole score row NaN (a NaN q row: the case, the max never sees a
  // number) and a NaN in every key's k (every row).
  for (DType dt : {DType::F32, DType::BF16}) {
    Tensor q = randn({1, 20, 1, 32}, 44, dt), k = randn({1, 130, 1, 32}, 45, dt), v = randn({1, 130, 1, 32}, 46, dt);
    std::vector<double> qv = q.to_f64_vector();
    for (int64_t d = 0; d < 32; ++d) qv[static_cast<size_t>(3 * 32 + d)] = std::nan("");
    const Tensor qn = Tensor::from_f64(qv, q.shape(), dt);
    const std::vector<double> out = ops::attention(qn, k, v, {}).to_f64_vector();
    for (int64_t i = 0; i < 20; ++i)
      for (int64_t c = 0; c < 32; ++c)
        EXPECT_EQ(std::isnan(out[static_cast<size_t>(i * 32 + c)]), i == 3) << dtype_name(dt) << " row " << i;
    Tensor kn = k;
    for (int64_t j = 0; j < 130; ++j) kn = with_nan(kn, 0, j, 0, j % 32);
    EXPECT_EQ(count_nan(ops::attention(q, kn, v, {}).to_f64_vector()), 20u * 32u) << dtype_name(dt);
  }
}
