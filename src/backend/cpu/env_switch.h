// A speed switch read from the environment once (for A/B timing without a
// rebuild), which tests may override: the value is one of a fixed list of
// names, the first being the default when the variable is unset or empty;
// anything else is refused with an Error when first read.
#pragma once
#include <atomic>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "core/error.h"

namespace vidax::cpu {

// E's enumerators are 0, 1, ... in the order of `names`.
template <class E>
class EnvSwitch {
 public:
  EnvSwitch(const char* variable, std::initializer_list<const char*> names) : variable_(variable), names_(names) {}

  E get() {
    int v = value_.load();
    if (v < 0) {
      v = read();
      value_.store(v);
    }
    return static_cast<E>(v);
  }
  void set(E e) { value_.store(static_cast<int>(e)); }

 private:
  int read() const {
    const char* v = std::getenv(variable_);
    if (v == nullptr || *v == '\0') return 0;
    int i = 0;
    std::string expected;
    for (const char* name : names_) {
      if (std::strcmp(v, name) == 0) return i;
      expected += (i == 0 ? "" : i + 1 == static_cast<int>(names_.size()) ? " or " : ", ") + std::string(name);
      ++i;
    }
    throw Error(msg() << variable_ << "='" << v << "': expected " << expected);
  }

  const char* variable_;
  std::vector<const char*> names_;  // string literals
  std::atomic<int> value_{-1};                // -1: not read from the environment yet
};

}  // namespace vidax::cpu
