// A backend that writes only the core op set (backend.h) runs every op: the
// fused ops' defaults decompose into core ops. MinimalBackend computes each core
// op with the CPU backend's kernel, staging device inputs through host memory,
// so it runs (a) on the host, in place of the CPU backend (the profiler's
// interceptor hook), where a Wan DiT golden runs through it, and (b) on a fake
// device whose memory the host cannot read (tests/backend/fake_device.h), where
// every op's output is allocated through the registered DeviceMemory.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <filesystem>
#include <map>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"
#include "backend/fake_device.h"
#include "backend/helpers.h"
#include "backend/ops.h"
#include "io/checkpoint.h"
#include "models/wan/dit_parity.h"
#include "wan_dit/helpers.h"

using namespace vidax;
using namespace vidax::test;

namespace {

Tensor host(const Tensor& t) { return t.device() == Device::CPU ? t : t.to_host(); }
std::optional<Tensor> host(const std::optional<Tensor>& t) { return t ? std::optional<Tensor>(host(*t)) : t; }
std::vector<Tensor> host(const std::vector<Tensor>& ts) {
  std::vector<Tensor> out;
  for (const Tensor& t : ts) out.push_back(host(t));
  return out;
}

// The output on the host: `out` itself when it is host memory, else a staging tensor
// copied into `out` by done().
class HostOut {
 public:
  explicit HostOut(Tensor& out) : out_(out), h_(out.device() == Device::CPU ? out : Tensor::empty(out.shape(), out.dtype())) {}
  Tensor& t() { return h_; }
  void done() {
    if (out_.device() != Device::CPU) copy_into(h_, out_);
  }

 private:
  Tensor& out_;
  Tensor h_;
};

class MinimalBackend final : public Backend {
 public:
  const char* name() const override { return "minimal"; }
  std::map<std::string, int> calls;  // core ops run

#define VIDAX_CORE(name_, call)     \
  {                                 \
    ++calls[name_];                 \
    HostOut h(o);                   \
    cpu::cpu_backend().call;        \
    h.done();                       \
  }
  void copy(const Tensor& x, Tensor& o) override VIDAX_CORE("copy", copy(host(x), h.t()))
  void cast(const Tensor& x, Tensor& o) override VIDAX_CORE("cast", cast(host(x), h.t()))
  void concat(const std::vector<Tensor>& xs, int64_t dim, Tensor& o) override
      VIDAX_CORE("concat", concat(host(xs), dim, h.t()))
  void pad(const Tensor& x, const std::vector<int64_t>& pads, ops::PadMode mode, Tensor& o) override
      VIDAX_CORE("pad", pad(host(x), pads, mode, h.t()))
  void embedding(const Tensor& ids, const Tensor& table, Tensor& o) override
      VIDAX_CORE("embedding", embedding(host(ids), host(table), h.t()))
  void add(const Tensor& a, const Tensor& b, Tensor& o) override VIDAX_CORE("add", add(host(a), host(b), h.t()))
  void sub(const Tensor& a, const Tensor& b, Tensor& o) override VIDAX_CORE("sub", sub(host(a), host(b), h.t()))
  void mul(const Tensor& a, const Tensor& b, Tensor& o) override VIDAX_CORE("mul", mul(host(a), host(b), h.t()))
  void div(const Tensor& a, const Tensor& b, Tensor& o) override VIDAX_CORE("div", div(host(a), host(b), h.t()))
  void scale(const Tensor& x, double alpha, Tensor& o) override VIDAX_CORE("scale", scale(host(x), alpha, h.t()))
  void add_scalar(const Tensor& x, double alpha, Tensor& o) override
      VIDAX_CORE("add_scalar", add_scalar(host(x), alpha, h.t()))
  void clamp(const Tensor& x, double lo, double hi, Tensor& o) override
      VIDAX_CORE("clamp", clamp(host(x), lo, hi, h.t()))
  void gelu(const Tensor& x, ops::GeluMode mode, Tensor& o) override VIDAX_CORE("gelu", gelu(host(x), mode, h.t()))
  void silu(const Tensor& x, Tensor& o) override VIDAX_CORE("silu", silu(host(x), h.t()))
  void sigmoid(const Tensor& x, Tensor& o) override VIDAX_CORE("sigmoid", sigmoid(host(x), h.t()))
  void tanh(const Tensor& x, Tensor& o) override VIDAX_CORE("tanh", tanh(host(x), h.t()))
  void sin(const Tensor& x, Tensor& o) override VIDAX_CORE("sin", sin(host(x), h.t()))
  void exp(const Tensor& x, Tensor& o) override VIDAX_CORE("exp", exp(host(x), h.t()))
  void sqrt(const Tensor& x, Tensor& o) override VIDAX_CORE("sqrt", sqrt(host(x), h.t()))
  void log(const Tensor& x, Tensor& o) override VIDAX_CORE("log", log(host(x), h.t()))
  void relu(const Tensor& x, Tensor& o) override VIDAX_CORE("relu", relu(host(x), h.t()))
  void layer_norm(const Tensor& x, const std::optional<Tensor>& w, const std::optional<Tensor>& b, double eps,
                  Tensor& o) override VIDAX_CORE("layer_norm", layer_norm(host(x), host(w), host(b), eps, h.t()))
  void rms_norm_with_sum_sq(const Tensor& x, const Tensor& ss, int64_t count, const std::optional<Tensor>& w,
                            double eps, Tensor& o) override
      VIDAX_CORE("rms_norm_with_sum_sq", rms_norm_with_sum_sq(host(x), host(ss), count, host(w), eps, h.t()))
  void l2_normalize(const Tensor& x, int64_t dim, double eps, Tensor& o) override
      VIDAX_CORE("l2_normalize", l2_normalize(host(x), dim, eps, h.t()))
  void group_norm(const Tensor& x, int64_t groups, const std::optional<Tensor>& w, const std::optional<Tensor>& b,
                  double eps, Tensor& o) override
      VIDAX_CORE("group_norm", group_norm(host(x), groups, host(w), host(b), eps, h.t()))
  void softmax(const Tensor& x, int64_t dim, Tensor& o) override VIDAX_CORE("softmax", softmax(host(x), dim, h.t()))
  void sum(const Tensor& x, int64_t dim, Tensor& o) override VIDAX_CORE("sum", sum(host(x), dim, h.t()))
  void mean(const Tensor& x, int64_t dim, Tensor& o) override VIDAX_CORE("mean", mean(host(x), dim, h.t()))
  bool all_finite(const Tensor& x) override {
    ++calls["all_finite"];
    return cpu::cpu_backend().all_finite(host(x));
  }
  void linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, Tensor& o) override
      VIDAX_CORE("linear", linear(host(x), host(w), host(b), h.t()))
  void matmul(const Tensor& a, const Tensor& b, Tensor& o) override
      VIDAX_CORE("matmul", matmul(host(a), host(b), h.t()))
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt,
                 Tensor& o) override {
    ops::AttentionOptions hopt = opt;
    hopt.bias = host(opt.bias);
    VIDAX_CORE("attention", attention(host(q), host(k), host(v), hopt, h.t()))
  }
  void rope(const Tensor& x, const Tensor& cos, const Tensor& sin, ops::RopeMode mode, Tensor& o) override
      VIDAX_CORE("rope", rope(host(x), host(cos), host(sin), mode, h.t()))
  void conv3d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, std::array<int64_t, 3> stride,
              std::array<int64_t, 3> padding, Tensor& o) override
      VIDAX_CORE("conv3d", conv3d(host(x), host(w), host(b), stride, padding, h.t()))
  void conv2d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, std::array<int64_t, 2> stride,
              std::array<int64_t, 2> padding, Tensor& o) override
      VIDAX_CORE("conv2d", conv2d(host(x), host(w), host(b), stride, padding, h.t()))
  void upsample_nearest(const Tensor& x, const std::vector<int64_t>& factors, Tensor& o) override
      VIDAX_CORE("upsample_nearest", upsample_nearest(host(x), factors, h.t()))
#undef VIDAX_CORE
};

// Runs every op on the host through `be` (the interceptor) for the scope.
struct Intercept {
  explicit Intercept(Backend& be) { set_cpu_backend_interceptor(&be); }
  ~Intercept() { set_cpu_backend_interceptor(nullptr); }
};

// Registers `be` and a fake memory as Device::CUDA's for the scope.
struct FakeDeviceBackend {
  ScopedFakeDevice fake;
  explicit FakeDeviceBackend(Backend& be) { register_backend(Device::CUDA, &be); }
  ~FakeDeviceBackend() { register_backend(Device::CUDA, nullptr); }
};

void expect_bitwise_equal(const Tensor& got, const Tensor& want, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const Tensor g = got.contiguous(), w = want.contiguous();
  EXPECT_EQ(std::memcmp(g.data_ptr(), w.data_ptr(), w.nbytes()), 0) << what << ": not bit-identical";
}

double ulp_of(DType t) {
  switch (t) {
    case DType::BF16: return std::ldexp(1.0, -8);
    case DType::F16: return std::ldexp(1.0, -11);
    case DType::F64: return std::ldexp(1.0, -53);
    default: return std::ldexp(1.0, -24);
  }
}

// The contract of backend.h: the output's rounding of the kernel's value, plus one rounding of
// the compute dtype per intermediate term (`terms`: per element, the sum of the magnitudes of
// the terms a kernel may contract into an FMA; empty: none), with ulp the unit roundoff.
void expect_within_contract(const Tensor& got, const Tensor& want, const std::vector<double>& terms,
                            const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  const DType compute = want.dtype() == DType::F64 ? DType::F64 : DType::F32;
  const std::vector<double> g = got.to_f64_vector(), w = want.to_f64_vector();
  int bad = 0, differ = 0;
  for (size_t i = 0; i < w.size(); ++i) {
    if (g[i] != w[i]) ++differ;
    const double tol = 2 * ulp_of(want.dtype()) * std::fabs(w[i]) + 2 * ulp_of(compute) * (terms.empty() ? 0 : terms[i]);
    if (std::fabs(g[i] - w[i]) > tol && bad++ < 3)
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", the CPU kernel's " << w[i];
  }
  std::printf("  %-36s %zu elements, %d differ from the fused kernel\n", what.c_str(), w.size(), differ);
}

// |a x| + |b y| per element (axpby's two products).
std::vector<double> axpby_terms(double a, const Tensor& x, double b, const Tensor& y) {
  std::vector<double> xv = x.to_f64_vector(), yv = y.to_f64_vector();
  for (size_t i = 0; i < xv.size(); ++i) xv[i] = std::fabs(a * xv[i]) + std::fabs(b * yv[i]);
  return xv;
}

// One fused op on the CPU backend, through MinimalBackend on the host, and through it on
// the fake device: host and device agree bit for bit, and both agree with the kernel within
// the rounding contract (bit for bit where the default rounds as the kernel does).
struct FusedCase {
  std::string name;
  std::vector<Tensor> inputs;
  std::function<Tensor(const std::vector<Tensor>&)> run;
  bool exact = true;
  std::vector<double> terms = {};  // see expect_within_contract
};

std::vector<FusedCase> fused_cases() {
  std::vector<FusedCase> c;
  const Tensor x = randn({2, 5, 48}, 1), xb = randn({2, 5, 48}, 1, DType::BF16);
  const Tensor shift = randn({2, 1, 48}, 2, DType::F32, 0.3), scale = randn({2, 1, 48}, 3, DType::F32, 0.3);
  c.push_back({"modulate f32", {x, shift, scale}, [](auto& t) { return ops::modulate(t[0], t[1], t[2]); }});
  c.push_back({"modulate bf16", {xb, shift, scale}, [](auto& t) { return ops::modulate(t[0], t[1], t[2]); }});
  c.push_back({"gated_residual", {x, scale, xb}, [](auto& t) { return ops::gated_residual(t[0], t[1], t[2]); }});
  const Tensor y = randn({2, 5, 48}, 4), x64 = randn({7, 3}, 5, DType::F64), y64 = randn({7, 3}, 6, DType::F64);
  c.push_back({"axpby f32", {x, y}, [](auto& t) { return ops::axpby(0.7, t[0], -1.3, t[1]); }, false,
               axpby_terms(0.7, x, -1.3, y)});
  c.push_back({"axpby f64", {x64, y64}, [](auto& t) { return ops::axpby(0.7, t[0], -1.3, t[1]); }, false,
               axpby_terms(0.7, x64, -1.3, y64)});
  c.push_back({"layer_norm_modulate", {x, shift, scale},
               [](auto& t) { return ops::layer_norm_modulate(t[0], t[1], t[2], 1e-6); }, false});
  c.push_back({"layer_norm_modulate bf16 out", {x, shift, scale},
               [](auto& t) { return ops::layer_norm_modulate(t[0], t[1], t[2], 1e-6, DType::BF16); }, false});
  c.push_back({"rms_norm", {x, randn({48}, 7)}, [](auto& t) { return ops::rms_norm(t[0], t[1], 1e-6); }, false});
  c.push_back({"rms_norm bf16", {xb, randn({48}, 7)}, [](auto& t) { return ops::rms_norm(t[0], t[1], 1e-6); }, false});
  const Tensor w = randn({40, 48}, 8, DType::F32, 0.15), b = randn({40}, 9);
  c.push_back({"linear_gelu", {x, w, b},
               [](auto& t) { return ops::linear_gelu(t[0], t[1], t[2], ops::GeluMode::Tanh); }});
  c.push_back({"linear_gated_residual", {x, w, b, randn({2, 5, 40}, 10), randn({2, 1, 40}, 11)},
               [](auto& t) { return ops::linear_gated_residual(t[0], t[1], t[2], t[3], t[4]); }});
  const Tensor v = randn({1, 6, 3, 5, 7}, 12), wc = randn({4, 6, 3, 3, 3}, 13, DType::F32, 0.1);
  c.push_back({"causal_conv3d", {v.slice(2, 0, 1), v.slice(2, 1, 3), wc, randn({4}, 14), randn({1, 4, 3, 5, 7}, 15)},
               [](auto& t) {
                 return ops::causal_conv3d({t[0], t[1]}, t[2], t[3], {1, 1, 1}, {2, 1, 1}, t[4]);
               }, false});
  c.push_back({"l2_norm_scale_silu", {v, randn({6}, 16)},
               [](auto& t) { return ops::l2_norm_scale_silu(t[0], t[1].reshape({6, 1, 1, 1}), std::sqrt(6.0)); }});
  c.push_back({"pixel_shuffle3d", {randn({1, 24, 2, 3, 4}, 17)},
               [](auto& t) { return ops::pixel_shuffle3d(t[0], {2, 3, 2}); }});
  c.push_back({"pixel_unshuffle3d", {randn({1, 2, 4, 6, 4}, 18).permute({0, 1, 2, 4, 3})},  // a strided input
               [](auto& t) { return ops::pixel_unshuffle3d(t[0], {2, 2, 3}); }});
  return c;
}

}  // namespace

TEST(MinimalBackend, EveryFusedOpRunsThroughItsDefaultWithinTheRoundingContract) {
  for (const FusedCase& c : fused_cases()) {
    const Tensor want = c.run(c.inputs);  // the CPU backend's fused kernels
    MinimalBackend minimal;
    Tensor on_host;
    {
      Intercept via(minimal);
      on_host = c.run(c.inputs);
    }
    EXPECT_GT(minimal.calls.size(), 0u) << c.name;
    if (c.exact) expect_bitwise_equal(on_host, want, c.name);
    expect_within_contract(on_host, want, c.terms, c.name + " (host)");

    Tensor on_device;
    {
      FakeDeviceBackend dev(minimal);
      std::vector<Tensor> d;
      for (const Tensor& t : c.inputs) d.push_back(to_fake_device(t));
      on_device = c.run(d);
      EXPECT_EQ(on_device.device(), Device::CUDA) << c.name;
      EXPECT_GT(dev.fake.memory.allocations, static_cast<int>(c.inputs.size())) << c.name;  // outputs on the device
      on_device = on_device.to_host();
    }
    expect_bitwise_equal(on_device, on_host, c.name + " (device)");  // the same core ops, wherever their memory is
  }
}

// The whole tiny Wan DiT golden (fp32) through the core op set only: the parity bound, and the
// CPU backend's values bit for bit (every default the DiT reaches rounds as its kernel does).
TEST(MinimalBackend, RunsTheTinyWanDiTGolden) {
  const std::string path = (wan_dit_test::golden_dir() / "wan_dit_tiny.safetensors").string();
  const io::Checkpoint file = io::Checkpoint::open(path);
  const auto config = nlohmann::json::parse(file.metadata().at("config"));
  const std::map<std::string, Tensor> cpu = wan::run_dit_golden(file, config, "fp32", path);
  MinimalBackend minimal;
  std::map<std::string, Tensor> produced;
  {
    Intercept via(minimal);
    produced = wan::run_dit_golden(file, config, "fp32", path);
  }
  EXPECT_GT(minimal.calls["linear"], 0);
  EXPECT_GT(minimal.calls["attention"], 0);
  EXPECT_GT(minimal.calls["rms_norm_with_sum_sq"], 0);  // rms_norm's default
  int compared = 0;
  for (const std::string& name : file.names()) {
    if (name.rfind("output", 0) != 0 && name.rfind("inter.", 0) != 0) continue;
    auto it = produced.find(name);
    if (it == produced.end()) continue;
    const wan_dit_test::Diff ref = wan_dit_test::diff(file.get(name), it->second);
    const wan_dit_test::Diff vs_cpu = wan_dit_test::diff(cpu.at(name), it->second);
    std::printf("  %-32s rel_l2 vs reference %.3g, vs the CPU backend %.3g\n", name.c_str(), ref.rel_l2, vs_cpu.rel_l2);
    EXPECT_LE(ref.rel_l2, 1e-5) << name;
    EXPECT_EQ(vs_cpu.max_abs, 0.0) << name;
    ++compared;
  }
  EXPECT_GE(compared, 2);
}
