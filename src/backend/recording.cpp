#include "backend/recording.h"

#include <sstream>

#include "backend/backend.h"

namespace vidax {

namespace {
thread_local Trace* t_active = nullptr;

TensorDesc describe(const Tensor& t) { return TensorDesc{t.shape(), t.dtype(), t.device()}; }

std::string fmt_double(double v) {
  std::ostringstream o;
  o.precision(17);
  o << v;
  return o.str();
}

template <class C>
std::string fmt_list(const C& c) {
  std::ostringstream o;
  o << '[';
  bool first = true;
  for (auto v : c) { o << (first ? "" : ", ") << v; first = false; }
  o << ']';
  return o.str();
}

// Builds one OpRecord and appends it to the active trace (if any).
class Rec {
 public:
  explicit Rec(const char* name) { r_.name = name; }
  Rec& in(const char* n, const Tensor& t) {
    r_.inputs.push_back(describe(t));
    r_.input_names.emplace_back(n);
    return *this;
  }
  Rec& in(const char* n, const std::optional<Tensor>& t) { return t ? in(n, *t) : *this; }
  Rec& attr(const char* k, const std::string& v) { r_.attrs.emplace_back(k, v); return *this; }
  Rec& attr(const char* k, double v) { return attr(k, fmt_double(v)); }
  Rec& attr(const char* k, int64_t v) { return attr(k, std::to_string(v)); }
  Rec& attr(const char* k, bool v) { return attr(k, std::string(v ? "true" : "false")); }
  template <class C>
  Rec& list(const char* k, const C& c) { return attr(k, fmt_list(c)); }
  void out(const Tensor& o) {
    r_.output = describe(o);
    if (t_active) t_active->ops.push_back(std::move(r_));
  }

 private:
  OpRecord r_;
};

const char* pad_mode_name(ops::PadMode m) { return m == ops::PadMode::Zero ? "zero" : "replicate"; }

class RecordingBackend final : public Backend {
 public:
  const char* name() const override { return "meta"; }

  void copy(const Tensor& x, Tensor& o) override { Rec("copy").in("x", x).out(o); }
  void cast(const Tensor& x, Tensor& o) override {
    Rec("cast").in("x", x).attr("dtype", std::string(dtype_name(o.dtype()))).out(o);
  }
  void concat(const std::vector<Tensor>& xs, int64_t dim, Tensor& o) override {
    Rec r("concat");
    for (const Tensor& x : xs) r.in("x", x);
    r.attr("dim", dim).out(o);
  }
  void pad(const Tensor& x, const std::vector<int64_t>& pads, ops::PadMode mode, Tensor& o) override {
    Rec("pad").in("x", x).list("pads", pads).attr("mode", std::string(pad_mode_name(mode))).out(o);
  }
  void embedding(const Tensor& ids, const Tensor& table, Tensor& o) override {
    Rec("embedding").in("ids", ids).in("table", table).out(o);
  }

  void add(const Tensor& a, const Tensor& b, Tensor& o) override { Rec("add").in("a", a).in("b", b).out(o); }
  void sub(const Tensor& a, const Tensor& b, Tensor& o) override { Rec("sub").in("a", a).in("b", b).out(o); }
  void mul(const Tensor& a, const Tensor& b, Tensor& o) override { Rec("mul").in("a", a).in("b", b).out(o); }
  void div(const Tensor& a, const Tensor& b, Tensor& o) override { Rec("div").in("a", a).in("b", b).out(o); }
  void scale(const Tensor& x, double alpha, Tensor& o) override { Rec("scale").in("x", x).attr("alpha", alpha).out(o); }
  void add_scalar(const Tensor& x, double alpha, Tensor& o) override {
    Rec("add_scalar").in("x", x).attr("alpha", alpha).out(o);
  }
  void axpby(double a, const Tensor& x, double b, const Tensor& y, Tensor& o) override {
    Rec("axpby").in("x", x).in("y", y).attr("a", a).attr("b", b).out(o);
  }
  void clamp(const Tensor& x, double lo, double hi, Tensor& o) override {
    Rec("clamp").in("x", x).attr("lo", lo).attr("hi", hi).out(o);
  }
  void gelu(const Tensor& x, ops::GeluMode mode, Tensor& o) override {
    Rec("gelu").in("x", x).attr("mode", std::string(mode == ops::GeluMode::Erf ? "erf" : "tanh")).out(o);
  }
  void silu(const Tensor& x, Tensor& o) override { Rec("silu").in("x", x).out(o); }
  void sigmoid(const Tensor& x, Tensor& o) override { Rec("sigmoid").in("x", x).out(o); }
  void tanh(const Tensor& x, Tensor& o) override { Rec("tanh").in("x", x).out(o); }
  void relu(const Tensor& x, Tensor& o) override { Rec("relu").in("x", x).out(o); }
  void modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, Tensor& o) override {
    Rec("modulate").in("x", x).in("shift", shift).in("scale", scale).out(o);
  }
  void gated_residual(const Tensor& x, const Tensor& gate, const Tensor& y, Tensor& o) override {
    Rec("gated_residual").in("x", x).in("gate", gate).in("y", y).out(o);
  }

  void layer_norm(const Tensor& x, const std::optional<Tensor>& w, const std::optional<Tensor>& b, double eps,
                  Tensor& o) override {
    Rec("layer_norm").in("x", x).in("weight", w).in("bias", b).attr("eps", eps).out(o);
  }
  void rms_norm(const Tensor& x, const std::optional<Tensor>& w, double eps, Tensor& o) override {
    Rec("rms_norm").in("x", x).in("weight", w).attr("eps", eps).out(o);
  }
  void rms_norm_with_sum_sq(const Tensor& x, const Tensor& ss, int64_t count, const std::optional<Tensor>& w,
                            double eps, Tensor& o) override {
    Rec("rms_norm_with_sum_sq").in("x", x).in("sum_sq", ss).in("weight", w).attr("count", count).attr("eps", eps).out(o);
  }
  void layer_norm_modulate(const Tensor& x, const Tensor& shift, const Tensor& scale, double eps, Tensor& o) override {
    Rec("layer_norm_modulate").in("x", x).in("shift", shift).in("scale", scale).attr("eps", eps).out(o);
  }
  void l2_normalize(const Tensor& x, int64_t dim, double eps, Tensor& o) override {
    Rec("l2_normalize").in("x", x).attr("dim", dim).attr("eps", eps).out(o);
  }
  void group_norm(const Tensor& x, int64_t groups, const std::optional<Tensor>& w, const std::optional<Tensor>& b,
                  double eps, Tensor& o) override {
    Rec("group_norm").in("x", x).in("weight", w).in("bias", b).attr("groups", groups).attr("eps", eps).out(o);
  }
  void softmax(const Tensor& x, int64_t dim, Tensor& o) override { Rec("softmax").in("x", x).attr("dim", dim).out(o); }
  void sum(const Tensor& x, int64_t dim, Tensor& o) override { Rec("sum").in("x", x).attr("dim", dim).out(o); }
  void mean(const Tensor& x, int64_t dim, Tensor& o) override { Rec("mean").in("x", x).attr("dim", dim).out(o); }
  bool all_finite(const Tensor& x) override {
    throw Error(msg() << "all_finite(" << x.str() << "): a Meta tensor has no values to check; check outside "
                      << "the recorded step");
  }

  void linear(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, Tensor& o) override {
    Rec("linear").in("x", x).in("w", w).in("bias", b).out(o);
  }
  void linear_gelu(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, ops::GeluMode mode,
                   Tensor& o) override {
    Rec("linear_gelu").in("x", x).in("w", w).in("bias", b)
        .attr("mode", std::string(mode == ops::GeluMode::Erf ? "erf" : "tanh")).out(o);
  }
  void linear_gated_residual(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b,
                             const Tensor& residual, const Tensor& gate, Tensor& o) override {
    Rec("linear_gated_residual").in("x", x).in("w", w).in("bias", b).in("residual", residual).in("gate", gate).out(o);
  }
  void matmul(const Tensor& a, const Tensor& b, Tensor& o) override { Rec("matmul").in("a", a).in("b", b).out(o); }

  void attention(const Tensor& q, const Tensor& k, const Tensor& v, const ops::AttentionOptions& opt,
                 Tensor& o) override {
    Rec r("attention");
    r.in("q", q).in("k", k).in("v", v).in("bias", opt.bias).attr("scale", opt.scale).attr("causal", opt.causal);
    if (!opt.kv_lens.empty()) r.list("kv_lens", opt.kv_lens);
    r.out(o);
  }
  void rope(const Tensor& x, const Tensor& cos, const Tensor& sin, ops::RopeMode mode, Tensor& o) override {
    Rec("rope").in("x", x).in("cos", cos).in("sin", sin)
        .attr("mode", std::string(mode == ops::RopeMode::InterleavedPairs ? "interleaved_pairs" : "split_half"))
        .out(o);
  }

  void conv3d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, std::array<int64_t, 3> stride,
              std::array<int64_t, 3> padding, Tensor& o) override {
    Rec("conv3d").in("x", x).in("w", w).in("bias", b).list("stride", stride).list("padding", padding).out(o);
  }
  void l2_norm_scale_silu(const Tensor& x, const Tensor& gamma, double scale, double eps, Tensor& o) override {
    Rec("l2_norm_scale_silu").in("x", x).in("gamma", gamma).attr("scale", scale).attr("eps", eps).out(o);
  }
  void causal_conv3d(const std::vector<Tensor>& xs, const Tensor& w, const std::optional<Tensor>& b,
                     std::array<int64_t, 3> stride, std::array<int64_t, 3> padding,
                     const std::optional<Tensor>& residual, Tensor& o) override {
    Rec r("causal_conv3d");
    for (const Tensor& x : xs) r.in("x", x);
    r.in("w", w).in("bias", b).in("residual", residual).list("stride", stride).list("padding", padding).out(o);
  }
  void conv2d(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, std::array<int64_t, 2> stride,
              std::array<int64_t, 2> padding, Tensor& o) override {
    Rec("conv2d").in("x", x).in("w", w).in("bias", b).list("stride", stride).list("padding", padding).out(o);
  }
  void upsample_nearest(const Tensor& x, const std::vector<int64_t>& factors, Tensor& o) override {
    Rec("upsample_nearest").in("x", x).list("factors", factors).out(o);
  }
  void pixel_shuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& o) override {
    Rec("pixel_shuffle3d").in("x", x).list("r", r).out(o);
  }
  void pixel_unshuffle3d(const Tensor& x, std::array<int64_t, 3> r, Tensor& o) override {
    Rec("pixel_unshuffle3d").in("x", x).list("r", r).out(o);
  }
};
}  // namespace

std::string TensorDesc::str() const {
  std::string s = std::string(dtype_name(dtype)) + shape_str(shape);
  if (device != Device::Meta) s += std::string("@") + device_name(device);
  return s;
}

std::string OpRecord::attr(const std::string& key) const {
  for (const auto& [k, v] : attrs)
    if (k == key) return v;
  return "";
}

std::string OpRecord::str() const {
  std::ostringstream o;
  o << name << '(';
  for (size_t i = 0; i < inputs.size(); ++i) o << (i ? ", " : "") << input_names[i] << '=' << inputs[i].str();
  for (const auto& [k, v] : attrs) o << ", " << k << '=' << v;
  o << ") -> " << output.str();
  return o.str();
}

std::string Trace::str() const {
  std::string s;
  for (const OpRecord& r : ops) s += r.str() + "\n";
  return s;
}

RecordingScope::RecordingScope(Trace& trace) : previous_(t_active) { t_active = &trace; }
RecordingScope::~RecordingScope() { t_active = previous_; }

Trace* active_trace() { return t_active; }

Backend& recording_backend() {
  static RecordingBackend be;
  return be;
}

}  // namespace vidax
