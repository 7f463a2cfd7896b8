#include "pipeline/bench_profile.h"

#include <time.h>

#include <chrono>

#include "backend/backend.h"
#include "backend/cpu/cpu_backend.h"

namespace vidax::pipeline {

namespace {

double wall_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
double cpu_now() {
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) + 1e-9 * static_cast<double>(ts.tv_nsec);
}

// Adds the duration of its scope to one op's entry.
class Timer {
 public:
  Timer(OpProfile& p, const char* op, double flops = 0)
      : p_(p), op_(op), flops_(flops), w0_(wall_now()), c0_(cpu_now()) {}
  ~Timer() {
    OpTime& t = p_.ops[op_];
    t.calls += 1;
    t.flops += flops_;
    t.wall += wall_now() - w0_;
    t.cpu += cpu_now() - c0_;
  }

 private:
  OpProfile& p_;
  const char* op_;
  double flops_;
  double w0_, c0_;
};

// 2 FLOPs per multiply-add: `out` elements, each a dot product of `k` terms.
double gemm_flops(const Tensor& out, int64_t k) {
  return 2.0 * static_cast<double>(out.numel()) * static_cast<double>(k);
}

// q [B, Lq, H, D], k [B, Lk, H, D], v [B, Lk, H, Dv]: q k^T and p v over the keys each batch
// attends to (kv_lens; all Lk without it).
double attention_flops(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt) {
  if (q.dim() != 4 || k.dim() != 4 || v.dim() != 4) return 0;
  const int64_t B = q.size(0), Lk = k.size(1);
  double keys = 0;
  for (int64_t b = 0; b < B; ++b)
    keys += static_cast<double>(b < static_cast<int64_t>(opt.kv_lens.size()) ? std::min(opt.kv_lens[b], Lk) : Lk);
  return 2.0 * keys * static_cast<double>(q.size(1) * q.size(2)) * static_cast<double>(q.size(3) + v.size(3));
}

// Forwards every op to the CPU backend, timed (generated from backend.h's list).
class TimingBackend final : public Backend {
 public:
  explicit TimingBackend(OpProfile& p) : p_(p), cpu_(cpu::cpu_backend()) {}
  const char* name() const override { return "cpu (timed)"; }
  bool all_finite(const Tensor& x) override {
    Timer t(p_, "all_finite");
    return cpu_.all_finite(x);
  }
  void copy(const Tensor& x, Tensor& out) override {
    Timer t(p_, "copy");
    cpu_.copy(x, out);
  }
  void cast(const Tensor& x, Tensor& out) override {
    Timer t(p_, "cast");
    cpu_.cast(x, out);
  }
  void concat(const std::vector<Tensor>& xs, int64_t dim, Tensor& out) override {
    Timer t(p_, "concat");
    cpu_.concat(xs, dim, out);
  }
  void pad(const Tensor& x, const std::vector<int64_t>& pads, ops::PadMode mode, Tensor& out) override {
    Timer t(p_, "pad");
    cpu_.pad(x, pads, mode, out);
  }
  void embedding(const Tensor& ids, const Tensor& table, Tensor& out) override {
    Timer t(p_, "embedding");
    cpu_.embedding(ids, table, out);
  }
  void add(const Tensor& a, const Tensor& b, Tensor& out) override {
    Timer t(p_, "add");
    cpu_.add(a, b, out);
  }
  void sub(const Tensor& a, const Tensor& b, Tensor& out) override {
    Timer t(p_, "sub");
    cpu_.sub(a, b, out);
  }
  void mul(const Tensor& a, const Tensor& b, Tensor& out) override {
    Timer t(p_, "mul");
    cpu_.mul(a, b, out);
  }
  void div(const Tensor& a, const Tensor& b, Tensor& out) override {
    Timer t(p_, "div");
    cpu_.div(a, b, out);
  }
  void scale(const Tensor& x, double alpha, Tensor& out) override {
    Timer t(p_, "scale");
    cpu_.scale(x, alpha, out);
  }
  void add_scalar(const Tensor& x, double alpha, Tensor& out) override {
    Timer t(p_, "add_scalar");
    cpu_.add_scalar(x, alpha, out);
  }
  void axpby(double a, const Tensor& x, double b, const Tensor& y, Tensor& out) override {
    Timer t(p_, "axpby");
    cpu_.axpby(a, x, b, y, out);
  }
  void clamp(const Tensor& x, double lo, double hi, Tensor& out) override {
    Timer t(p_, "clamp");
    cpu_.clamp(x, lo, hi, out);
  }
  void gelu(const Tensor& x, ops::GeluMode mode, Tensor& out) override {
    Timer t(p_, "gelu");
    cpu_.gelu(x, mode, out);
  }
  void silu(const Tensor& x, Tensor& out) override {
    Timer t(p_, "silu");
    cpu_.silu(x, out);
  }
  void sigmoid(const Tensor& x, Tensor& out) override {
    Timer t(p_, "sigmoid");
    cpu_.sigmoid(x, out);
  }
  void tanh(const Tensor& x, Tensor& out) override {
    Timer t(p_, "tanh");
    cpu_.tanh(x, out);
  }
  void sin(const Tensor& x, Tensor& out) override {
    Timer t(p_, "sin");
    cpu_.sin(x, out);
  }
  void exp(const Tensor& x, Tensor& out) override {
    Timer t(p_, "exp");
    cpu_.exp(x, out);
  }
  void sqrt(const Tensor& x, Tensor& out) override {
    Timer t(p_, "sqrt");
    cpu_.sqrt(x, out);
  }
  void log(const Tensor& x, Tensor& out) override {
    Timer t(p_, "log");
    cpu_.log(x, out);
  }
  void relu(const Tensor& x, Tensor& out) override {
    Timer t(p_, "relu");
    cpu_.relu(x, out);
  }
  void modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, Tensor& out) override {
    Timer t(p_, "modulate");
    cpu_.modulate(x, shift, scale, out);
  }
  void gated_residual(const Tensor& x, const Tensor& gate, const Tensor& y, Tensor& out) override {
    Timer t(p_, "gated_residual");
    cpu_.gated_residual(x, gate, y, out);
  }
  void layer_norm(const Tensor& x, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, double eps, Tensor& out) override {
    Timer t(p_, "layer_norm");
    cpu_.layer_norm(x, weight, bias, eps, out);
  }
  void rms_norm(const Tensor& x, const std::optional<Tensor>& weight, double eps, Tensor& out) override {
    Timer t(p_, "rms_norm");
    cpu_.rms_norm(x, weight, eps, out);
  }
  void rms_norm_with_sum_sq(const Tensor& x, const Tensor& sum_sq, int64_t count, const std::optional<Tensor>& weight,
                            double eps, Tensor& out) override {
    Timer t(p_, "rms_norm_with_sum_sq");
    cpu_.rms_norm_with_sum_sq(x, sum_sq, count, weight, eps, out);
  }
  void layer_norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps, Tensor& out) override {
    Timer t(p_, "layer_norm_modulate");
    cpu_.layer_norm_modulate(x, shift, scale, eps, out);
  }
  void l2_normalize(const Tensor& x, int64_t dim, double eps, Tensor& out) override {
    Timer t(p_, "l2_normalize");
    cpu_.l2_normalize(x, dim, eps, out);
  }
  void group_norm(const Tensor& x, int64_t groups, const std::optional<Tensor>& weight, const std::optional<Tensor>& bias, double eps, Tensor& out) override {
    Timer t(p_, "group_norm");
    cpu_.group_norm(x, groups, weight, bias, eps, out);
  }
  void softmax(const Tensor& x, int64_t dim, Tensor& out) override {
    Timer t(p_, "softmax");
    cpu_.softmax(x, dim, out);
  }
  void sum(const Tensor& x, int64_t dim, Tensor& out) override {
    Timer t(p_, "sum");
    cpu_.sum(x, dim, out);
  }
  void mean(const Tensor& x, int64_t dim, Tensor& out) override {
    Timer t(p_, "mean");
    cpu_.mean(x, dim, out);
  }
  void linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, Tensor& out) override {
    Timer t(p_, "linear", gemm_flops(out, w.size(1)));
    cpu_.linear(x, w, bias, out);
  }
  // linear_quantized is the Backend default on this one: its panels' GEMMs come back through
  // linear above (timed and counted there, once).
  void linear_gelu(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, ops::GeluMode mode, Tensor& out) override {
    Timer t(p_, "linear_gelu", gemm_flops(out, w.size(1)));
    cpu_.linear_gelu(x, w, bias, mode, out);
  }
  void linear_gated_residual(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, const Tensor& residual, const Tensor& gate, Tensor& out) override {
    Timer t(p_, "linear_gated_residual", gemm_flops(out, w.size(1)));
    cpu_.linear_gated_residual(x, w, bias, residual, gate, out);
  }
  void matmul(const Tensor& a, const Tensor& b, Tensor& out) override {
    Timer t(p_, "matmul", gemm_flops(out, a.size(-1)));
    cpu_.matmul(a, b, out);
  }
  void attention(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt, Tensor& out) override {
    Timer t(p_, "attention", attention_flops(q, k, v, opt));
    cpu_.attention(q, k, v, opt, out);
  }
  void rope(const Tensor& x, const Tensor& cos, const Tensor& sin, ops::RopeMode mode, Tensor& out) override {
    Timer t(p_, "rope");
    cpu_.rope(x, cos, sin, mode, out);
  }
  // The fused ops with Backend defaults must be forwarded too: the defaults would run a
  // different (unfused) path than the CPU backend's own.
  void causal_conv3d(const std::vector<Tensor>& xs, const Tensor& w, const std::optional<Tensor>& bias, std::array<int64_t, 3> stride, std::array<int64_t, 3> padding, const std::optional<Tensor>& residual, Tensor& out) override {
    Timer t(p_, "causal_conv3d", gemm_flops(out, w.numel() / w.size(0)));
    cpu_.causal_conv3d(xs, w, bias, stride, padding, residual, out);
  }
  void l2_norm_scale_silu(const Tensor& x, const Tensor& gamma, double scale, double eps, Tensor& out) override {
    Timer t(p_, "l2_norm_scale_silu");
    cpu_.l2_norm_scale_silu(x, gamma, scale, eps, out);
  }
  void conv3d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, std::array<int64_t, 3> stride, std::array<int64_t, 3> padding, Tensor& out) override {
    Timer t(p_, "conv3d", gemm_flops(out, w.numel() / w.size(0)));
    cpu_.conv3d(x, w, bias, stride, padding, out);
  }
  void conv2d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& bias, std::array<int64_t, 2> stride, std::array<int64_t, 2> padding, Tensor& out) override {
    Timer t(p_, "conv2d", gemm_flops(out, w.numel() / w.size(0)));
    cpu_.conv2d(x, w, bias, stride, padding, out);
  }
  void upsample_nearest(const Tensor& x, const std::vector<int64_t>& factors, Tensor& out) override {
    Timer t(p_, "upsample_nearest");
    cpu_.upsample_nearest(x, factors, out);
  }
  void pixel_shuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& out) override {
    Timer t(p_, "pixel_shuffle3d");
    cpu_.pixel_shuffle3d(x, r, out);
  }
  void pixel_unshuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& out) override {
    Timer t(p_, "pixel_unshuffle3d");
    cpu_.pixel_unshuffle3d(x, r, out);
  }
 private:
  OpProfile& p_;
  Backend& cpu_;
};

// Op name -> class, as a table (names not listed are "other").
const std::map<std::string, const char*>& class_table() {
  static const std::map<std::string, const char*> t = {
      {"linear", "gemm"},
      // GEMMs whose output stage applies the GELU / gated residual (ops::linear_gelu,
      // linear_gated_residual): no separate pass over memory is left to count elsewhere.
      {"linear_gelu", "gemm"},
      {"linear_gated_residual", "gemm"},
      {"matmul", "gemm"},
      {"conv3d", "gemm"},  // im2col + GEMM (the im2col copy is inside)
      {"causal_conv3d", "gemm"},  // the same, reading the cached frames in place
      {"conv2d", "gemm"},
      {"attention", "attention"},
      {"copy", "layout_copies"},
      {"cast", "layout_copies"},
      {"concat", "layout_copies"},
      {"pad", "layout_copies"},
      {"embedding", "layout_copies"},
      {"upsample_nearest", "layout_copies"},
      {"pixel_shuffle3d", "layout_copies"},
      {"pixel_unshuffle3d", "layout_copies"},
  };
  return t;
}

}  // namespace

const char* OpProfile::op_class(const std::string& op) {
  const auto& t = class_table();
  auto it = t.find(op);
  if (it != t.end()) return it->second;
  if (op == "all_finite") return "other";
  return "norms_elementwise";  // every remaining op of backend.h is an elementwise, norm or rope op
}

double OpProfile::total_flops() const {
  double f = 0;
  for (const auto& [name, t] : ops) f += t.flops;
  return f;
}

nlohmann::json OpProfile::to_json() const {
  nlohmann::json ops_j = nlohmann::json::object(), classes = nlohmann::json::object();
  std::map<std::string, OpTime> by_class;
  double op_wall = 0, op_cpu = 0;
  for (const auto& [name, t] : ops) {
    ops_j[name] = {{"calls", t.calls}, {"wall", t.wall}, {"cpu", t.cpu}, {"flops", t.flops}};
    OpTime& c = by_class[op_class(name)];
    c.calls += t.calls, c.wall += t.wall, c.cpu += t.cpu;
    op_wall += t.wall, op_cpu += t.cpu;
  }
  OpTime& outside = by_class["outside_ops"];
  outside.wall = total_wall - op_wall;
  outside.cpu = total_cpu - op_cpu;
  nlohmann::json summary = nlohmann::json::object();
  for (const auto& [name, t] : by_class) {
    classes[name] = {{"calls", t.calls}, {"wall", t.wall}, {"cpu", t.cpu}};
    summary[name] = total_cpu > 0 ? t.cpu / total_cpu : 0.0;  // share of the step's CPU time
  }
  return {{"ops", ops_j},
          {"classes", classes},
          {"summary", summary},
          {"total_flops", total_flops()},
          {"total_wall", total_wall},
          {"total_cpu", total_cpu}};
}

struct ScopedOpProfiler::Impl {
  OpProfile& profile;
  TimingBackend backend;
  double w0, c0;
  explicit Impl(OpProfile& p) : profile(p), backend(p), w0(wall_now()), c0(cpu_now()) {}
};

ScopedOpProfiler::ScopedOpProfiler(OpProfile& profile) : impl_(new Impl(profile)) {
  set_cpu_backend_interceptor(&impl_->backend);
}

ScopedOpProfiler::~ScopedOpProfiler() {
  set_cpu_backend_interceptor(nullptr);
  impl_->profile.total_wall += wall_now() - impl_->w0;
  impl_->profile.total_cpu += cpu_now() - impl_->c0;
  delete impl_;
}

}  // namespace vidax::pipeline
