#include "backend/pjrt/stablehlo.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <sstream>

#include "core/error.h"

namespace vidax::pjrt {

namespace {

// ---- types and literals -----------------------------------------------------------------------

const char* elem(DType t) {
  switch (t) {
    case DType::F64: return "f64";
    case DType::F32: return "f32";
    case DType::F16: return "f16";
    case DType::BF16: return "bf16";
    case DType::I64: return "i64";
    case DType::I32: return "i32";
    case DType::I16: return "i16";
    case DType::I8: return "i8";
    case DType::U8: return "ui8";
    case DType::Bool: return "i1";
    default: throw Error(msg() << "StableHLO lowering: dtype " << dtype_name(t) << " is not lowered");
  }
}

std::string ttype(const Shape& s, DType t) {
  std::string r = "tensor<";
  for (int64_t d : s) r += std::to_string(d) + "x";
  return r + elem(t) + ">";
}

std::string i64_array(const std::vector<int64_t>& v) {
  std::string r = "array<i64";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : ": ") + std::to_string(v[i]);
  return r + ">";
}

std::string int_list(const std::vector<int64_t>& v) {
  std::string r = "[";
  for (size_t i = 0; i < v.size(); ++i) r += (i ? ", " : "") + std::to_string(v[i]);
  return r + "]";
}

// A float literal MLIR parses exactly (hex for the non-finite values).
std::string float_lit(double v, DType t) {
  if (std::isnan(v)) return t == DType::F64 ? "0x7FF8000000000000" : "0x7FC00000";
  if (std::isinf(v)) {
    if (t == DType::F64) return v > 0 ? "0x7FF0000000000000" : "0xFFF0000000000000";
    return v > 0 ? "0x7F800000" : "0xFF800000";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17e", v);
  return buf;
}

bool is_float(DType t) { return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16; }

struct V {
  std::string name;  // "%v12" / "%arg3"
  Shape shape;
  DType dtype = DType::F32;
  int64_t rank() const { return static_cast<int64_t>(shape.size()); }
};

// ---- the emitter --------------------------------------------------------------------------------

class Emitter {
 public:
  explicit Emitter(const LowerOptions& opt) : opt_(opt) {}
  std::ostringstream body;
  std::string indent = "    ";

  std::string fresh() { return "%v" + std::to_string(next_++); }

  V op(const std::string& name, const std::vector<V>& ins, const Shape& shape, DType dtype,
       const std::string& attrs = "") {
    V r{fresh(), shape, dtype};
    body << indent << r.name << " = \"" << name << "\"(";
    for (size_t i = 0; i < ins.size(); ++i) body << (i ? ", " : "") << ins[i].name;
    body << ')';
    if (!attrs.empty()) body << " {" << attrs << '}';
    body << " : (";
    for (size_t i = 0; i < ins.size(); ++i) body << (i ? ", " : "") << ttype(ins[i].shape, ins[i].dtype);
    body << ") -> " << ttype(shape, dtype) << '\n';
    return r;
  }

  V scalar(double v, DType t) {
    const std::string lit = is_float(t) ? float_lit(v, t) : std::to_string(static_cast<int64_t>(v));
    return op("stablehlo.constant", {}, {}, t, "value = dense<" + lit + "> : " + ttype({}, t));
  }
  V full(double v, const Shape& s, DType t) { return broadcast(scalar(v, t), s, {}); }

  V convert(const V& x, DType t) { return x.dtype == t ? x : op("stablehlo.convert", {x}, x.shape, t); }
  V reshape(const V& x, const Shape& s) { return x.shape == s ? x : op("stablehlo.reshape", {x}, s, x.dtype); }
  V transpose(const V& x, const std::vector<int64_t>& perm) {
    bool id = true;
    for (size_t i = 0; i < perm.size(); ++i) id = id && perm[i] == static_cast<int64_t>(i);
    if (id) return x;
    Shape s;
    for (int64_t p : perm) s.push_back(x.shape[p]);
    return op("stablehlo.transpose", {x}, s, x.dtype, "permutation = " + i64_array(perm));
  }
  V broadcast(const V& x, const Shape& s, const std::vector<int64_t>& dims) {
    if (x.shape == s) return x;
    return op("stablehlo.broadcast_in_dim", {x}, s, x.dtype, "broadcast_dimensions = " + i64_array(dims));
  }
  // numpy broadcasting (trailing-aligned) of x to s.
  V broadcast_to(const V& x, const Shape& s) {
    VIDAX_CHECK(x.rank() <= static_cast<int64_t>(s.size()),
                "StableHLO lowering: cannot broadcast " << ttype(x.shape, x.dtype) << " to " << ttype(s, x.dtype));
    std::vector<int64_t> dims;
    const int64_t off = static_cast<int64_t>(s.size()) - x.rank();
    for (int64_t i = 0; i < x.rank(); ++i) dims.push_back(off + i);
    return broadcast(x, s, dims);
  }
  V binary(const char* name, const V& a, const V& b) { return op(std::string("stablehlo.") + name, {a, b}, a.shape, a.dtype); }
  V unary(const char* name, const V& a) { return op(std::string("stablehlo.") + name, {a}, a.shape, a.dtype); }
  V add(const V& a, const V& b) { return binary("add", a, b); }
  V sub(const V& a, const V& b) { return binary("subtract", a, b); }
  V mul(const V& a, const V& b) { return binary("multiply", a, b); }
  V div(const V& a, const V& b) { return binary("divide", a, b); }
  V mul_s(const V& a, double s) { return mul(a, full(s, a.shape, a.dtype)); }
  V add_s(const V& a, double s) { return add(a, full(s, a.shape, a.dtype)); }
  V compare(const V& a, const V& b, const char* dir) {
    return op("stablehlo.compare", {a, b}, a.shape, DType::Bool,
              std::string("comparison_direction = #stablehlo<comparison_direction ") + dir + ">");
  }
  V select(const V& p, const V& a, const V& b) { return op("stablehlo.select", {p, a, b}, a.shape, a.dtype); }
  V iota(const Shape& s, int64_t dim, DType t = DType::I64) {
    return op("stablehlo.iota", {}, s, t, "iota_dimension = " + std::to_string(dim) + " : i64");
  }

  // Reduces x over `dims` with add or maximum (init 0 or -inf) in x's dtype.
  V reduce(const V& x, const std::vector<int64_t>& dims, bool max) {
    const V init = scalar(max ? -INFINITY : 0.0, x.dtype);
    Shape s;
    for (int64_t i = 0; i < x.rank(); ++i)
      if (std::find(dims.begin(), dims.end(), i) == dims.end()) s.push_back(x.shape[i]);
    V r{fresh(), s, x.dtype};
    const std::string st = ttype({}, x.dtype), a = fresh(), b = fresh(), c = fresh();
    body << indent << r.name << " = \"stablehlo.reduce\"(" << x.name << ", " << init.name << ") ({\n"
         << indent << "^bb0(" << a << ": " << st << ", " << b << ": " << st << "):\n"
         << indent << "  " << c << " = \"stablehlo." << (max ? "maximum" : "add") << "\"(" << a << ", " << b
         << ") : (" << st << ", " << st << ") -> " << st << '\n'
         << indent << "  \"stablehlo.return\"(" << c << ") : (" << st << ") -> ()\n"
         << indent << "}) {dimensions = " << i64_array(dims) << "} : (" << ttype(x.shape, x.dtype) << ", " << st
         << ") -> " << ttype(s, x.dtype) << '\n';
    return r;
  }
  // Reduction over the last dim, kept as size 1.
  V reduce_last_keep(const V& x, bool max) {
    V r = reduce(x, {x.rank() - 1}, max);
    Shape s = x.shape;
    s.back() = 1;
    return reshape(r, s);
  }

  // dot_general with f32 (or f64) accumulation.
  V dot(const V& a, const V& b, const std::vector<int64_t>& lb, const std::vector<int64_t>& rb,
        const std::vector<int64_t>& lc, const std::vector<int64_t>& rc, DType result) {
    Shape s;
    for (int64_t d : lb) s.push_back(a.shape[d]);
    for (int64_t i = 0; i < a.rank(); ++i)
      if (std::find(lb.begin(), lb.end(), i) == lb.end() && std::find(lc.begin(), lc.end(), i) == lc.end())
        s.push_back(a.shape[i]);
    for (int64_t i = 0; i < b.rank(); ++i)
      if (std::find(rb.begin(), rb.end(), i) == rb.end() && std::find(rc.begin(), rc.end(), i) == rc.end())
        s.push_back(b.shape[i]);
    std::string dn = "dot_dimension_numbers = #stablehlo.dot<";
    if (!lb.empty())
      dn += "lhs_batching_dimensions = " + int_list(lb) + ", rhs_batching_dimensions = " + int_list(rb) + ", ";
    dn += "lhs_contracting_dimensions = " + int_list(lc) + ", rhs_contracting_dimensions = " + int_list(rc) + ">";
    const char* p = opt_.highest ? "HIGHEST" : "DEFAULT";
    dn += std::string(", precision_config = [#stablehlo<precision ") + p + ">, #stablehlo<precision " + p + ">]";
    return op("stablehlo.dot_general", {a, b}, s, result, dn);
  }

  V slice(const V& x, int64_t dim, int64_t start, int64_t end, int64_t step = 1) {
    std::vector<int64_t> lo(x.rank(), 0), hi(x.shape.begin(), x.shape.end()), st(x.rank(), 1);
    lo[dim] = start, hi[dim] = end, st[dim] = step;
    Shape s = x.shape;
    s[dim] = (end - start + step - 1) / step;
    if (s == x.shape) return x;
    return op("stablehlo.slice", {x}, s, x.dtype,
              "start_indices = " + i64_array(lo) + ", limit_indices = " + i64_array(hi) + ", strides = " + i64_array(st));
  }
  V concat(const std::vector<V>& xs, int64_t dim) {
    if (xs.size() == 1) return xs[0];
    Shape s = xs[0].shape;
    s[dim] = 0;
    for (const V& x : xs) s[dim] += x.shape[dim];
    return op("stablehlo.concatenate", xs, s, xs[0].dtype, "dimension = " + std::to_string(dim) + " : i64");
  }
  V pad(const V& x, const std::vector<int64_t>& lo, const std::vector<int64_t>& hi, double value = 0) {
    Shape s = x.shape;
    for (int64_t i = 0; i < x.rank(); ++i) s[i] += lo[i] + hi[i];
    if (s == x.shape) return x;
    return op("stablehlo.pad", {x, scalar(value, x.dtype)}, s, x.dtype,
              "edge_padding_low = " + i64_array(lo) + ", edge_padding_high = " + i64_array(hi) +
                  ", interior_padding = " + i64_array(std::vector<int64_t>(x.rank(), 0)));
  }

  const LowerOptions& opt() const { return opt_; }

 private:
  const LowerOptions& opt_;
  int64_t next_ = 0;
};

// ---- the ops ------------------------------------------------------------------------------------

DType compute_dtype(const OpRecord& r) {
  if (r.output.dtype == DType::F64) return DType::F64;
  for (const TensorDesc& d : r.inputs)
    if (d.dtype == DType::F64) return DType::F64;
  return DType::F32;
}

class Lowering {
 public:
  Lowering(const Trace& trace, Emitter& e) : trace_(trace), e_(e) {}

  std::map<int64_t, V> values;

  const V& in(const OpRecord& r, size_t i) const { return values.at(r.input_ids[i]); }
  // The input named `n` (optionals may be absent), nullptr when absent.
  const V* named(const OpRecord& r, const char* n) const {
    for (size_t i = 0; i < r.input_names.size(); ++i)
      if (r.input_names[i] == n) return &values.at(r.input_ids[i]);
    return nullptr;
  }
  const V& need(const OpRecord& r, const char* n) const {
    const V* v = named(r, n);
    VIDAX_CHECK(v, "StableHLO lowering: " << r.str() << " has no input '" << n << "'");
    return *v;
  }
  V wide(const V& x, DType cd) { return e_.convert(x, cd); }
  V out(const OpRecord& r, const V& x) { return e_.reshape(e_.convert(x, r.output.dtype), r.output.shape); }

  // a op b with numpy broadcasting to the output's shape, in the compute dtype.
  V bin(const OpRecord& r, const char* name) {
    const DType cd = compute_dtype(r);
    const V a = e_.broadcast_to(wide(in(r, 0), cd), r.output.shape);
    const V b = e_.broadcast_to(wide(in(r, 1), cd), r.output.shape);
    return out(r, e_.binary(name, a, b));
  }

  V gelu(const V& x, const std::string& mode) {
    if (mode == "tanh") {
      // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
      const V x3 = e_.mul(e_.mul(x, x), x);
      const V inner = e_.mul_s(e_.add(x, e_.mul_s(x3, 0.044715)), std::sqrt(2.0 / M_PI));
      return e_.mul(e_.mul_s(x, 0.5), e_.add_s(e_.unary("tanh", inner), 1.0));
    }
    const V erf = e_.op("chlo.erf", {e_.mul_s(x, M_SQRT1_2)}, x.shape, x.dtype);
    return e_.mul(e_.mul_s(x, 0.5), e_.add_s(erf, 1.0));
  }
  V silu(const V& x) { return e_.mul(x, e_.unary("logistic", x)); }

  // LayerNorm over the last dim, no affine, in x's (compute) dtype.
  V layer_norm(const V& x, double eps) {
    const double n = static_cast<double>(x.shape.back());
    const V mean = e_.broadcast_to(e_.mul_s(e_.reduce_last_keep(x, false), 1.0 / n), x.shape);
    const V xc = e_.sub(x, mean);
    const V var = e_.mul_s(e_.reduce_last_keep(e_.mul(xc, xc), false), 1.0 / n);
    const V inv = e_.unary("rsqrt", e_.add_s(var, eps));
    return e_.mul(xc, e_.broadcast_to(inv, x.shape));
  }
  V rms(const V& x, const V& sum_sq, double count, double eps) {
    const V inv = e_.unary("rsqrt", e_.add_s(e_.mul_s(sum_sq, 1.0 / count), eps));
    return e_.mul(x, e_.broadcast_to(inv, x.shape));
  }

  // x [..., K] w [N, K] -> [..., N] in f32 (bias added in f32), not yet converted.
  V linear(const OpRecord& r) {
    const V& x = need(r, "x");
    const V& w = need(r, "w");
    const int64_t K = x.shape.back(), N = w.shape[0];
    const int64_t M = K ? shape_numel(x.shape) / K : 0;
    const bool same = x.dtype == w.dtype && (x.dtype == DType::BF16 || x.dtype == DType::F16 || x.dtype == DType::F32);
    const DType acc = x.dtype == DType::F64 ? DType::F64 : DType::F32;
    const DType od = same ? x.dtype : acc;
    V y = e_.dot(e_.reshape(wide(x, od), {M, K}), wide(w, od), {}, {}, {1}, {1}, acc);
    if (const V* b = named(r, "bias")) y = e_.add(y, e_.broadcast(wide(*b, acc), {M, N}, {1}));
    Shape s = x.shape;
    s.back() = N;
    return e_.reshape(y, s);
  }

  V rope(const OpRecord& r) {
    const V& x = need(r, "x");
    const DType cd = need(r, "cos").dtype == DType::F64 ? DType::F64 : DType::F32;
    const V c = wide(need(r, "cos"), cd), s = wide(need(r, "sin"), cd);
    const int64_t B = x.shape[0], L = x.shape[1], H = x.shape[2], D = x.shape[3], half = D / 2;
    const bool pairs = r.attr_as<std::string>("mode") == "interleaved_pairs";
    const V xw = wide(x, cd);
    V a, b;
    if (pairs) {
      const V x5 = e_.reshape(xw, {B, L, H, half, 2});
      a = e_.reshape(e_.slice(x5, 4, 0, 1), {B, L, H, half});
      b = e_.reshape(e_.slice(x5, 4, 1, 2), {B, L, H, half});
    } else {
      a = e_.slice(xw, 3, 0, half);
      b = e_.slice(xw, 3, half, D);
    }
    const Shape hs{B, L, H, half};
    const V cb = e_.broadcast(c, hs, {1, 3}), sb = e_.broadcast(s, hs, {1, 3});
    const V o0 = e_.sub(e_.mul(a, cb), e_.mul(b, sb));
    const V o1 = e_.add(e_.mul(a, sb), e_.mul(b, cb));
    // F64 tables: the result is rounded to f32 first when the output is F32/BF16 (as the kernel's fast path).
    V o;
    if (pairs)
      o = e_.reshape(e_.concat({e_.reshape(o0, {B, L, H, half, 1}), e_.reshape(o1, {B, L, H, half, 1})}, 4), {B, L, H, D});
    else
      o = e_.concat({o0, o1}, 3);
    if (cd == DType::F64 && r.output.dtype == DType::BF16) o = e_.convert(o, DType::F32);
    return out(r, o);
  }

  V attention(const OpRecord& r) {
    const V& q0 = need(r, "q");
    const V& k0 = need(r, "k");
    const V& v0 = need(r, "v");
    const V* bias0 = named(r, "bias");
    const int64_t B = q0.shape[0], Lq = q0.shape[1], H = q0.shape[2], D = q0.shape[3];
    const int64_t Lk = k0.shape[1], Hk = k0.shape[2], Dv = v0.shape[3];
    VIDAX_CHECK(Hk == H, "StableHLO lowering: attention with " << Hk << " key heads for " << H << " query heads");
    const double scale = r.attr_as<double>("scale");
    const bool causal = r.attr_as<bool>("causal");
    std::vector<int64_t> kv_lens;
    if (r.has_attr("kv_lens")) kv_lens = r.attr_as<std::vector<int64_t>>("kv_lens");
    const DType f = DType::F32;
    const V q = e_.transpose(wide(q0, f), {0, 2, 1, 3});  // [B, H, Lq, D]
    V k = e_.transpose(wide(k0, f), {0, 2, 1, 3});        // [B, H, Lk, D]
    V v = e_.transpose(wide(v0, f), {0, 2, 1, 3});        // [B, H, Lk, Dv]
    V bias;
    if (bias0) bias = wide(*bias0, f);

    int64_t blk = e_.opt().attention_block;
    if (blk <= 0) {
      const int64_t budget = int64_t(64) << 20;  // f32 scores per block: 256 MiB
      blk = std::max<int64_t>(128, budget / std::max<int64_t>(1, B * H * Lq) / 128 * 128);
    }
    // A key is visible when below its batch entry's kv_len (or Lk: padded keys of the last block
    // are not) and, causal, when j <= i. Nothing to mask: no select.
    auto visible = [&](const Shape& s, const V& key_index, bool padded) -> std::optional<V> {
      std::optional<V> ok;
      if (!kv_lens.empty()) {
        std::string lit = "dense<[";
        for (size_t i = 0; i < kv_lens.size(); ++i) lit += (i ? ", " : "") + std::to_string(kv_lens[i]);
        const V kl = e_.op("stablehlo.constant", {}, {B}, DType::I64, "value = " + lit + "]> : " + ttype({B}, DType::I64));
        ok = e_.compare(key_index, e_.broadcast(kl, s, {0}), "LT");
      } else if (padded) {
        ok = e_.compare(key_index, e_.full(static_cast<double>(Lk), s, DType::I64), "LT");
      }
      if (causal) {
        const V c = e_.compare(key_index, e_.iota(s, 2), "LE");
        ok = ok ? e_.op("stablehlo.and", {*ok, c}, s, DType::Bool) : c;
      }
      return ok;
    };
    auto scores = [&](const V& qq, const V& kk, const V* bb, const std::function<V()>& key_index, bool padded) {
      V s = e_.mul_s(e_.dot(qq, kk, {0, 1}, {0, 1}, {3}, {3}, f), scale);  // [B, H, Lq, n]
      if (bb) s = e_.add(s, e_.broadcast(*bb, s.shape, {0, 1, 2, 3}));
      if (kv_lens.empty() && !causal && !padded) return s;
      const std::optional<V> ok = visible(s.shape, key_index(), padded);
      return e_.select(*ok, s, e_.full(-INFINITY, s.shape, f));
    };
    const Shape row{B, H, Lq};
    const Shape acc_shape{B, H, Lq, Dv};
    V o;
    if (Lk <= blk) {
      const Shape ss{B, H, Lq, Lk};
      const V s = scores(q, k, bias0 ? &bias : nullptr, [&] { return e_.iota(ss, 3); }, false);
      const V m = e_.reduce(s, {3}, true);
      const V m_safe = e_.select(e_.compare(m, e_.full(-INFINITY, row, f), "EQ"), e_.full(0, row, f), m);
      const V p = e_.unary("exponential", e_.sub(s, e_.broadcast(m_safe, ss, {0, 1, 2})));
      const V l = e_.reduce(p, {3}, false);
      const V pv = e_.dot(p, v, {0, 1}, {0, 1}, {3}, {2}, f);
      o = finish(pv, l, acc_shape);
    } else {
      const int64_t nb = (Lk + blk - 1) / blk, Lp = nb * blk;
      k = e_.pad(k, {0, 0, 0, 0}, {0, 0, Lp - Lk, 0});
      v = e_.pad(v, {0, 0, 0, 0}, {0, 0, Lp - Lk, 0});
      if (bias0) {
        bias = e_.broadcast(bias, {B, H, Lq, Lk}, {0, 1, 2, 3});
        bias = e_.pad(bias, {0, 0, 0, 0}, {0, 0, 0, Lp - Lk});
      }
      o = blocked(q, k, v, bias0 ? &bias : nullptr, blk, nb, scores, acc_shape);
    }
    return out(r, e_.transpose(o, {0, 2, 1, 3}));
  }

  // acc / l where l > 0, else 0 (a row with no visible key outputs zeros, as the CPU kernel).
  V finish(const V& acc, const V& l, const Shape& acc_shape) {
    const Shape& row = l.shape;
    const V has = e_.compare(l, e_.full(0, row, DType::F32), "GT");
    const V l_safe = e_.select(has, l, e_.full(1, row, DType::F32));
    const V o = e_.div(acc, e_.broadcast(l_safe, acc_shape, {0, 1, 2}));
    return e_.select(e_.broadcast(has, acc_shape, {0, 1, 2}), o, e_.full(0, acc_shape, DType::F32));
  }

  template <class Scores>
  V blocked(const V& q, const V& k, const V& v, const V* bias, int64_t blk, int64_t nb, Scores& scores,
            const Shape& acc_shape) {
    const DType f = DType::F32;
    const int64_t B = q.shape[0], H = q.shape[1], Lq = q.shape[2], D = q.shape[3], Dv = v.shape[3];
    const Shape row{B, H, Lq};
    std::vector<V> init = {e_.scalar(0, DType::I64), e_.full(-INFINITY, row, f), e_.full(0, row, f),
                           e_.full(0, acc_shape, f), q, k, v};
    if (bias) init.push_back(*bias);
    auto types = [&](const std::vector<V>& vs) {
      std::string t;
      for (size_t i = 0; i < vs.size(); ++i) t += (i ? ", " : "") + ttype(vs[i].shape, vs[i].dtype);
      return t;
    };
    const std::string all_types = types(init);
    const std::string res = e_.fresh();
    std::ostringstream& b = e_.body;
    const std::string ind = e_.indent;
    b << ind << res << ":" << init.size() << " = \"stablehlo.while\"(";
    for (size_t i = 0; i < init.size(); ++i) b << (i ? ", " : "") << init[i].name;
    b << ") ({\n";
    // condition
    std::vector<V> ca;
    for (const V& x : init) ca.push_back({e_.fresh(), x.shape, x.dtype});
    b << ind << "^bb0(";
    for (size_t i = 0; i < ca.size(); ++i) b << (i ? ", " : "") << ca[i].name << ": " << ttype(ca[i].shape, ca[i].dtype);
    b << "):\n";
    e_.indent = ind + "  ";
    const V cond = e_.compare(ca[0], e_.scalar(static_cast<double>(nb), DType::I64), "LT");
    b << e_.indent << "\"stablehlo.return\"(" << cond.name << ") : (tensor<i1>) -> ()\n";
    e_.indent = ind;
    b << ind << "}, {\n";
    // body
    std::vector<V> ba;
    for (const V& x : init) ba.push_back({e_.fresh(), x.shape, x.dtype});
    b << ind << "^bb0(";
    for (size_t i = 0; i < ba.size(); ++i) b << (i ? ", " : "") << ba[i].name << ": " << ttype(ba[i].shape, ba[i].dtype);
    b << "):\n";
    e_.indent = ind + "  ";
    {
      const V& i = ba[0];
      const V start = e_.mul(i, e_.scalar(static_cast<double>(blk), DType::I64));
      const V zero = e_.scalar(0, DType::I64);
      const V kb = e_.op("stablehlo.dynamic_slice", {ba[5], zero, zero, start, zero}, {B, H, blk, D}, f,
                         "slice_sizes = " + i64_array({B, H, blk, D}));
      const V vb = e_.op("stablehlo.dynamic_slice", {ba[6], zero, zero, start, zero}, {B, H, blk, Dv}, f,
                         "slice_sizes = " + i64_array({B, H, blk, Dv}));
      V bb;
      if (bias)
        bb = e_.op("stablehlo.dynamic_slice", {ba[7], zero, zero, zero, start}, {B, H, Lq, blk}, f,
                   "slice_sizes = " + i64_array({B, H, Lq, blk}));
      const Shape ss{B, H, Lq, blk};
      const V s = scores(ba[4], kb, bias ? &bb : nullptr,
                         [&] { return e_.add(e_.iota(ss, 3), e_.broadcast(start, ss, {})); }, true);
      const V m_new = e_.binary("maximum", ba[1], e_.reduce(s, {3}, true));
      const V m_safe = e_.select(e_.compare(m_new, e_.full(-INFINITY, row, f), "EQ"), e_.full(0, row, f), m_new);
      const V p = e_.unary("exponential", e_.sub(s, e_.broadcast(m_safe, ss, {0, 1, 2})));
      const V alpha = e_.unary("exponential", e_.sub(ba[1], m_safe));
      const V l = e_.add(e_.mul(ba[2], alpha), e_.reduce(p, {3}, false));
      const V pv = e_.dot(p, vb, {0, 1}, {0, 1}, {3}, {2}, f);
      const V acc = e_.add(e_.mul(ba[3], e_.broadcast(alpha, acc_shape, {0, 1, 2})), pv);
      const V i1 = e_.add(i, e_.scalar(1, DType::I64));
      std::vector<V> next = {i1, m_new, l, acc, ba[4], ba[5], ba[6]};
      if (bias) next.push_back(ba[7]);
      b << e_.indent << "\"stablehlo.return\"(";
      for (size_t j = 0; j < next.size(); ++j) b << (j ? ", " : "") << next[j].name;
      b << ") : (" << types(next) << ") -> ()\n";
    }
    e_.indent = ind;
    b << ind << "}) : (" << all_types << ") -> (" << all_types << ")\n";
    const V l{res + "#2", row, f}, acc{res + "#3", acc_shape, f};
    return finish(acc, l, acc_shape);
  }

  void lower(const OpRecord& r) {
    const std::string& n = r.name;
    const DType cd = compute_dtype(r);
    V y;
    if (r.kind == OpKind::Constant) {
      const DType t = r.output.dtype;
      const DType lt = is_float(t) ? DType::F64 : (t == DType::Bool ? DType::Bool : DType::I64);
      std::string lit = "dense<[";
      for (size_t i = 0; i < r.values.size(); ++i) {
        if (i) lit += ", ";
        if (lt == DType::F64) lit += float_lit(r.values[i], lt);
        else if (lt == DType::Bool) lit += r.values[i] != 0 ? "true" : "false";
        else lit += std::to_string(static_cast<int64_t>(r.values[i]));
      }
      lit += "]>";
      const int64_t count = static_cast<int64_t>(r.values.size());
      const V c = e_.op("stablehlo.constant", {}, {count}, lt, "value = " + lit + " : " + ttype({count}, lt));
      values[r.id] = out(r, c);
      return;
    }
    if (r.kind == OpKind::View) {
      const V& x = in(r, 0);
      if (n == "view" || n == "reshape" || n == "unsqueeze" || n == "squeeze") y = e_.reshape(x, r.output.shape);
      else if (n == "permute") y = e_.transpose(x, r.attr_as<std::vector<int64_t>>("dims"));
      else if (n == "slice")
        y = e_.slice(x, r.attr_as<int64_t>("dim"), r.attr_as<int64_t>("start"), r.attr_as<int64_t>("end"),
                     r.attr_as<int64_t>("step"));
      else if (n == "select") {
        const int64_t d = r.attr_as<int64_t>("dim"), i = r.attr_as<int64_t>("index");
        y = e_.reshape(e_.slice(x, d, i, i + 1), r.output.shape);
      } else if (n == "contiguous" || n == "copy") y = x;
      else if (n == "cast") y = e_.convert(x, r.output.dtype);
      else throw Error(msg() << "StableHLO lowering: the view " << r.str() << " is not lowered");
      values[r.id] = out(r, y);
      return;
    }
    VIDAX_CHECK(r.kind == OpKind::Op, "StableHLO lowering: " << r.str() << ": a " << op_kind_name(r.kind)
                                                              << " record is not lowered (collectives: docs/pjrt.md)");
    if (n == "copy") y = in(r, 0);
    else if (n == "cast") y = in(r, 0);
    else if (n == "concat") {
      std::vector<V> xs;
      for (size_t i = 0; i < r.input_ids.size(); ++i) xs.push_back(e_.convert(in(r, i), r.output.dtype));
      y = e_.concat(xs, r.attr_as<int64_t>("dim"));
    } else if (n == "pad") {
      const auto& pads = r.attr_as<std::vector<int64_t>>("pads");
      const V& x = in(r, 0);
      std::vector<int64_t> lo(x.rank(), 0), hi(x.rank(), 0);
      for (size_t i = 0; i + 1 < pads.size(); i += 2) {
        const int64_t d = x.rank() - 1 - static_cast<int64_t>(i / 2);
        lo[d] = pads[i], hi[d] = pads[i + 1];
      }
      if (r.attr_as<std::string>("mode") == "zero") {
        y = e_.pad(x, lo, hi);
      } else {  // replicate: the edge slices broadcast and concatenated, dim by dim
        y = x;
        for (int64_t d = 0; d < x.rank(); ++d) {
          if (!lo[d] && !hi[d]) continue;
          std::vector<V> parts;
          Shape s = y.shape;
          if (lo[d]) {
            s[d] = lo[d];
            std::vector<int64_t> dims(y.rank());
            for (int64_t i = 0; i < y.rank(); ++i) dims[i] = i;
            parts.push_back(e_.broadcast(e_.slice(y, d, 0, 1), s, dims));
          }
          parts.push_back(y);
          if (hi[d]) {
            s[d] = hi[d];
            std::vector<int64_t> dims(y.rank());
            for (int64_t i = 0; i < y.rank(); ++i) dims[i] = i;
            parts.push_back(e_.broadcast(e_.slice(y, d, y.shape[d] - 1, y.shape[d]), s, dims));
          }
          y = e_.concat(parts, d);
        }
      }
    } else if (n == "add") y = bin(r, "add");
    else if (n == "sub") y = bin(r, "subtract");
    else if (n == "mul") y = bin(r, "multiply");
    else if (n == "div") y = bin(r, "divide");
    else if (n == "scale") y = e_.mul_s(wide(in(r, 0), cd), r.attr_as<double>("alpha"));
    else if (n == "add_scalar") y = e_.add_s(wide(in(r, 0), cd), r.attr_as<double>("alpha"));
    else if (n == "axpby") {
      const V x = e_.mul_s(wide(need(r, "x"), cd), r.attr_as<double>("a"));
      const V yy = e_.mul_s(wide(need(r, "y"), cd), r.attr_as<double>("b"));
      y = e_.add(x, e_.broadcast_to(yy, x.shape));
    } else if (n == "clamp") {
      const V x = wide(in(r, 0), cd);
      y = e_.binary("maximum", e_.binary("minimum", x, e_.full(r.attr_as<double>("hi"), x.shape, cd)),
                    e_.full(r.attr_as<double>("lo"), x.shape, cd));
    } else if (n == "gelu") y = gelu(wide(in(r, 0), cd), r.attr_as<std::string>("mode"));
    else if (n == "silu") y = silu(wide(in(r, 0), cd));
    else if (n == "sigmoid") y = e_.unary("logistic", wide(in(r, 0), cd));
    else if (n == "tanh") y = e_.unary("tanh", wide(in(r, 0), cd));
    else if (n == "relu") {
      const V x = wide(in(r, 0), cd);
      y = e_.binary("maximum", x, e_.full(0, x.shape, cd));
    } else if (n == "modulate") {
      const V x = wide(need(r, "x"), cd);
      const V sh = e_.broadcast_to(wide(need(r, "shift"), cd), x.shape);
      const V sc = e_.broadcast_to(wide(need(r, "scale"), cd), x.shape);
      y = e_.add(e_.mul(x, e_.add_s(sc, 1.0)), sh);
    } else if (n == "gated_residual") {
      const V x = wide(need(r, "x"), cd);
      const V g = e_.broadcast_to(wide(need(r, "gate"), cd), x.shape);
      const V yy = e_.broadcast_to(wide(need(r, "y"), cd), x.shape);
      y = e_.add(x, e_.mul(g, yy));
    } else if (n == "layer_norm") {
      const V x = wide(need(r, "x"), cd);
      y = layer_norm(x, r.attr_as<double>("eps"));
      if (const V* w = named(r, "weight")) y = e_.mul(y, e_.broadcast_to(wide(*w, cd), x.shape));
      if (const V* b = named(r, "bias")) y = e_.add(y, e_.broadcast_to(wide(*b, cd), x.shape));
    } else if (n == "layer_norm_modulate") {
      const V x = wide(need(r, "x"), cd);
      const V ln = layer_norm(x, r.attr_as<double>("eps"));
      const V sh = e_.broadcast_to(wide(need(r, "shift"), cd), x.shape);
      const V sc = e_.broadcast_to(wide(need(r, "scale"), cd), x.shape);
      y = e_.add(e_.mul(ln, e_.add_s(sc, 1.0)), sh);
    } else if (n == "rms_norm" || n == "rms_norm_with_sum_sq") {
      const V x = wide(need(r, "x"), cd);
      double count;
      V ss;
      if (n == "rms_norm") {
        ss = e_.reduce_last_keep(e_.mul(x, x), false);
        count = static_cast<double>(x.shape.back());
      } else {
        ss = e_.reshape(wide(need(r, "sum_sq"), cd), [&] { Shape s = x.shape; s.back() = 1; return s; }());
        count = static_cast<double>(r.attr_as<int64_t>("count"));
      }
      y = rms(x, ss, count, r.attr_as<double>("eps"));
      if (const V* w = named(r, "weight")) y = e_.mul(y, e_.broadcast_to(wide(*w, cd), x.shape));
    } else if (n == "softmax") {
      const V x = wide(in(r, 0), cd);
      int64_t d = r.attr_as<int64_t>("dim");
      if (d < 0) d += x.rank();
      std::vector<int64_t> keep;
      for (int64_t i = 0; i < x.rank(); ++i)
        if (i != d) keep.push_back(i);
      const V m = e_.broadcast(e_.reduce(x, {d}, true), x.shape, keep);
      const V p = e_.unary("exponential", e_.sub(x, m));
      y = e_.div(p, e_.broadcast(e_.reduce(p, {d}, false), x.shape, keep));
    } else if (n == "sum" || n == "mean") {
      const V x = wide(in(r, 0), cd);
      int64_t d = r.attr_as<int64_t>("dim");
      if (d < 0) d += x.rank();
      y = e_.reduce(x, {d}, false);
      if (n == "mean") y = e_.mul_s(y, 1.0 / static_cast<double>(x.shape[d]));
    } else if (n == "linear") y = linear(r);
    else if (n == "linear_gelu") {
      const V lin = e_.convert(e_.convert(linear(r), need(r, "x").dtype), cd);
      y = gelu(lin, r.attr_as<std::string>("mode"));
    } else if (n == "linear_gated_residual") {
      const V lin = e_.convert(e_.convert(linear(r), need(r, "x").dtype), cd);
      const V res = wide(need(r, "residual"), cd);
      y = e_.add(res, e_.mul(e_.broadcast_to(wide(need(r, "gate"), cd), lin.shape), lin));
    } else if (n == "matmul") {
      const V& a0 = in(r, 0);
      const V& b0 = in(r, 1);
      const Shape& os = r.output.shape;
      const int64_t nb = static_cast<int64_t>(os.size()) - 2, M = a0.shape[a0.rank() - 2],
                    K = a0.shape[a0.rank() - 1], N = b0.shape[b0.rank() - 1];
      Shape batch(os.begin(), os.begin() + nb);
      const int64_t bt = shape_numel(batch);
      auto bcast = [&](const V& x, int64_t rows, int64_t cols) {
        Shape full = batch;
        full.push_back(rows), full.push_back(cols);
        return e_.reshape(e_.broadcast_to(wide(x, DType::F32), full), {bt, rows, cols});
      };
      const DType acc = cd == DType::F64 ? DType::F64 : DType::F32;
      y = e_.dot(bcast(a0, M, K), bcast(b0, K, N), {0}, {0}, {2}, {1}, acc);
    } else if (n == "attention") y = attention(r);
    else if (n == "rope") y = rope(r);
    else
      throw Error(msg() << "StableHLO lowering: op '" << n << "' is not lowered yet (" << r.str()
                        << "); lowered: see docs/pjrt.md");
    values[r.id] = out(r, y);
  }

 private:
  const Trace& trace_;
  Emitter& e_;
};

const std::set<std::string>& lowered_set() {
  static const std::set<std::string> s = {
      "copy", "cast", "concat", "pad", "add", "sub", "mul", "div", "scale", "add_scalar", "axpby", "clamp",
      "gelu", "silu", "sigmoid", "tanh", "relu", "modulate", "gated_residual", "layer_norm",
      "layer_norm_modulate", "rms_norm", "rms_norm_with_sum_sq", "softmax", "sum", "mean", "linear",
      "linear_gelu", "linear_gated_residual", "matmul", "attention", "rope"};
  return s;
}

}  // namespace

std::vector<std::string> lowered_op_names() {
  return {lowered_set().begin(), lowered_set().end()};
}

Lowered lower_to_stablehlo(const Trace& trace, const std::vector<int64_t>& outputs, const LowerOptions& opt) {
  const int64_t n = static_cast<int64_t>(trace.ops.size());
  VIDAX_CHECK(!outputs.empty(), "StableHLO lowering: no outputs");
  // The records the outputs depend on.
  std::vector<bool> live(static_cast<size_t>(n), false);
  for (int64_t o : outputs) {
    VIDAX_CHECK(o >= 0 && o < n, "StableHLO lowering: output %" << o << " is not a value of the trace (" << n
                                                                 << " records)");
    live[o] = true;
  }
  for (int64_t i = n - 1; i >= 0; --i)
    if (live[i])
      for (int64_t d : trace.ops[i].input_ids) live[d] = true;

  Lowered L;
  Emitter e(opt);
  Lowering low(trace, e);
  for (int64_t i = 0; i < n; ++i) {
    if (!live[i]) continue;
    const OpRecord& r = trace.ops[i];
    if (r.kind == OpKind::Input || r.kind == OpKind::Param) {
      const std::string name = "%arg" + std::to_string(L.args.size());
      low.values[r.id] = V{name, r.output.shape, r.output.dtype};
      L.args.push_back(r.id);
      L.arg_descs.push_back(r.output);
      continue;
    }
    low.lower(r);
    if (r.kind == OpKind::Op) L.ops.push_back(r.name);
  }
  std::ostringstream m;
  m << "module @vidax {\n  func.func public @main(";
  for (size_t i = 0; i < L.args.size(); ++i)
    m << (i ? ", " : "") << "%arg" << i << ": " << ttype(L.arg_descs[i].shape, L.arg_descs[i].dtype);
  m << ") -> (";
  std::string ret_types;
  for (size_t i = 0; i < outputs.size(); ++i) {
    const OpRecord& r = trace.ops[outputs[i]];
    ret_types += (i ? ", " : "") + ttype(r.output.shape, r.output.dtype);
    L.outputs.push_back(outputs[i]);
    L.out_descs.push_back(r.output);
  }
  m << ret_types << ") {\n" << e.body.str() << "    \"func.return\"(";
  for (size_t i = 0; i < outputs.size(); ++i) m << (i ? ", " : "") << low.values.at(outputs[i]).name;
  m << ") : (" << ret_types << ") -> ()\n  }\n}\n";
  L.mlir = m.str();
  return L;
}

}  // namespace vidax::pjrt
