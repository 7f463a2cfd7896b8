#include <gtest/gtest.h>

#include <omp.h>

#include <cmath>
#include <cstring>
#include <functional>

#include "backend/ops.h"
#include "helpers.h"

using namespace vidax;
using namespace vidax::test;

namespace {

// Flat index into `in` (broadcast to `out`) of the out element at flat index f.
int64_t bcast_index(const Shape& out, const Shape& in, int64_t f) {
  int64_t idx = 0, mul = 1;
  for (size_t d = out.size(); d-- > 0;) {
    const int64_t i = f % out[d];
    f /= out[d];
    const size_t off = out.size() - in.size();
    if (d >= off) {
      const int64_t n = in[d - off];
      idx += (n == 1 ? 0 : i) * mul;
      mul *= n;
    }
  }
  return idx;
}

std::vector<double> ref_map(const Shape& out, const std::vector<const Tensor*>& ins,
                            const std::function<double(const std::vector<double>&)>& f) {
  std::vector<std::vector<double>> vals;
  for (const Tensor* t : ins) vals.push_back(t->to_f64_vector());
  std::vector<double> r(static_cast<size_t>(shape_numel(out)));
  std::vector<double> args(ins.size());
  for (int64_t i = 0; i < shape_numel(out); ++i) {
    for (size_t k = 0; k < ins.size(); ++k) args[k] = vals[k][static_cast<size_t>(bcast_index(out, ins[k]->shape(), i))];
    r[static_cast<size_t>(i)] = f(args);
  }
  return r;
}

}  // namespace

TEST(Elementwise, BinaryBroadcastsLikeTorch) {
  const Shape sa{3, 1, 17}, sb{5, 1};
  for (DType dt : {DType::F32, DType::BF16}) {
    Tensor a = randn(sa, 1, dt), b = uniform(sb, 2, 0.5, 2.0, dt);
    const Shape so{3, 5, 17};
    expect_close(ops::add(a, b), ref_map(so, {&a, &b}, [](auto& v) { return v[0] + v[1]; }), 1e-6, eps_of(dt), "add");
    expect_close(ops::sub(a, b), ref_map(so, {&a, &b}, [](auto& v) { return v[0] - v[1]; }), 1e-6, eps_of(dt), "sub");
    expect_close(ops::mul(a, b), ref_map(so, {&a, &b}, [](auto& v) { return v[0] * v[1]; }), 1e-6, eps_of(dt), "mul");
    expect_close(ops::div(a, b), ref_map(so, {&a, &b}, [](auto& v) { return v[0] / v[1]; }), 1e-6, eps_of(dt), "div");
    EXPECT_EQ(ops::add(a, b).dtype(), dt);
  }
  EXPECT_THROW(ops::add(randn({3, 4}, 1), randn({5}, 2)), Error);
}

TEST(Elementwise, StridedInputsAndMixedDtypes) {
  Tensor a = randn({13, 7}, 3).transpose(0, 1);  // [7, 13], non-contiguous
  Tensor b = randn({7, 13}, 4, DType::BF16);
  Tensor c = ops::add(a, b);
  EXPECT_EQ(c.dtype(), DType::F32);
  expect_close(c, ref_map({7, 13}, {&a, &b}, [](auto& v) { return v[0] + v[1]; }), 1e-6, 1e-6, "strided add");
  Tensor big = randn({3, 40000}, 5).slice(1, 1, 39999, 3);  // large, strided, > parallel threshold
  expect_close(ops::scale(big, -2.5), ref_map(big.shape(), {&big}, [](auto& v) { return -2.5 * v[0]; }), 0, 1e-7,
               "strided scale");
}

TEST(Elementwise, UnaryOpsMatchDoubleReference) {
  for (DType dt : {DType::F32, DType::BF16, DType::F16}) {
    Tensor x = randn({2, 3, 31}, 7, dt, 3.0);
    const Shape s = x.shape();
    const double tol = eps_of(dt);
    const double kBeta = std::sqrt(2.0 / M_PI);
    expect_close(ops::gelu(x, ops::GeluMode::Erf),
                 ref_map(s, {&x}, [](auto& v) { return 0.5 * v[0] * (1 + std::erf(v[0] / std::sqrt(2.0))); }), 1e-6,
                 tol, "gelu erf");
    expect_close(ops::gelu(x, ops::GeluMode::Tanh),
                 ref_map(s, {&x}, [&](auto& v) {
                   return 0.5 * v[0] * (1 + std::tanh(kBeta * (v[0] + 0.044715 * v[0] * v[0] * v[0])));
                 }),
                 1e-6, tol, "gelu tanh");
    expect_close(ops::silu(x), ref_map(s, {&x}, [](auto& v) { return v[0] / (1 + std::exp(-v[0])); }), 1e-6, tol, "silu");
    expect_close(ops::sigmoid(x), ref_map(s, {&x}, [](auto& v) { return 1 / (1 + std::exp(-v[0])); }), 1e-6, tol,
                 "sigmoid");
    expect_close(ops::tanh(x), ref_map(s, {&x}, [](auto& v) { return std::tanh(v[0]); }), 1e-6, tol, "tanh");
    expect_close(ops::sin(x), ref_map(s, {&x}, [](auto& v) { return std::sin(v[0]); }), 1e-6, tol, "sin");
    expect_close(ops::exp(x), ref_map(s, {&x}, [](auto& v) { return std::exp(v[0]); }), 1e-6, tol, "exp");
    // sqrt / log on positive values (x^2 + 0.01).
    const Tensor pos = ops::add_scalar(ops::mul(x, x), 0.01);
    expect_close(ops::sqrt(pos), ref_map(s, {&pos}, [](auto& v) { return std::sqrt(v[0]); }), 1e-6, tol, "sqrt");
    expect_close(ops::log(pos), ref_map(s, {&pos}, [](auto& v) { return std::log(v[0]); }), 1e-6, tol, "log");
    expect_close(ops::relu(x), ref_map(s, {&x}, [](auto& v) { return v[0] > 0 ? v[0] : 0.0; }), 0, 0, "relu");
    expect_close(ops::clamp(x, -1.0, 0.5), ref_map(s, {&x}, [](auto& v) { return std::clamp(v[0], -1.0, 0.5); }), 0,
                 tol, "clamp");
    expect_close(ops::add_scalar(x, 0.25), ref_map(s, {&x}, [](auto& v) { return v[0] + 0.25; }), 1e-6, tol,
                 "add_scalar");
  }
}

TEST(Elementwise, ClampAndReluKeepNaN) {
  Tensor x = Tensor::from_f32({NAN, -3, 3}, {3});
  auto c = ops::clamp(x, -1, 1).to_f32_vector();
  EXPECT_TRUE(std::isnan(c[0]));
  EXPECT_EQ(c[1], -1);
  EXPECT_EQ(c[2], 1);
  EXPECT_TRUE(std::isnan(ops::relu(x).to_f32_vector()[0]));
}

TEST(Elementwise, FusedDiTOps) {
  // x [B, L, D], shift/scale/gate [B, 1, D] (Wan's per-sample modulation).
  Tensor x = randn({2, 11, 19}, 8), shift = randn({2, 1, 19}, 9), sc = randn({2, 1, 19}, 10), y = randn({2, 11, 19}, 11);
  expect_close(ops::modulate(x, shift, sc),
               ref_map(x.shape(), {&x, &shift, &sc}, [](auto& v) { return v[0] * (1 + v[2]) + v[1]; }), 1e-6, 1e-6,
               "modulate");
  expect_close(ops::gated_residual(x, sc, y),
               ref_map(x.shape(), {&x, &sc, &y}, [](auto& v) { return v[0] + v[1] * v[2]; }), 1e-6, 1e-6,
               "gated_residual");
  expect_close(ops::axpby(0.3, x, -1.7, y),
               ref_map(x.shape(), {&x, &y}, [](auto& v) { return 0.3 * v[0] - 1.7 * v[1]; }), 1e-6, 1e-6, "axpby");
  EXPECT_THROW(ops::modulate(x, randn({2, 3, 19}, 1), sc), Error);  // shift would grow x
}

TEST(Elementwise, F64StaysF64) {
  Tensor a = Tensor::from_f64({1.0 + 1e-12, 2.0}, {2}), b = Tensor::from_f64({1e-12, 1e-13}, {2});
  auto r = ops::add(a, b).to_f64_vector();
  EXPECT_EQ(r[0], (1.0 + 1e-12) + 1e-12);
  EXPECT_EQ(r[1], 2.0 + 1e-13);
}

TEST(Elementwise, AllFinite) {
  Tensor x = randn({3, 50001}, 12);
  EXPECT_TRUE(ops::all_finite(x));
  x.data<float>()[3 * 50001 - 1] = INFINITY;
  EXPECT_FALSE(ops::all_finite(x));
  Tensor h = Tensor::from_f32({1, NAN}, {2}, DType::BF16);
  EXPECT_FALSE(ops::all_finite(h));
}

TEST(Elementwise, TranscendentalsAccurateOverTheRange) {
  // Dense sweep plus special values: the vector paths stay within a few ulp of
  // the double result and keep IEEE edge cases.
  std::vector<float> xs;
  for (int i = -200000; i <= 200000; ++i) xs.push_back(static_cast<float>(i) * 1e-4f);  // [-20, 20]
  for (float v : {0.0f, -0.0f, 1e-30f, -1e-30f, 1e-8f, 0.624f, 0.626f, -0.625f, 88.0f, 89.0f, -88.0f, -104.0f, 200.0f,
                  -200.0f, INFINITY, -INFINITY})
    xs.push_back(v);
  Tensor x = Tensor::from_f32(xs, {static_cast<int64_t>(xs.size())});
  const double kBeta = std::sqrt(2.0 / M_PI);
  struct Case {
    const char* name;
    Tensor got;
    std::function<double(double)> ref;
  };
  const std::vector<Case> cases = {
      {"tanh", ops::tanh(x), [](double v) { return std::tanh(v); }},
      {"sigmoid", ops::sigmoid(x), [](double v) { return 1 / (1 + std::exp(-v)); }},
      {"silu", ops::silu(x), [](double v) { return v / (1 + std::exp(-v)); }},
      {"gelu_tanh", ops::gelu(x, ops::GeluMode::Tanh),
       [&](double v) { return 0.5 * v * (1 + std::tanh(kBeta * (v + 0.044715 * v * v * v))); }},
      {"gelu_erf", ops::gelu(x, ops::GeluMode::Erf), [](double v) { return 0.5 * v * (1 + std::erf(v * M_SQRT1_2)); }},
  };
  for (const Case& c : cases) {
    const auto g = c.got.to_f64_vector();
    int bad = 0;
    for (size_t i = 0; i < xs.size(); ++i) {
      const double r = c.ref(xs[i]);
      if (std::isnan(r)) {
        if (!std::isnan(g[i]) && ++bad <= 3) ADD_FAILURE() << c.name << "(" << xs[i] << ") = " << g[i] << ", want NaN";
        continue;
      }
      if (std::isinf(r)) {
        if (g[i] != r && ++bad <= 3) ADD_FAILURE() << c.name << "(" << xs[i] << ") = " << g[i] << ", want " << r;
        continue;
      }
      // gelu: 1 + tanh(u) is formed in f32 as torch does, so its absolute error is ulp(1), times x/2.
      const double slack = std::string(c.name).starts_with("gelu") ? 6e-8 * std::fabs(xs[i]) : 0.0;
      if (std::fabs(g[i] - r) > 4e-7 * std::fabs(r) + slack + 1e-30 && ++bad <= 3)
        ADD_FAILURE() << c.name << "(" << xs[i] << ") = " << g[i] << ", want " << r;
    }
    EXPECT_EQ(bad, 0) << c.name;
  }
  EXPECT_TRUE(std::isnan(ops::tanh(Tensor::from_f32({NAN}, {1})).to_f32_vector()[0]));
  EXPECT_TRUE(std::isnan(ops::sigmoid(Tensor::from_f32({NAN}, {1})).to_f32_vector()[0]));
}

// ---- vector paths: bf16 conversion, fused DiT ops, row tails, threads ------------------

namespace {

Tensor from_bits32(const std::vector<uint32_t>& bits) {
  Tensor t = Tensor::empty({static_cast<int64_t>(bits.size())}, DType::F32);
  std::memcpy(t.data_ptr(), bits.data(), bits.size() * 4);
  return t;
}

}  // namespace

// The vector f32 <-> bf16 conversions give the scalar conversions' bits (core/dtype.h): RNE with
// ties to even, denormals kept (not flushed), overflow to inf, every NaN -> 0xffff; widening exact.
TEST(Elementwise, Bf16VectorConversionsMatchScalar) {
  std::vector<uint32_t> bits = {0x00000000u, 0x80000000u, 0x00000001u, 0x807fffffu, 0x00008000u, 0x00018000u,
                                0x3f808000u, 0x3f818000u, 0x3f7fffffu, 0x7f7fffffu, 0xff7f8000u, 0x7f800000u,
                                0xff800000u, 0x7f800001u, 0xffc00000u, 0x7fbfffffu, 0x3f800000u, 0x00800000u};
  uint32_t s = 12345;
  for (int i = 0; i < 100000; ++i) bits.push_back(s = s * 1664525u + 1013904223u);  // every class of f32
  for (size_t n : {bits.size(), size_t{1}, size_t{17}}) {
    const std::vector<uint32_t> part(bits.begin(), bits.begin() + static_cast<int64_t>(n));
    const Tensor h = ops::cast(from_bits32(part), DType::BF16);
    const uint16_t* hp = static_cast<const uint16_t*>(h.data_ptr());
    int bad = 0;
    for (size_t i = 0; i < n; ++i) {
      float f;
      std::memcpy(&f, &part[i], 4);
      if (hp[i] != f32_to_bf16(f) && ++bad <= 3)
        ADD_FAILURE() << std::hex << "f32 bits 0x" << part[i] << " -> 0x" << hp[i] << ", want 0x" << f32_to_bf16(f);
    }
    EXPECT_EQ(bad, 0);
  }
  Tensor all = Tensor::empty({65536}, DType::BF16);
  for (uint32_t i = 0; i < 65536; ++i) static_cast<uint16_t*>(all.data_ptr())[i] = static_cast<uint16_t>(i);
  const Tensor wide = ops::cast(all, DType::F32);
  for (uint32_t i = 0; i < 65536; ++i) {
    uint32_t w;
    std::memcpy(&w, static_cast<const char*>(wide.data_ptr()) + 4 * i, 4);
    ASSERT_EQ(w, i << 16) << "bf16 0x" << std::hex << i;
  }
}

// gated_residual and modulate round like the reference's separate f32 ops (no FMA): bit-exact
// against an f32 emulation, with a bf16 y read directly (= casting it first), broadcast
// [B, 1, D] operands and row lengths that are not multiples of 16.
TEST(Elementwise, FusedDiTOpsRoundLikeSeparateF32Ops) {
  for (int64_t D : {1, 17, 33, 1536}) {
    const Tensor x = randn({2, 11, D}, 20), gate = randn({2, 1, D}, 21), y = randn({2, 11, D}, 22, DType::BF16);
    const Tensor sh = randn({2, 1, D}, 23), sc = randn({2, 1, D}, 24);
    const Tensor zero = Tensor::zeros(x.shape(), DType::F32);
    const auto xv = x.to_f32_vector(), yv = y.to_f32_vector();
    const auto gv = ops::add(zero, gate).to_f32_vector(), shv = ops::add(zero, sh).to_f32_vector(),
               scv = ops::add(zero, sc).to_f32_vector();
    const Tensor gr = ops::gated_residual(x, gate, y), md = ops::modulate(x, sh, sc);
    EXPECT_TRUE(same_bits(gr, ops::gated_residual(x, gate, ops::cast(y, DType::F32)))) << D;
    const auto grv = gr.to_f32_vector(), mdv = md.to_f32_vector();
    int bad = 0;
    for (size_t i = 0; i < xv.size(); ++i) {
      volatile float p = gv[i] * yv[i];
      const float want_gr = xv[i] + p;
      volatile float onep = 1.0f + scv[i];
      volatile float q = xv[i] * onep;
      const float want_md = q + shv[i];
      if ((grv[i] != want_gr || mdv[i] != want_md) && ++bad <= 3)
        ADD_FAILURE() << "D=" << D << " element " << i << ": gated_residual " << grv[i] << " want " << want_gr
                      << ", modulate " << mdv[i] << " want " << want_md;
    }
    EXPECT_EQ(bad, 0) << D;
    // bf16 output: one rounding of the f32 result.
    EXPECT_TRUE(same_bits(ops::modulate(ops::cast(x, DType::BF16), sh, sc),
                          ops::cast(ops::modulate(ops::cast(ops::cast(x, DType::BF16), DType::F32), sh, sc), DType::BF16)));
  }
}

// bf16 in and out through the vector loads/stores: every row tail length (1..17, kChunk + 1).
TEST(Elementwise, Bf16RowsOfEveryTailLength) {
  const double kBeta = std::sqrt(2.0 / M_PI);
  for (int64_t n : {1, 2, 7, 15, 16, 17, 31, 4097}) {
    const Tensor x = randn({3, n}, static_cast<uint32_t>(30 + n), DType::BF16, 3.0);
    const Tensor g = ops::gelu(x, ops::GeluMode::Tanh), e = ops::gelu(x, ops::GeluMode::Erf), s = ops::silu(x);
    ASSERT_EQ(g.dtype(), DType::BF16);
    const std::string what = " n=" + std::to_string(n);
    expect_close(g, ref_map(x.shape(), {&x}, [&](auto& v) {
                   return 0.5 * v[0] * (1 + std::tanh(kBeta * (v[0] + 0.044715 * v[0] * v[0] * v[0])));
                 }), 1e-6, 1.0 / 256, "gelu tanh" + what);
    expect_close(e, ref_map(x.shape(), {&x}, [](auto& v) { return 0.5 * v[0] * (1 + std::erf(v[0] * M_SQRT1_2)); }),
                 1e-6, 1.0 / 256, "gelu erf" + what);
    expect_close(s, ref_map(x.shape(), {&x}, [](auto& v) { return v[0] / (1 + std::exp(-v[0])); }), 1e-6, 1.0 / 256,
                 "silu" + what);
    const Tensor y = randn({3, n}, 40, DType::BF16);
    expect_close(ops::add(x, y), ref_map(x.shape(), {&x, &y}, [](auto& v) { return v[0] + v[1]; }), 1e-6, 1.0 / 256,
                 "add" + what);
  }
}

// Elementwise chunks are independent: the same bits on 1, 2 and 3 threads.
TEST(Elementwise, BitIdenticalAcrossThreadCounts) {
  const Tensor x = randn({4, 300, 97}, 50, DType::BF16, 3.0), gate = randn({4, 1, 97}, 51), y = randn({4, 300, 97}, 52);
  auto run = [&] {
    return std::vector<Tensor>{ops::gelu(x, ops::GeluMode::Tanh), ops::gelu(x, ops::GeluMode::Erf), ops::silu(x),
                               ops::gated_residual(y, gate, x), ops::modulate(x, gate, gate), ops::add(y, x)};
  };
  expect_bit_identical_across_threads(run);
}
