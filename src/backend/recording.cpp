#include "backend/recording.h"

#include <mutex>
#include <sstream>

#include "backend/backend.h"

namespace vidax {

namespace {
thread_local Trace* t_active = nullptr;

TensorDesc describe(const Tensor& t) { return TensorDesc{t.shape(), t.dtype(), t.device(), t.quant()}; }

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

// ---- parameter names ----------------------------------------------------------------

using NameKey = std::tuple<const void*, size_t, Shape, DType>;
struct NameEntry {
  std::weak_ptr<Buffer> buffer;  // the name dies with the buffer (its address may be reused)
  std::string name;
};
struct NameRegistry {
  std::mutex mu;
  std::map<NameKey, NameEntry> host;
  std::unordered_map<uint64_t, std::string> meta;
  size_t prune_at = 1024;
};
NameRegistry& names() {
  static NameRegistry r;
  return r;
}
NameKey name_key(const Tensor& t) { return {t.buffer().get(), t.byte_offset(), t.shape(), t.dtype()}; }

// ---- value ids ------------------------------------------------------------------------

int64_t define(Trace& trace, OpRecord r, const Tensor& value) {
  r.id = static_cast<int64_t>(trace.ops.size());
  if (value.device() == Device::Meta) trace.meta_ids[value.meta_value()] = r.id;
  trace.ops.push_back(std::move(r));
  return trace.ops.back().id;
}

Trace::HostKey host_key(const Tensor& t) {
  return {t.buffer().get(), t.byte_offset(), t.shape(), t.strides(), t.dtype()};
}

// The value id of an op's input, defining it (Input / Param / Constant) at its first use.
int64_t value_of(Trace& trace, const Tensor& t) {
  if (t.device() == Device::Meta) {
    auto it = trace.meta_ids.find(t.meta_value());
    if (it != trace.meta_ids.end()) return it->second;
  } else {
    auto it = trace.host_ids.find(host_key(t));
    if (it != trace.host_ids.end()) return it->second;
  }
  OpRecord r;
  r.output = describe(t);
  r.param_name = param_name(t);
  if (t.device() == Device::Meta) {
    r.kind = r.param_name.empty() ? OpKind::Input : OpKind::Param;
  } else if (r.param_name.empty() && t.device() == Device::CPU && !t.is_quantized() && t.numel() <= kConstantMaxElements) {
    r.kind = OpKind::Constant;  // by value, a fresh value at each use (host memory may change)
    r.values = t.to_f64_vector();
    r.name = op_kind_name(r.kind);
    return define(trace, std::move(r), t);
  } else {
    r.kind = OpKind::Param;
    trace.host_ids[host_key(t)] = static_cast<int64_t>(trace.ops.size());
    trace.held.push_back(t.buffer());
  }
  r.name = op_kind_name(r.kind);
  return define(trace, std::move(r), t);
}

// Builds one record and appends it to the active trace (if any); its inputs are
// defined first where the trace has not seen them.
class Rec {
 public:
  explicit Rec(const char* name, OpKind kind = OpKind::Op) : trace_(t_active) {
    r_.name = name;
    r_.kind = kind;
  }
  Rec& in(const char* n, const Tensor& t) {
    if (!trace_) return *this;
    r_.input_ids.push_back(value_of(*trace_, t));
    r_.input_names.emplace_back(n);
    r_.inputs.push_back(describe(t));
    return *this;
  }
  Rec& in(const char* n, const std::optional<Tensor>& t) { return t ? in(n, *t) : *this; }
  Rec& attr(const char* k, AttrValue v) { r_.attrs.emplace_back(k, std::move(v)); return *this; }
  Rec& attr(const char* k, const char* v) { return attr(k, AttrValue(std::string(v))); }
  Rec& attr(const char* k, double v) { return attr(k, AttrValue(v)); }
  Rec& attr(const char* k, int64_t v) { return attr(k, AttrValue(v)); }
  Rec& attr(const char* k, bool v) { return attr(k, AttrValue(v)); }
  template <class C>
  Rec& list(const char* k, const C& c) { return attr(k, AttrValue(std::vector<int64_t>(c.begin(), c.end()))); }
  void out(const Tensor& o) {
    if (!trace_) return;
    r_.output = describe(o);
    define(*trace_, std::move(r_), o);
  }

 private:
  Trace* trace_;
  OpRecord r_;
};

// Core's Tensor methods on Meta tensors (installed by RecordingScope).
void observe_meta_tensor(MetaTensorOp op, const Tensor& in, const Tensor& out, const std::vector<int64_t>& args) {
  if (!t_active) return;
  Rec r(meta_tensor_op_name(op), OpKind::View);
  r.in("x", in);
  switch (op) {
    case MetaTensorOp::View:
    case MetaTensorOp::Reshape: r.attr("shape", AttrValue(args)); break;
    case MetaTensorOp::Permute: r.attr("dims", AttrValue(args)); break;
    case MetaTensorOp::Slice:
      r.attr("dim", args[0]).attr("start", args[1]).attr("end", args[2]).attr("step", args[3]);
      break;
    case MetaTensorOp::Select: r.attr("dim", args[0]).attr("index", args[1]); break;
    case MetaTensorOp::Unsqueeze:
    case MetaTensorOp::Squeeze: r.attr("dim", args[0]); break;
    case MetaTensorOp::Cast: r.attr("dtype", AttrValue(out.dtype())); break;
    case MetaTensorOp::Contiguous:
    case MetaTensorOp::Clone: break;
  }
  r.out(out);
}

const char* pad_mode_name(ops::PadMode m) { return m == ops::PadMode::Zero ? "zero" : "replicate"; }

class RecordingBackend final : public Backend {
 public:
  const char* name() const override { return "meta"; }

  void copy(const Tensor& x, Tensor& o) override { Rec("copy").in("x", x).out(o); }
  void cast(const Tensor& x, Tensor& o) override {
    Rec("cast").in("x", x).attr("dtype", AttrValue(o.dtype())).out(o);
  }
  void concat(const std::vector<Tensor>& xs, int64_t dim, Tensor& o) override {
    Rec r("concat");
    for (const Tensor& x : xs) r.in("x", x);
    r.attr("dim", dim).out(o);
  }
  void pad(const Tensor& x, const std::vector<int64_t>& pads, ops::PadMode mode, Tensor& o) override {
    Rec("pad").in("x", x).list("pads", pads).attr("mode", pad_mode_name(mode)).out(o);
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
    Rec("gelu").in("x", x).attr("mode", mode == ops::GeluMode::Erf ? "erf" : "tanh").out(o);
  }
  void silu(const Tensor& x, Tensor& o) override { Rec("silu").in("x", x).out(o); }
  void sigmoid(const Tensor& x, Tensor& o) override { Rec("sigmoid").in("x", x).out(o); }
  void tanh(const Tensor& x, Tensor& o) override { Rec("tanh").in("x", x).out(o); }
  void sin(const Tensor& x, Tensor& o) override { Rec("sin").in("x", x).out(o); }
  void exp(const Tensor& x, Tensor& o) override { Rec("exp").in("x", x).out(o); }
  void sqrt(const Tensor& x, Tensor& o) override { Rec("sqrt").in("x", x).out(o); }
  void log(const Tensor& x, Tensor& o) override { Rec("log").in("x", x).out(o); }
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
  // A block-quantized weight: the lowering dequantizes w (ggml's layout: rows of K values in
  // blocks of `block` values, `block_bytes` each) to x's dtype; the values of linear on it.
  void linear_quantized(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, Tensor& o) override {
    VIDAX_CHECK(!w.is_scaled(), "recording: the scaled fp8/int8 weight " << w.str()
                                << " is not recorded yet (run it on the cpu backend, or convert it to a GGUF type)");
    const QuantTraits& q = quant_traits(w.quant());
    Rec("linear_quantized").in("x", x).in("w", w).in("bias", b).attr("quant", q.name)
        .attr("block", int64_t{q.block}).attr("block_bytes", int64_t{q.block_bytes}).out(o);
  }
  void linear_gelu(const Tensor& x, const Tensor& w, const std::optional<Tensor>& b, ops::GeluMode mode,
                   Tensor& o) override {
    Rec("linear_gelu").in("x", x).in("w", w).in("bias", b)
        .attr("mode", mode == ops::GeluMode::Erf ? "erf" : "tanh").out(o);
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
        .attr("mode", mode == ops::RopeMode::InterleavedPairs ? "interleaved_pairs" : "split_half")
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
  std::string s = std::string(quant == QuantType::None ? dtype_name(dtype) : quant_name(quant)) + shape_str(shape);
  if (device != Device::Meta) s += std::string("@") + device_name(device);
  return s;
}

const char* op_kind_name(OpKind k) {
  switch (k) {
    case OpKind::Input: return "input";
    case OpKind::Param: return "param";
    case OpKind::Constant: return "constant";
    case OpKind::View: return "view";
    case OpKind::Op: return "op";
    case OpKind::Collective: return "collective";
  }
  return "?";
}

std::string attr_str(const AttrValue& v) {
  struct Fmt {
    std::string operator()(int64_t x) const { return std::to_string(x); }
    std::string operator()(double x) const { return fmt_double(x); }
    std::string operator()(bool x) const { return x ? "true" : "false"; }
    std::string operator()(const std::string& x) const { return x; }
    std::string operator()(const std::vector<int64_t>& x) const { return fmt_list(x); }
    std::string operator()(DType x) const { return dtype_name(x); }
  };
  return std::visit(Fmt{}, v);
}

bool OpRecord::has_attr(const std::string& key) const {
  for (const auto& [k, v] : attrs)
    if (k == key) return true;
  return false;
}

const AttrValue& OpRecord::attr(const std::string& key) const {
  for (const auto& [k, v] : attrs)
    if (k == key) return v;
  throw Error(msg() << "op record " << str() << " has no attribute '" << key << "'");
}

std::string OpRecord::attr_text(const std::string& key) const { return has_attr(key) ? attr_str(attr(key)) : ""; }

std::string OpRecord::str() const {
  std::ostringstream o;
  o << '%' << id << " = " << name;
  if (kind == OpKind::Param && !param_name.empty()) o << " \"" << param_name << '"';
  if (kind == OpKind::Constant) o << ' ' << fmt_list(values);
  if (kind != OpKind::Input && kind != OpKind::Param && kind != OpKind::Constant) {
    o << '(';
    for (size_t i = 0; i < input_ids.size(); ++i) o << (i ? ", " : "") << input_names[i] << "=%" << input_ids[i];
    for (size_t i = 0; i < attrs.size(); ++i)
      o << (i || !input_ids.empty() ? ", " : "") << attrs[i].first << '=' << attr_str(attrs[i].second);
    o << ')';
  }
  o << " : " << output.str();
  return o.str();
}

std::string Trace::str() const {
  std::string s;
  for (const OpRecord& r : ops) s += r.str() + "\n";
  return s;
}

std::vector<const OpRecord*> Trace::of_kind(OpKind k) const {
  std::vector<const OpRecord*> out;
  for (const OpRecord& r : ops)
    if (r.kind == k) out.push_back(&r);
  return out;
}

RecordingScope::RecordingScope(Trace& trace) : previous_(t_active) {
  set_meta_tensor_observer(&observe_meta_tensor);
  t_active = &trace;
}
RecordingScope::~RecordingScope() { t_active = previous_; }

Trace* active_trace() { return t_active; }

Backend& recording_backend() {
  static RecordingBackend be;
  return be;
}

void set_param_name(const Tensor& t, const std::string& name) {
  NameRegistry& r = names();
  std::lock_guard<std::mutex> lock(r.mu);
  if (t.device() == Device::Meta) {
    r.meta[t.meta_value()] = name;
    return;
  }
  if (!t.buffer()) return;
  if (r.host.size() >= r.prune_at) {  // drop the names of freed buffers
    for (auto it = r.host.begin(); it != r.host.end();) it = it->second.buffer.expired() ? r.host.erase(it) : ++it;
    r.prune_at = std::max<size_t>(1024, 2 * r.host.size());
  }
  r.host[name_key(t)] = NameEntry{t.buffer(), name};
}

std::string param_name(const Tensor& t) {
  NameRegistry& r = names();
  std::lock_guard<std::mutex> lock(r.mu);
  if (t.device() == Device::Meta) {
    auto it = r.meta.find(t.meta_value());
    return it == r.meta.end() ? "" : it->second;
  }
  auto it = r.host.find(name_key(t));
  if (it == r.host.end() || it->second.buffer.lock() != t.buffer()) return "";
  return it->second.name;
}

Tensor record_collective(const char* name, const Tensor& x, const Shape& out_shape,
                         std::vector<std::pair<std::string, AttrValue>> attrs) {
  VIDAX_CHECK(x.device() == Device::Meta, "record_collective(" << name << "): " << x.str() << " is not a Meta tensor");
  Tensor out = Tensor::empty(out_shape, x.dtype(), Device::Meta);
  Rec r(name, OpKind::Collective);
  r.in("x", x);
  for (auto& [k, v] : attrs) r.attr(k.c_str(), std::move(v));
  r.out(out);
  return out;
}

}  // namespace vidax
