#include "translate/translate.h"

#include <algorithm>
#include <set>
#include <sstream>

namespace vidax::translate {

int64_t ParamSpec::parameter_count() const {
  int64_t n = 0;
  for (const auto& p : params) n += shape_numel(p.shape);
  return n;
}

const ParamInfo* ParamSpec::find(const std::string& name) const {
  for (const auto& p : params)
    if (p.name == name) return &p;
  return nullptr;
}

std::string Plan::problems() const {
  std::ostringstream o;
  if (!unused_keys.empty()) {
    o << unused_keys.size() << " checkpoint key(s) not used by any parameter:\n";
    for (const auto& k : unused_keys) o << "  unused: " << k << "\n";
  }
  if (!missing.empty()) {
    o << missing.size() << " parameter(s) not found in the checkpoint:\n";
    for (const auto& m : missing) {
      o << "  missing: " << m.param.name << " " << shape_str(m.param.shape);
      if (m.looked_for.empty()) {
        o << " (no rule of layout '" << layout << "' names it)";
      } else {
        o << " (looked for";
        for (const auto& k : m.looked_for) o << " '" << k << "'";
        o << ")";
      }
      o << "\n";
    }
  }
  if (!mismatches.empty()) {
    o << mismatches.size() << " shape mismatch(es):\n";
    for (const auto& m : mismatches)
      o << "  mismatch: " << m.param.name << " expects " << shape_str(m.param.shape) << ", key '" << m.key
        << "' has " << shape_str(m.found) << (m.why.empty() ? "" : " (" + m.why + ")") << "\n";
  }
  return o.str();
}

// The stored shape after the rule's transform, for comparison with the engine shape.
static bool transformed_shape(const Rule& r, const Shape& stored, Shape* out) {
  *out = stored;
  if (r.transform == Transform::Transpose) {
    int n = static_cast<int>(stored.size());
    if (r.dim >= n || r.dim2 >= n) return false;
    std::swap((*out)[r.dim], (*out)[r.dim2]);
  }
  return true;
}

Plan plan(const TensorSource& src, const ParamSpec& spec, const KeyMap& map) {
  Plan p;
  p.layout = map.layout;
  std::set<std::string> consumed;
  for (const auto& param : spec.params) {
    auto rr = resolve(map, param.name);
    if (!rr) {
      p.missing.push_back({param, {}});
      continue;
    }
    const Rule& r = *rr->rule;
    Binding b{param, r.transform, {}, r};
    if (r.transform == Transform::Concat) {
      // Every part must be there; shapes agree except along dim, whose sizes add up.
      std::vector<std::string> absent;
      int64_t total = 0;
      bool ok = true;
      for (const auto& k : rr->keys) {
        const TensorInfo* ti = src.find(k);
        if (!ti) {
          absent.push_back(k);
          continue;
        }
        consumed.insert(k);
        Shape s = ti->shape;
        if (s.size() != param.shape.size() || r.dim >= static_cast<int>(s.size())) {
          p.mismatches.push_back({param, k, s, "rank differs from the fused parameter"});
          ok = false;
          continue;
        }
        total += s[r.dim];
        s[r.dim] = param.shape[r.dim];
        if (s != param.shape) {
          p.mismatches.push_back({param, k, ti->shape, "concat part: dims other than " + std::to_string(r.dim) +
                                                           " must match"});
          ok = false;
        }
      }
      if (!absent.empty()) {
        p.missing.push_back({param, absent});
        continue;
      }
      if (ok && total != param.shape[r.dim]) {
        p.mismatches.push_back({param, rr->keys.front(), src.find(rr->keys.front())->shape,
                                "concat parts add up to " + std::to_string(total) + " along dim " +
                                    std::to_string(r.dim)});
        ok = false;
      }
      if (ok) {
        b.keys = rr->keys;
        p.bound.push_back(b);
      }
      continue;
    }
    // Alternatives: the first present key is the source; any other present
    // alias (a tied duplicate) is consumed too and must have the same shape.
    const TensorInfo* first = nullptr;
    for (const auto& k : rr->keys) {
      const TensorInfo* ti = src.find(k);
      if (!ti) continue;
      consumed.insert(k);
      if (!first) {
        first = ti;
      } else if (ti->shape != first->shape) {
        p.mismatches.push_back({param, k, ti->shape, "tied alias of '" + first->name + "' " +
                                                         shape_str(first->shape) + " differs"});
      }
    }
    if (!first) {
      p.missing.push_back({param, rr->keys});
      continue;
    }
    Shape got;
    bool ok = true;
    std::string why = "shape";
    switch (r.transform) {
      case Transform::Identity:
        ok = first->shape == param.shape;
        break;
      case Transform::Transpose:
        ok = transformed_shape(r, first->shape, &got) && got == param.shape;
        why = "after transpose(" + std::to_string(r.dim) + "," + std::to_string(r.dim2) + ")";
        break;
      case Transform::Reshape:
        ok = shape_numel(first->shape) == shape_numel(param.shape);
        why = "reshape needs the same element count";
        break;
      case Transform::Split: {
        Shape s = first->shape;
        ok = r.dim < static_cast<int>(s.size()) && s.size() == param.shape.size() && r.parts > 0 &&
             s[r.dim] == param.shape[r.dim] * r.parts;
        if (ok) {
          s[r.dim] = param.shape[r.dim];
          ok = s == param.shape;
        }
        why = "split into " + std::to_string(r.parts) + " along dim " + std::to_string(r.dim);
        break;
      }
      case Transform::SwapHalves:
        ok = first->shape == param.shape && r.dim < static_cast<int>(param.shape.size()) &&
             param.shape[r.dim] % 2 == 0;
        why = "swap of two equal halves along dim " + std::to_string(r.dim);
        break;
      case Transform::Concat:
        break;
    }
    if (!ok) {
      p.mismatches.push_back({param, first->name, first->shape, why});
      continue;
    }
    b.keys = {first->name};
    p.bound.push_back(b);
  }
  for (const auto& n : src.names()) {
    if (consumed.count(n)) continue;
    const bool ignored = std::any_of(map.ignored.begin(), map.ignored.end(), [&](const std::string& pat) {
      std::map<std::string, std::string> caps;
      return match_pattern(pat, n, &caps);
    });
    (ignored ? p.ignored_keys : p.unused_keys).push_back(n);
  }
  p.consumed_keys = consumed.size();
  return p;
}

void check(const Plan& p, const TranslateOptions& opts, const std::string& what) {
  bool bad = !p.mismatches.empty() || (!p.unused_keys.empty() && !opts.allow_unused) ||
             (!p.missing.empty() && !opts.allow_missing);
  if (!bad) return;
  Plan shown = p;  // report only what the options do not allow
  if (opts.allow_unused) shown.unused_keys.clear();
  if (opts.allow_missing) shown.missing.clear();
  throw Error(msg() << what << " (layout '" << p.layout << "') does not match the engine's parameters:\n"
                    << shown.problems());
}

std::map<std::string, Tensor> materialize(const TensorSource& src, const Plan& p, const TranslateOptions& opts) {
  check(p, opts, src.label());
  std::map<std::string, Tensor> out;
  for (const auto& b : p.bound) {
    const Rule& r = b.rule;
    // A block-quantized tensor (GGUF) passes through an identity rename as it is (a Linear
    // computes on it); the other transforms move elements, so they read its values in f32.
    auto get = [&](const std::string& key) {
      Tensor v = src.get(key);
      return v.is_weight_only_quantized() && b.transform != Transform::Identity ? v.to(DType::F32) : v;
    };
    Tensor t;
    switch (b.transform) {
      case Transform::Identity:
        t = src.get(b.keys[0]);
        break;
      case Transform::Transpose:
        t = get(b.keys[0]).transpose(r.dim, r.dim2).contiguous();
        break;
      case Transform::Reshape:
        t = get(b.keys[0]).reshape(b.param.shape);
        break;
      case Transform::Split: {
        Tensor whole = get(b.keys[0]);
        int64_t n = b.param.shape[r.dim];
        t = whole.slice(r.dim, r.part * n, (r.part + 1) * n).contiguous();
        break;
      }
      case Transform::SwapHalves: {
        const Tensor whole = get(b.keys[0]);
        const int64_t half = whole.shape()[r.dim] / 2;
        t = Tensor::empty(b.param.shape, whole.dtype());
        Tensor lo = t.slice(r.dim, 0, half), hi = t.slice(r.dim, half, 2 * half);
        copy_into(whole.slice(r.dim, half, 2 * half), lo);
        copy_into(whole.slice(r.dim, 0, half), hi);
        break;
      }
      case Transform::Concat: {
        std::vector<Tensor> parts;
        for (const auto& k : b.keys) parts.push_back(get(k));
        DType dt = parts[0].dtype();
        for (size_t i = 1; i < parts.size(); ++i)
          VIDAX_CHECK(parts[i].dtype() == dt, "fusing '" << b.param.name << "': '" << b.keys[i] << "' is "
                                              << dtype_name(parts[i].dtype()) << " but '" << b.keys[0]
                                              << "' is " << dtype_name(dt));
        t = Tensor::empty(b.param.shape, dt);
        int64_t at = 0;
        for (const auto& part : parts) {
          int64_t n = part.shape()[r.dim];
          Tensor dst = t.slice(r.dim, at, at + n);
          copy_into(part, dst);
          at += n;
        }
        break;
      }
    }
    VIDAX_CHECK(t.shape() == b.param.shape, "internal: '" << b.param.name << "' translated to "
                                            << shape_str(t.shape()) << ", expected " << shape_str(b.param.shape));
    if (opts.cast && dtype_is_float(t.dtype())) t = t.to(*opts.cast);
    out.emplace(b.param.name, std::move(t));
  }
  return out;
}

}  // namespace vidax::translate
