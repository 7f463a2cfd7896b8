#include "translate/keymap.h"

#include "core/error.h"

namespace vidax::translate {

const char* transform_name(Transform t) {
  switch (t) {
    case Transform::Identity: return "identity";
    case Transform::Transpose: return "transpose";
    case Transform::Reshape: return "reshape";
    case Transform::Concat: return "concat";
    case Transform::Split: return "split";
    case Transform::SwapHalves: return "swap-halves";
  }
  return "?";
}

static std::vector<std::string> split_dots(const std::string& s) {
  std::vector<std::string> out;
  size_t start = 0;
  for (;;) {
    size_t dot = s.find('.', start);
    out.push_back(s.substr(start, dot == std::string::npos ? std::string::npos : dot - start));
    if (dot == std::string::npos) break;
    start = dot + 1;
  }
  return out;
}

static bool is_capture(const std::string& seg) { return seg.size() >= 3 && seg.front() == '{' && seg.back() == '}'; }

// Segment-wise match with backtracking over multi-segment captures.
static bool match_from(const std::vector<std::string>& pat, size_t pi, const std::vector<std::string>& nm, size_t ni,
                       std::map<std::string, std::string>& caps) {
  if (pi == pat.size()) return ni == nm.size();
  if (ni == nm.size()) return false;
  const std::string& seg = pat[pi];
  if (!is_capture(seg)) return seg == nm[ni] && match_from(pat, pi + 1, nm, ni + 1, caps);
  std::string var = seg.substr(1, seg.size() - 2);
  bool multi = var.back() == '*';
  if (multi) var.pop_back();
  size_t max_len = multi ? nm.size() - ni : 1;
  for (size_t len = 1; len <= max_len; ++len) {
    std::string val = nm[ni];
    for (size_t k = 1; k < len; ++k) val += "." + nm[ni + k];
    auto it = caps.find(var);
    if (it != caps.end() && it->second != val) continue;  // a capture used twice must agree
    bool fresh = it == caps.end();
    if (fresh) caps[var] = val;
    if (match_from(pat, pi + 1, nm, ni + len, caps)) return true;
    if (fresh) caps.erase(var);
  }
  return false;
}

bool match_pattern(const std::string& pattern, const std::string& name, std::map<std::string, std::string>* caps) {
  std::map<std::string, std::string> local;
  bool ok = match_from(split_dots(pattern), 0, split_dots(name), 0, local);
  if (ok && caps) *caps = std::move(local);
  return ok;
}

std::string substitute(const std::string& pattern, const std::map<std::string, std::string>& caps) {
  std::string out;
  for (const auto& seg : split_dots(pattern)) {
    if (!out.empty()) out += '.';
    if (!is_capture(seg)) {
      out += seg;
      continue;
    }
    std::string var = seg.substr(1, seg.size() - 2);
    if (var.back() == '*') var.pop_back();
    auto it = caps.find(var);
    VIDAX_CHECK(it != caps.end(), "key map pattern '" << pattern << "' uses capture {" << var
                                   << "} that its engine pattern does not define");
    out += it->second;
  }
  return out;
}

std::optional<ResolvedRule> resolve(const KeyMap& map, const std::string& name) {
  for (const auto& r : map.rules) {
    std::map<std::string, std::string> caps;
    if (!match_pattern(r.engine, name, &caps)) continue;
    ResolvedRule out{&r, {}};
    for (const auto& k : r.keys) out.keys.push_back(substitute(k, caps));
    return out;
  }
  return std::nullopt;
}

Rule key_rule(std::string engine, std::string key) {
  Rule r;
  r.engine = std::move(engine);
  r.keys = {std::move(key)};
  return r;
}

Rule alias_rule(std::string engine, std::vector<std::string> keys) {
  Rule r;
  r.engine = std::move(engine);
  r.keys = std::move(keys);
  return r;
}

KeyMap with_key_prefix(KeyMap map, const std::string& prefix, const std::string& layout) {
  map.layout = layout;
  for (auto& r : map.rules)
    for (auto& k : r.keys) k = prefix + k;
  return map;
}

}  // namespace vidax::translate
